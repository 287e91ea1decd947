# Quoting: single, double, $'...', backslashes, nesting, concatenation.

#### single-quotes-are-literal
echo 'a $b `c` \d "e"'

#### double-quotes-expand-vars
x=world
echo "hello $x"

#### double-quotes-keep-spaces
x='a   b'
echo "$x"
echo $x

#### backslash-in-double-quotes
echo "a\$b \"q\" \\ \x"

#### backslash-outside-quotes
echo a\ b \$x \\ \'

#### dollar-single-quote-escapes
echo $'tab:\t|nl:\n|bs:\\|q:\''

#### dollar-single-quote-hex-octal
echo $'\x41\102\u00e9'

#### dollar-single-quote-control
printf '%s' $'a\cAb' | od -An -c

#### empty-string-args
set -- '' "" x
echo $#

#### adjacent-quoting-concatenates
echo 'a'"b"c'd'

#### quote-in-other-quote
echo "it's" 'say "hi"'

#### escaped-newline-continues
echo one \
  two

#### single-quote-in-single-quote
echo 'it'\''s'

#### dollar-at-end-is-literal
echo "cost: 5$"
echo $

#### quoted-glob-not-expanded
touch a.txt b.txt
echo "*.txt"
echo '*.txt'
echo \*.txt

#### quoted-tilde-not-expanded
echo "~" '~' \~

#### tilde-expands-home
[ ~ = "$HOME" ] && echo same

#### tilde-after-colon-in-assignment
x=a:~/b
[ "$x" = "a:$HOME/b" ] && echo expanded

#### command-subst-in-double-quotes
echo "now: $(echo a   b)"

#### backquote-command-subst
echo `echo hi`
echo "`echo a\`echo b\``"

#### nested-quotes-in-command-subst
echo "$(echo "inner $(echo 'deep')")"

#### double-quoted-dollar-at
set -- a 'b c' d
for x in "$@"; do echo "[$x]"; done

#### double-quoted-dollar-star
set -- a 'b c' d
for x in "$*"; do echo "[$x]"; done

#### dollar-star-with-ifs
set -- a b c
IFS=,
echo "$*"

#### dollar-star-empty-ifs
set -- a b c
IFS=
echo "$*"

#### quoted-empty-var-is-arg
e=
set -- "$e"
echo $#

#### unquoted-empty-var-vanishes
e=
set -- $e
echo $#

#### special-chars-in-single-quotes
echo '|&;<>()$`\"'

#### hash-is-comment-only-at-word-start
echo a#b # comment
echo '#' "#"x

#### quoted-semicolon
echo 'a;b' "c;d" e\;f

#### quoted-keyword-is-not-keyword
'if' 2>/dev/null
echo $?

#### dollar-double-quote-locale
echo $"plain"

#### escape-in-heredoc-like-echo
x='a\nb'
echo "$x"

#### printf-with-quoted-percent
printf '100%%\n'

#### nested-single-in-double
x=val
echo "'$x'"

#### backslash-before-newline-in-single-quotes
echo 'a\
b'

#### unicode-passthrough
echo "héllo wörld ✓"

#### long-quoted-arg-count
set -- "a b" 'c d' e\ f
echo $#
echo "$2"

#### quotes-around-assignment-value
x="a b"; y='c d'; z=e\ f
echo "$x|$y|$z"

#### assignment-no-split
v="1 2 3"
w=$v
echo "$w"

#### case-pattern-quoted
x='*'
case a in "$x") echo literal;; *) echo glob;; esac

#### ansi-c-in-assignment
nl=$'\n'
echo "a${nl}b"

#### escaped-dollar-in-command-subst
echo $(echo \$HOME)
