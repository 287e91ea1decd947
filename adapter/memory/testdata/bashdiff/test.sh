# test, [ ] and [[ ]].

#### string-equality
[ abc = abc ] && echo eq
[ abc != abd ] && echo ne

#### double-equals-in-single-bracket
[ a == a ] && echo ok

#### empty-and-nonempty
[ -z "" ] && echo z
[ -n "x" ] && echo n
[ -n "" ] || echo not-n

#### single-arg-test
[ x ] && echo nonempty
[ "" ] || echo empty

#### numeric-comparisons
[ 2 -lt 10 ] && echo lt
[ 10 -gt 2 ] && echo gt
[ 3 -le 3 ] && echo le
[ 3 -ge 4 ] || echo not-ge
[ 5 -eq 5 ] && echo eq
[ 5 -ne 6 ] && echo ne

#### numeric-with-spaces
[ " 5 " -eq 5 ] && echo spaced

#### numeric-octal-looking
[ 010 -eq 10 ] && echo decimal

#### numeric-hex-in-single-bracket
[ 0x10 -eq 16 ] 2>/dev/null && echo hex || echo "not-hex $?"

#### numeric-octal-in-double-bracket
[[ 010 -eq 8 ]] && echo octal

#### numeric-hex-in-double-bracket
[[ 0x10 -eq 16 ]] && echo hex

#### numeric-invalid
[ abc -eq 1 ] 2>/dev/null
echo "st=$?"

#### file-tests
touch f
mkdir d
[ -e f ] && echo e
[ -f f ] && echo f
[ -d d ] && echo d
[ -f d ] || echo not-f
[ -s f ] || echo empty
echo x > f
[ -s f ] && echo nonempty

#### file-permissions
touch f
chmod 644 f
[ -r f ] && echo r
[ -w f ] && echo w
[ -x f ] || echo not-x
chmod +x f
[ -x f ] && echo x

#### symlink-test
touch target
ln -s target link
[ -L link ] && echo link
[ -h link ] && echo h
[ -L target ] || echo not-link

#### newer-than
touch -d '2020-01-01' old
touch new
[ new -nt old ] && echo newer
[ old -ot new ] && echo older

#### same-file
touch f
ln -s f l
[ f -ef l ] && echo same

#### not-operator
[ ! -e nope ] && echo absent

#### and-or-in-single-bracket
[ 1 -eq 1 -a 2 -eq 2 ] && echo and
[ 1 -eq 2 -o 2 -eq 2 ] && echo or

#### parens-in-test
[ \( 1 -eq 1 \) ] && echo paren

#### string-less-than
[ a \< b ] && echo less
[[ a < b ]] && echo dless

#### double-bracket-and-or
[[ 1 -eq 1 && 2 -eq 2 ]] && echo and
[[ 1 -eq 2 || 2 -eq 2 ]] && echo or

#### double-bracket-no-split
v='a b'
[[ $v = 'a b' ]] && echo nosplit

#### double-bracket-empty-unquoted
v=
[[ -z $v ]] && echo empty

#### double-bracket-pattern
[[ hello == h*o ]] && echo glob
[[ hello == 'h*o' ]] || echo quoted

#### double-bracket-regex
[[ abc123 =~ ^[a-z]+([0-9]+)$ ]] && echo "${BASH_REMATCH[1]}"

#### double-bracket-regex-quoted-literal
[[ 'a.c' =~ "a.c" ]] && echo m1
[[ 'abc' =~ "a.c" ]] || echo m2

#### double-bracket-regex-var
re='^[0-9]+$'
[[ 42 =~ $re ]] && echo num
[[ 4x2 =~ $re ]] || echo notnum

#### double-bracket-regex-rematch-whole
[[ 'key=val' =~ (.*)=(.*) ]] && echo "${BASH_REMATCH[0]} ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"

#### double-bracket-not
[[ ! -e nope ]] && echo absent

#### double-bracket-grouping
[[ ( 1 -eq 2 || 2 -eq 2 ) && 3 -eq 3 ]] && echo grouped

#### double-bracket-arith-compare
x=5
[[ $x -gt 3 ]] && echo gt
[[ x -gt 3 ]] && echo name-evaluated

