# Arithmetic expansion, (( )), let.

#### basic-ops
echo $((1+2)) $((7-10)) $((6*7)) $((17/5)) $((17%5)) $((2**10))

#### precedence
echo $((2+3*4)) $(((2+3)*4)) $((-2**2))

#### variables-without-dollar
a=5 b=3
echo $((a*b)) $(($a+$b))

#### unset-var-is-zero
unset n
echo $((n+1))

#### var-holding-expression
e=1+2
echo $((e+3))
echo $((e*2))

#### var-chain
a=b b=c c=7
echo $((a+1))

#### increment-decrement
i=5
echo $((i++)) $i $((++i)) $((i--)) $((--i))

#### compound-assign
x=10
((x+=5)); echo $x
((x-=3)); echo $x
((x*=2)); echo $x
((x/=4)); echo $x
((x%=4)); echo $x
((x<<=3)); echo $x

#### arith-command-status
(( 0 )); echo $?
(( 5 )); echo $?
(( 2 > 1 )); echo $?

#### comparison-ops
echo $((3<5)) $((3>5)) $((3<=3)) $((3>=4)) $((3==3)) $((3!=3))

#### logical-ops
echo $((1&&0)) $((1||0)) $((!5)) $((!0))

#### bitwise-ops
echo $((5&3)) $((5|3)) $((5^3)) $((~5)) $((1<<4)) $((256>>2))

#### ternary
x=4
echo $((x>3 ? 10 : 20))

#### comma-operator
echo $((a=1, b=2, a+b))

