# case, shift, getopts, set, shopt, export, unset, trap and other builtins.

#### case-basic
x=b
case $x in a) echo A;; b) echo B;; *) echo other;; esac

#### case-multiple-patterns
case yes in y|yes) echo affirmative;; esac

#### case-fallthrough
case a in a) echo one;& b) echo two;; c) echo three;; esac

#### case-continue-matching
case ab in a*) echo first;;& *b) echo second;; esac

#### case-char-class
case 5 in [0-9]) echo digit;; esac

#### case-empty-word
case "" in "") echo empty;; *) echo nonempty;; esac

#### case-parens-pattern
case x in (x) echo paren-form;; esac

#### case-no-match-no-output
case z in a) echo a;; esac
echo "st=$?"

#### case-last-without-dsemi
case q in q) echo last
esac

#### shift-n
set -- a b c d
shift 2
echo "$@"

#### shift-too-many
set -- a
shift 3
echo "st=$? $#"

#### getopts-basic
set -- -a -b val rest
while getopts 'ab:' opt; do
  case $opt in
    a) echo "flag a";;
    b) echo "b=$OPTARG";;
  esac
done
shift $((OPTIND-1))
echo "rest: $@"

#### getopts-unknown
set -- -z
getopts 'a' opt 2>/dev/null
echo "$opt $?"

#### getopts-silent-mode
set -- -z -b
while getopts ':ab:' opt; do echo "opt=$opt arg=${OPTARG-}"; done

#### getopts-combined-flags
set -- -ab
while getopts 'ab' o; do echo $o; done

#### set-positional
set -- x 'y z'
echo $# "$2"

#### set-dash-x-trace
set -x
echo traced 2>/dev/null
set +x

#### shopt-query
shopt -q extglob && echo on || echo off

#### export-and-env
export FOO=bar
env | grep '^FOO='

#### export-n
export V=1
export -n V
bash -c 'echo "[${V-unset}]"'

#### unset-variable
x=1
unset x
echo "[${x-unset}]"

#### unset-v-vs-f
x=1
x() { echo func; }
unset x
echo "[${x-unset}]"
x

#### readonly-unset-fails
readonly R=1
unset R 2>/dev/null
echo "st=$? $R"

#### trap-exit-in-subshell
( trap 'echo bye' EXIT; exit 0 )

#### trap-reset
trap 'echo no' EXIT
trap - EXIT
echo done

#### trap-list
trap 'echo x' EXIT
trap -p EXIT

#### true-false-with-args
true ignored args; echo $?
false ignored; echo $?

#### pwd-after-cd
mkdir -p a/b
cd a/b
pwd
cd ..
pwd

#### cd-dash
mkdir d
cd d
cd - >/dev/null
pwd

#### cd-nonexistent
cd /nonexistent 2>/dev/null
echo "st=$?"

#### cd-home
mkdir x
cd x
cd
pwd

#### oldpwd
mkdir d
cd d
[ "$OLDPWD" = "$HOME" ] && echo oldpwd-ok

#### type-keyword-builtin
type -t if
type -t echo
type -t cd

#### hash-builtin
hash 2>/dev/null
echo "st=$?"

#### let-increment
i=1
let i++
let 'i += 5'
echo $i

#### declare-x-exported
declare -x DX=1
bash -c 'echo $DX'

#### declare-r
declare -r CONST=5
CONST=6 2>/dev/null
echo $CONST

#### local-outside-function
local x=1 2>/dev/null
echo "st=$?"

#### printf-builtin-vs-echo-e
printf '%s\n' '-e'

#### set-u-dollar-hash
set -u
echo $#

#### shopt-s-and-u
shopt -s nullglob
shopt -u nullglob
echo *.none

#### exit-status-of-export
export X=1
echo $?

#### command-v-builtin
command -v cd

#### builtin-cd
mkdir q
builtin cd q
pwd

#### caller-not-in-function
f() { caller 0 >/dev/null && echo has-caller; }
f

#### umask-query
umask 022
umask

#### ulimit-noop
ulimit -n >/dev/null
echo "st=$?"

#### times-builtin
times >/dev/null
echo "st=$?"

#### enable-or-help-builtin
help cd >/dev/null 2>&1
echo "st=$?"

#### sleep-zero
sleep 0
echo "slept $?"

#### set-o-pipefail-query
set -o pipefail
set -o | grep pipefail | tr -s ' \t' ' '

#### random-is-number
r=$RANDOM
[[ $r =~ ^[0-9]+$ ]] && echo numeric

#### seconds-is-number
[[ $SECONDS =~ ^[0-9]+$ ]] && echo seconds

#### lineno
echo $LINENO
echo $LINENO

#### bash-version-set
[ -n "$BASH_VERSION" ] && echo has-version