#### double-bracket-string-compare-numbers
[[ 10 < 9 ]] && echo lexical

#### double-bracket-v-var-set
x=1
[[ -v x ]] && echo set
[[ -v nope ]] || echo unset

#### test-v-array-element
a=(1)
[[ -v a[0] ]] && echo has0
[[ -v a[5] ]] || echo no5

#### test-builtin-name
test 1 -eq 1 && echo test-ok

#### test-missing-bracket
[ 1 -eq 1 2>/dev/null
echo "st=$?"

#### test-too-many-args
[ a b c ] 2>/dev/null
echo "st=$?"

#### test-unary-on-empty
[ -f ] && echo true-one-arg

#### test-equal-with-operators-as-strings
[ "-n" = "-n" ] && echo ok
[ = = = ] && echo eq

#### test-string-with-dash
x=-x
[ "$x" = "-x" ] && echo dash

#### test-o-option
set -o errexit
[[ -o errexit ]] && echo errexit-on
set +o errexit
[[ -o errexit ]] || echo errexit-off

#### test-t-fd
[ -t 5 ] || echo not-tty

#### test-nonexistent-dir
[ -d /nonexistent/dir ] || echo no-dir

#### test-regex-special-chars
[[ 'a+b' =~ a\+b ]] && echo escaped

#### test-regex-no-match-rematch-cleared
[[ abc =~ (b) ]]
[[ xyz =~ (q) ]]
echo "[${BASH_REMATCH[*]}]"

#### test-pattern-with-var-quoted
p='a*'
[[ abc == $p ]] && echo unquoted-glob
[[ abc == "$p" ]] || echo quoted-literal

#### test-integer-overflow-compare
[ 9999999999 -gt 1 ] && echo big

#### test-negative-numbers
[ -5 -lt -2 ] && echo neg

#### test-string-equal-glob-chars
[ 'a*' = 'a*' ] && echo literal

#### double-bracket-empty-string-test
[[ "" ]] || echo empty-false
[[ x ]] && echo nonempty-true

#### dbl-string-lt-gt
[[ a < b ]] && echo lt; [[ b > a ]] && echo gt; [[ B < a ]] && echo Blt

#### dbl-and-or-precedence
[[ -n x || -z x && -z x ]] && echo yes
[[ ( -n x || -z x ) && -z x ]] || echo no

#### dbl-not
[[ ! -e /nonexistent ]] && echo notexist
[[ ! a == b ]] && echo ne

#### dbl-option
set -o noglob; [[ -o noglob ]] && echo on; set +o noglob; [[ -o noglob ]] || echo off

#### dbl-v
x=1; [[ -v x ]] && echo set; [[ -v nope ]] || echo unset; a=(1); [[ -v a[0] ]] && echo elem

#### dbl-nt-ot
touch -d '2020-01-01' old; touch new
[[ new -nt old ]] && echo newer; [[ old -ot new ]] && echo older; [[ new -nt missing ]] && echo vsmissing

#### dbl-regex-groups
[[ 'ab12cd' =~ ([a-z]+)([0-9]+) ]] && echo "${BASH_REMATCH[0]} ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"

#### dbl-regex-fail-clears
[[ abc =~ (b) ]]; [[ xyz =~ (q) ]]; echo "[${BASH_REMATCH[*]}] ${#BASH_REMATCH[@]}"

#### dbl-regex-space-quoted
[[ 'a b' =~ a\ b ]] && echo esc; [[ 'a b' =~ 'a b' ]] && echo q

#### dbl-regex-invalid
[[ a =~ '(' ]]; echo st=$?; [[ a =~ ( ]]; echo st=$?

#### dbl-empty-var-no-split
x=''; [[ $x == '' ]] && echo empty; y='a b'; [[ $y == 'a b' ]] && echo nosplit

#### dbl-arith-compare
[[ 10 -gt 9 ]] && echo gt; [[ 010 -eq 8 ]] && echo octal; [[ abc -eq 0 ]] && echo zero

#### dbl-glob-no-pathname
touch aa; [[ aa == a* ]] && echo m; [[ a* == aa ]] || echo lhs-literal

#### dbl-integer-error
[[ 1 -eq 1+ ]]; echo st=$?

#### dbl-unary-file
touch f; mkdir d; [[ -f f && -d d && -e f && -s f ]] || echo nonempty-false; [[ -r f && -w f ]] && echo rw

#### test-combination
[ -n a -a -z '' ] && echo and; [ -z a -o -n b ] && echo or; [ ! -z a ] && echo not

#### test-parens
[ \( a = a \) -a \( b = b \) ] && echo parens

#### test-too-many
[ a b c ]; echo st=$?

#### bare-var
a=x; [[ $a ]] && echo set; e=; [[ $e ]] || echo empty

#### contains
x=hello; y=ell; [[ $x == *"$y"* ]] && echo contains; [[ $x == *"e*"* ]] || echo nostar

#### regex-alternation
for w in a b c; do [[ $w =~ ^(a|b)$ ]] && echo "m$w"; done

#### regex-class
[[ x1 =~ [[:alpha:]][[:digit:]] ]] && echo cls

#### string-lt-numbers
[[ 10 < 9 ]] && echo string-compare

#### newline-compare
[[ $'a\nb' == a?b ]] && echo nl

#### unary-a-exists
touch f; [[ -a f ]] && echo exists

#### symlink
touch t; ln -s t l; [[ -h l && -L l ]] && echo link; [[ -h t ]] || echo notlink

#### t-not-terminal
[[ -t 0 ]] || echo notty

#### complex-grouping
[[ a == a && ( b == c || 1 -eq 1 ) ]] && echo grp

#### regex-var-with-quotes
re='a.c'; [[ abc =~ $re ]] && echo re; [[ abc =~ "$re" ]] || echo lit

#### regex-bracket-literal
[[ 'a]' =~ a] ]] && echo br

#### file-equal
touch a; ln -s a b; [[ a -ef b ]] && echo same

#### le-ge-not-in-dbl
[[ 3 -le 3 && 4 -ge 5 ]] || echo num

#### empty-string-ops
[[ -z '' && -n ' ' ]] && echo ok

#### dbl-invalid-octal-eq
[[ 08 -eq 8 ]]; echo st=$?

#### dbl-var-name-in-eq
a=5; [[ a -eq 5 ]] && echo name; [[ b -eq 0 ]] && echo unset-zero

#### dbl-regex-newline
[[ $'a\nb' =~ a.b ]] && echo dot-nl

#### dbl-glob-bracket-var
c='[ab]'; [[ a == $c ]] && echo cls; [[ a == "$c" ]] || echo lit

#### dbl-missing-operand
x=; [[ -n $x ]] || echo empty-ok

#### dbl-regex-star-empty
[[ '' =~ ^a*$ ]] && echo empty-match

#### dbl-regex-anchors-var
s='foo.bar'; [[ $s =~ \.bar$ ]] && echo escdot

#### dbl-numeric-string-compare
[[ 2 == 02 ]] || echo str; [[ 2 -eq 02 ]] && echo num

#### test-string-eq-double
[ a == a ] && echo dbl-eq

#### test-lt-escaped
[ a \< b ] && echo lt

#### test-n-missing-arg
[ -n ] && echo one-arg-true

#### test-unary-no-arg
[ -f ]; echo st=$?

#### test-invalid-int
[ a -eq 1 ] 2>/dev/null; echo st=$?

#### test-negative-num
[ -1 -lt 0 ] && echo neg

#### test-spaces-num
[ ' 3 ' -eq 3 ] 2>/dev/null && echo spaced; echo st=$?

#### dbl-bracket-and-or-precedence
[[ 1 -eq 1 || 1 -eq 2 && 1 -eq 3 ]] && echo yes || echo no

#### dbl-bracket-not-grouping
[[ ! ( 1 -eq 2 || 2 -eq 3 ) ]] && echo yes

#### dbl-bracket-string-lt-gt
[[ a < b ]] && echo lt
[[ b > a ]] && echo gt

#### dbl-bracket-empty-var-no-quotes
e=
[[ $e == "" ]] && echo empty
[[ -z $e ]] && echo z

#### dbl-bracket-no-word-splitting
v="a b"
[[ $v == "a b" ]] && echo same

#### dbl-bracket-regex-capture-groups
[[ "key=val" =~ ^([a-z]+)=(.*)$ ]] && echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"

#### dbl-bracket-regex-no-match-status
[[ abc =~ ^x ]]
echo "st=$?"

#### dbl-bracket-invalid-regex-status
[[ a =~ ( ]] 2>/dev/null
echo "st=$?"

#### dbl-bracket-v-set
x=1
[[ -v x ]] && echo set
[[ -v nope ]] || echo unset

#### dbl-bracket-file-tests
touch f; mkdir -p d
[[ -f f && -d d && ! -e nope ]] && echo ok

#### dbl-bracket-nt-ot
touch a
sleep 0.01
touch b
[[ b -nt a ]] && echo newer
[[ a -ot b ]] && echo older

#### dbl-bracket-arith-operands-in-le
x=5
[[ x+1 -le 6 ]] && echo yes

#### single-bracket-missing-close
[ 1 -eq 1
echo "st=$?"

#### single-bracket-too-many-args
[ a b c ]
echo "st=$?"

#### test-string-equal-single-eq
test abc = abc && echo eq

#### test-parens-grouping
[ \( 1 -eq 1 \) -a \( 2 -eq 2 \) ] && echo both

#### dbl-bracket-pattern-with-spaces-quoted
v="a b c"
[[ $v == "a b"* ]] && echo yes

#### dbl-bracket-empty-string-test
[[ "" ]] || echo empty-false
[[ x ]] && echo nonempty-true

#### dbl-bracket-unset-var-n
unset u
[[ -n $u ]] || echo unset-empty

#### dbl-bracket-ampersand-in-regex-var
re='^a&b$'
[[ 'a&b' =~ $re ]] && echo yes

#### dbl-bracket-regex-quoted-part-literal
[[ 'a.c' =~ ^a"."c$ ]] && echo yes
[[ 'abc' =~ ^a"."c$ ]] || echo no

#### dbl-bracket-numeric-compare-strings
[[ 10 -gt 9 ]] && echo num
[[ 10 > 9 ]] || echo str

#### dbl-bracket-multiline
if [[ -n x &&
      -n y ]]; then echo ok; fi

#### test-unary-on-operator-string
[ -n = ] && echo yes
[ ! -z x ] && echo yes2

#### test-three-arg-not
[ ! = x ] 2>/dev/null; echo "st=$?"
[ ! x = y ] && echo neq

#### test-eq-with-spaces-in-var
n=" 3 "
[ $n -eq 3 ] && echo yes

#### dbl-bracket-regex-with-spaces-in-var
re='a b'
[[ 'xa bx' =~ $re ]] && echo yes

#### dbl-bracket-regex-bracket-class
[[ 'a1' =~ ^[[:alpha:]][[:digit:]]$ ]] && echo yes

#### dbl-bracket-regex-rematch-cleared-on-fail
[[ ab =~ (a) ]]
[[ ab =~ (z) ]]
echo "[${BASH_REMATCH[0]}] ${#BASH_REMATCH[@]}"

#### dbl-bracket-eq-is-pattern-not-regex
[[ 'a.c' == a?c ]] && echo glob
[[ 'abc' == a.c ]] || echo not-regex

#### dbl-bracket-lt-locale-independent-ascii
[[ B < a ]] && echo upper-first || echo lower-first

#### dbl-bracket-int-compare-with-negative
[[ -5 -lt -2 ]] && echo yes

#### dbl-bracket-o-option
set -o noglob
[[ -o noglob ]] && echo on
[[ -o nosuchopt ]] || echo "st=$?"

#### dbl-bracket-compound-in-if-elif
x=3
if [[ $x -lt 2 ]]; then echo small; elif [[ $x -lt 5 && $x != 4 ]]; then echo mid; fi

#### dbl-bracket-word-with-glob-no-expansion
touch zz1
[[ zz* == zz* ]] && echo literal-lhs

#### dbl-bracket-arith-error-status
[[ 1/0 -eq 1 ]]
echo "st=$?"