#### hex-octal-base
echo $((0x1f)) $((010)) $((2#1010)) $((36#z)) $((16#ff))

#### negative-numbers
echo $((-5+2)) $((- -3)) $((-7/2)) $((-7%3))

#### division-by-zero
echo $((1/0)) 2>/dev/null
echo "status $?"

#### array-element-increment
a=(5 6)
(( a[0]++ ))
echo ${a[0]} ${a[1]}

#### assoc-counting-idiom
declare -A c
for k in x y x z x; do (( c[$k]++ )); done
echo ${c[x]} ${c[y]} ${c[z]}

#### array-element-assign-in-arith
a=(1 2 3)
(( a[1] = a[0] + a[2] ))
echo ${a[@]}

#### array-index-arith
a=(10 20 30)
i=1
echo ${a[i+1]} ${a[$i]} $((a[2]+a[0]))

#### let-builtin
let x=3*4 y=x+1
echo $x $y

#### let-status
let 0; echo $?
let 1; echo $?

#### nested-arith
echo $(( $((2+3)) * 2 ))

#### arith-in-for
for ((i=0; i<3; i++)); do echo $i; done

#### arith-for-multiple-vars
for ((i=0, j=10; i<3; i++, j--)); do echo $i $j; done

#### arith-whitespace
echo $((  1  +  2  ))

#### string-number-with-spaces
x=' 42 '
echo $((x+1))

#### power-right-assoc
echo $((2**3**2))

#### arith-assign-returns-value
echo $((y=7)) $y

#### increment-unset
unset k
((k++))
echo $k

#### arith-status-zero-result-errexit
set -e
i=0
((i++)) || true
echo $i

#### arith-in-if
x=3
if (( x % 2 )); then echo odd; else echo even; fi

#### arith-while-loop
n=0
while (( n < 5 )); do ((n+=2)); done
echo $n

#### arith-large-numbers
echo $((2**62)) $((9223372036854775807 + 1))

#### arith-leading-zero-var
x=08
echo $((10#$x))

#### arith-invalid-octal
x=08
echo $((x)) 2>/dev/null
echo "status $?"

#### arith-syntax-error
echo $((1 +)) 2>/dev/null
echo "status $?"

#### arith-dollar-paren-status
x=$((3-3))
echo "x=$x"

#### arith-char-in-var
x=abc
echo $((x))

#### arith-nested-parens
echo $(( ((1+2)) * ((3+4)) ))

#### arith-unary-plus
echo $((+5)) $((+-5))

#### arith-mod-negative
echo $((-10 % 3)) $((10 % -3))

#### arith-shift-assign
x=1
((x<<=10))
echo $x

#### arith-assign-via-let-quoted
let "z = 2 + 3"
echo $z

#### arith-expr-with-string-index
declare -A m=([a]=1 [b]=2)
echo $(( m[a] + m[b] ))

#### arith-sum-loop
sum=0
for i in 1 2 3 4 5; do sum=$((sum + i)); done
echo $sum

#### arith-average
total=17 count=4
echo $((total / count)) $((total * 100 / count % 100))

#### incr
i=5; echo $((i++)) $i $((++i)) $((i--)) $((--i))

#### assign-ops
x=10; ((x+=5, x-=3, x*=2, x/=4, x%=4)); echo $x; y=1; ((y<<=3, y|=1, y^=2, y&=15)); echo $y

#### bitwise
echo $((5&3)) $((5|3)) $((5^3)) $((~5)) $((1<<4)) $((256>>2))

#### logic
echo $((1&&0)) $((1||0)) $((!0)) $((!5)) $((3>2)) $((2>=3)) $((1==1)) $((1!=1))

#### pow-right-assoc
echo $((2**3**2)) $((-2**2))

#### unary
echo $((-(-5))) $((+3)) $((- -3))

#### cmdsubst-inside
echo $(( $(echo 3) + 1 )) $(( `echo 2` * 2 ))

#### old-syntax
echo $[1+2]

#### command-status
(( 0 )); echo $?; (( 5 )); echo $?; (( x = 0 )); echo $?

#### declare-i
declare -i n; n=2+3; echo $n; n+=4; echo $n; n=abc; echo $n

#### array-index-arith-2
a=(10 20 30); i=1; echo ${a[i+1]} ${a[$((i*2))]} ${a[-1]}

#### div-zero-status
echo $((5/0)); echo st=$?

#### mod-zero
(( 5 % 0 )); echo st=$?

#### ternary-nested
x=5; echo $(( x<3 ? 1 : x<6 ? 2 : 3 ))

#### base-10-prefix
x=08; echo $((10#$x)) $((10#0012))

#### shift-large
echo $((1<<63)) $((1<<64))

#### hex-invalid
echo $((0x)); echo after

#### letter-digits-base
echo $((16#FF)) $((36#Z)) $((2#102))

#### var-with-spaces
x=' 3 '; echo $((x+1))

#### negative-var
x=-3; echo $((x*x)) $((-x))

#### comparison-strings
x=abc; y=abc; echo $((x==y))

#### let-multiple-status
let a=1 b=0; echo $?; let a=0; echo $?

#### unset-var-zero
unset u; echo $((u+1)) $((u))

#### increment-unset-2
unset c; ((c++)); echo $c

#### assign-in-condition
if (( (n = 3) > 2 )); then echo "n=$n"; fi

#### arith-pre-post-increment-order
i=5
echo $((i++ + ++i)) $i

#### arith-compound-assign-ops
x=10
(( x += 5, x -= 3, x *= 2, x /= 4, x %= 4 ))
echo $x

#### arith-bit-ops-assign
x=6
(( x &= 3, x |= 8, x ^= 1 ))
echo $x

#### arith-shift-assign-more
x=1
(( x <<= 3 ))
echo $x

#### arith-nested-ternary
a=5
echo $(( a > 3 ? a > 4 ? 2 : 1 : 0 ))

#### arith-assign-in-ternary-branch
a=0
(( 1 ? (a = 3) : (a = 4) ))
echo $a

#### arith-comma-value-last
echo $(( (1, 2, 3) ))

#### arith-unary-not-on-var
v=0
echo $(( !v )) $(( !!5 ))

#### arith-dollar-paren-inside-arith
echo $(( $(( 2 + 3 )) * 2 ))

#### arith-whitespace-and-newlines
echo $((
  1 +
  2
))

#### arith-negative-modulo-and-division
echo $(( -7 / 2 )) $(( -7 % 2 ))

#### arith-let-multiple-args
let a=1 b=a+1 c=b*3
echo $a $b $c

#### arith-let-quoted-spaces
let "x = 2 * 3"
echo $x

#### arith-cmd-status-of-zero
(( 0 ))
echo "st=$?"
(( -1 ))
echo "st=$?"

#### arith-array-index-expression
a=(10 20 30)
i=1
echo $(( a[i+1] + a[0] ))
