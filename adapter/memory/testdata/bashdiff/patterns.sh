# Patterns in parameter expansion (${v#pat}, ${v%pat}, ${v/pat/rep}), in [[ == ]] and in case:
# quoted parts are literal, the # and % anchors of ${v/...}, bracket expressions with ] and ^,
# character classes and the extended patterns of extglob (bash manual: "Pattern Matching",
# "Shell Parameter Expansion", "Conditional Constructs").

#### prefix-quoted-star-literal
v='*abc'
echo "${v#"*"}" "${v#*}"

#### suffix-quoted-question-literal
v='abc?'
echo "${v%"?"}" "${v%?}"

#### prefix-var-unquoted-is-pattern
p='a*'
v=aXbXc
echo "${v#$p}" "${v##$p}"

#### prefix-var-quoted-is-literal
p='a*'
v='a*bc'
echo "${v#"$p"}"
v=aXbc
echo "${v#"$p"}"

#### replace-quoted-bracket-literal
v='x[ab]y'
echo "${v/"[ab]"/Z}" "${v/[ab]/Z}"

#### replace-mixed-quoted-and-glob
v='a.b.c.txt'
echo "${v/*"."/X}" "${v//"."/_}"

#### replace-anchor-start
v=abcabc
echo "${v/#abc/X}" "${v/#bc/X}"

#### replace-anchor-end
v=abcabc
echo "${v/%abc/X}" "${v/%ab/X}"

#### replace-anchor-start-pattern
v=foo.bar.baz
echo "${v/#*./X}" "${v/%.*/X}"

#### replace-anchor-empty-pattern
v=abc
echo "${v/#/>}" "${v/%/<}"

#### replace-all-on-array
a=(one two three)
echo "${a[@]/#t/T}" "${a[@]/%e/E}"

#### replace-all-empty-result
v=aaaa
echo "[${v//a/}]"

#### bracket-close-first-in-class
v='a]b'
echo "${v/[]]/X}"

#### bracket-negated-close
v=']]x]'
echo "${v/[^]]/Y}"

#### bracket-negated-bang
v='abc1'
echo "${v//[!a-c]/_}"

#### bracket-caret-literal-not-first
v='a^b'
echo "${v//[b^]/_}"

#### bracket-dash-literal-edges
v='a-b'
echo "${v//[-b]/_}" "${v//[a-]/_}"

#### bracket-posix-classes
v='aB3 _.x'
echo "${v//[[:upper:]]/U}" "${v//[[:digit:][:space:]]/D}" "${v//[[:punct:]]/P}"

#### bracket-unclosed-literal
v='a[b'
echo "${v/[/X}"
[[ 'a[b' == a[b ]] && echo lit

#### dbl-bracket-quoted-rhs-literal
x='a*'
[[ abc == $x ]] && echo glob
[[ abc == "$x" ]] || echo literal
[[ 'a*' == "$x" ]] && echo same

#### dbl-bracket-partly-quoted
[[ 'foo*bar' == foo"*"* ]] && echo one
[[ 'fooXbar' == foo"*"* ]] || echo two

#### dbl-bracket-escaped-star
[[ 'a*' == a\* ]] && echo esc
[[ ab == a\* ]] || echo noesc

#### dbl-bracket-not-equal-pattern
[[ hello != h*o ]] || echo matches
[[ hello != x* ]] && echo differs

#### dbl-bracket-class-in-pattern
[[ b == [abc] ]] && echo in
[[ d == [!abc] ]] && echo notin
[[ ']' == []] ]] && echo close

#### case-quoted-pattern-literal
for w in '*' x; do
  case $w in
    "*") echo star ;;
    *) echo other ;;
  esac
done

#### case-bracket-negated
for c in a 1 ']'; do
  case $c in
    [^]a]) echo "not:$c" ;;
    *) echo "is:$c" ;;
  esac
done

#### case-alternatives-with-class
for f in a.c b.h c.o; do
  case $f in *.[ch]) echo "src $f" ;; *) echo "obj $f" ;; esac
done

#### extglob-at-in-param
shopt -s extglob
v=foobar
echo "${v#@(foo|fo)}" "${v##@(f|fo|foo)}"

#### extglob-star-in-replace
shopt -s extglob
v=aaabbbccc
echo "${v//+(a)/X}" "${v/+(b)/Y}" "${v/%+(c)/Z}"

#### extglob-not-in-dbl-bracket
[[ foo.txt == !(*.sh) ]] && echo notsh
[[ foo.sh == !(*.sh) ]] || echo sh

#### extglob-question-in-case
shopt -s extglob
for w in color colour colr; do
  case $w in colo?(u)r) echo "ok $w" ;; *) echo "no $w" ;; esac
done

#### extglob-plus-numbers
shopt -s extglob
for n in 12 1a 007 ''; do
  [[ $n == +([0-9]) ]] && echo "num:$n" || echo "not:$n"
done

#### extglob-nested
shopt -s extglob
[[ abab == +(a|b) ]] && echo 1
[[ abcab == +(a|@(b|c)) ]] && echo 2
[[ xy == +(a|b) ]] || echo 3

#### extglob-in-suffix-removal
shopt -s extglob
v='file.tar.gz'
echo "${v%%.@(tar|gz)*}" "${v%.+([a-z])}"

#### extglob-strip-trailing-spaces
shopt -s extglob
v='value   '
echo "[${v%%+([[:space:]])}]"
v='   lead'
echo "[${v##+([[:space:]])}]"

#### extglob-glob-files
shopt -s extglob
touch a.c b.h c.o d.c
echo !(*.c)
echo @(a|d).c

#### extglob-off-is-syntax-in-case-of-pattern-literal
v='@(x)'
[[ $v == '@(x)' ]] && echo literal

#### star-matches-slash-in-param
v=/usr/local/bin
echo "${v##*/}" "${v%/*}" "${v#*/}"

#### question-matches-one-char
v=abcd
echo "${v#??}" "${v%???}"

#### nocasematch-dbl-bracket
shopt -s nocasematch
[[ HELLO == hel* ]] && echo ci
shopt -u nocasematch
[[ HELLO == hel* ]] || echo cs

#### regex-quoted-literal
[[ 'a.c' =~ "a.c" ]] && echo lit1
[[ 'abc' =~ "a.c" ]] || echo lit2
[[ 'abc' =~ a.c ]] && echo re

#### regex-bash-rematch
s='key=value'
[[ $s =~ ^([a-z]+)=(.*)$ ]] && echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${#BASH_REMATCH[@]}"

#### regex-var-unquoted
re='^[0-9]+$'
[[ 123 =~ $re ]] && echo num
[[ 12a =~ $re ]] || echo notnum

#### pattern-backslash-in-var
p='a\*'
[[ 'a*' == $p ]] && echo escaped
[[ 'ab' == $p ]] || echo noglob

#### replace-slash-in-pattern
v=a/b/c
echo "${v//\//:}" "${v/\//-}"

#### replace-with-quoted-replacement
v=abc
echo "${v/b/"*"}" "${v/b/'&'}"

#### extglob-vars-in-group
x=foo y=bar
for w in foo bar baz; do [[ $w == @($x|$y) ]] && echo "m $w"; done

#### extglob-quoted-bar-in-group
shopt -s extglob
v='a|b'
case $v in @("a|b")) echo one ;; esac
case a in @("a|b")) echo two ;; *) echo none ;; esac

#### extglob-quoted-var-star-in-group
shopt -s extglob
x='*'
case a in @($x)) echo glob ;; esac
case a in @("$x")) echo lit ;; *) echo nolit ;; esac

#### extglob-files-with-var
shopt -s extglob
touch a.c b.h c.o
e=c
echo *.@($e|h) !(*.@(c|h))

#### extglob-neg-in-param-removal
shopt -s extglob
v=foo.txt
echo "${v##!(*.txt)}" "${v/!(o)/X}"

#### remove-shortest-prefix-star
v=a/b/c
echo "${v#*/}" "${v##*/}"

#### remove-shortest-suffix-star
v=a/b/c
echo "${v%/*}" "${v%%/*}"

#### remove-prefix-class
v=123abc
echo "${v##[0-9]}" "${v##+([0-9])}"

#### remove-suffix-question
v=file.tar.gz
echo "${v%.??}" "${v%.*}" "${v%%.*}"

#### replace-first-and-all
v=aXbXc
echo "${v/X/-}" "${v//X/-}"

#### replace-anchor-start-only-at-start
v=abab
echo "${v/#ab/X}" "${v/#b/X}"

#### replace-anchor-end-only-at-end
v=abab
echo "${v/%ab/X}" "${v/%a/X}"

#### replace-anchor-with-star
v=hello
echo "${v/#h*l/X}" "${v/%l*o/Y}"

#### replace-delete-all
v=a-b-c
echo "${v//-}"

#### replace-class-all
v="a1b2c3"
echo "${v//[0-9]/#}" "${v//[!0-9]/_}"

#### replace-caret-negation
v="a1b2"
echo "${v//[^0-9]/}"

#### replace-with-ampersand-literal
v=abc
echo "${v/b/&}"

#### remove-quoted-var-pattern-literal
p='*'
v='a*b'
echo "${v#"$p"}" "${v#$p}"

#### dbl-bracket-anchored-whole-string
v=foobar
[[ $v == foo ]] && echo whole || echo partial-no
[[ $v == foo* ]] && echo prefix

#### dbl-bracket-class-close-bracket
[[ ']' == []] ]] && echo yes || echo no
[[ 'a' == [!]] ]] && echo yes2 || echo no2

#### dbl-bracket-rhs-var-pattern
p='f*'
[[ foo == $p ]] && echo pattern
[[ foo == "$p" ]] && echo literal || echo not-literal

#### case-star-in-middle
case abcd in a*d) echo match ;; esac

#### case-escaped-star
case 'a*' in a\*) echo literal ;; *) echo other ;; esac

#### extglob-at-alternatives-in-case
shopt -s extglob
case foo.c in *.@(c|h)) echo source ;; *) echo other ;; esac

#### extglob-not-pattern-in-dbl-bracket
shopt -s extglob
[[ abc == !(a*) ]] && echo yes || echo no
[[ xbc == !(a*) ]] && echo yes2 || echo no2

#### extglob-star-group-remove
shopt -s extglob
v="aaab"
echo "${v##*(a)}"

#### extglob-plus-replace-all
shopt -s extglob
v="a   b    c"
echo "${v//+( )/ }"
