# Arithmetic errors and variables holding expressions (bash manual: "Shell Arithmetic").

#### negative-exponent
echo $(( 2 ** -1 ))
echo after

#### float-is-error
echo $(( 1.5 + 1 ))
echo "st=$?"

#### invalid-octal
echo $(( 09 ))
echo after

#### invalid-base
echo $(( 65#1 ))
echo after

#### base-digits-too-big
echo $(( 2#102 ))
echo after

#### base-notation
echo $(( 2#1010 )) $(( 16#ff )) $(( 36#z )) $(( 8#17 )) $(( 0x1F )) $(( 017 ))

#### base-64-symbols
echo $(( 64#@ )) $(( 64#_ )) $(( 64#A ))

#### var-holds-expression
e=1+2
echo $(( e + 3 )) $(( e * 2 ))

#### var-recursion-chain
a=b; b=c; c=7
echo $(( a + 1 ))

#### var-self-recursion-error
x=x
echo $(( x + 1 ))
echo after

#### unset-var-is-zero
unset u
echo $(( u + 1 ))

#### set-u-in-arith
set -u
echo $(( nope + 1 ))
echo after

#### division-by-zero-in-let
let 'z = 5 / 0'
echo "st=$?"

#### modulo-by-zero
echo $(( 5 % 0 ))
echo after

#### arith-command-status
(( 0 )); echo "zero=$?"
(( 5 )); echo "five=$?"
(( -1 )); echo "neg=$?"

#### let-status-last
let a=1 b=0
echo "st=$?"

#### syntax-error-in-command-arith
(( 1 + ))
echo "st=$?"

#### empty-var-in-arith
v=
echo $(( v + 2 ))

#### string-var-in-arith
s=hello
echo $(( s + 2 ))

#### assignment-ops
x=5; (( x += 3, x *= 2, x -= 1 )); echo $x
(( x <<= 2 )); echo $x
(( x %= 7 )); echo $x

#### ternary-and-comma
echo $(( 1 ? 2 : 3 )) $(( 0 ? 2 : 3 )) $(( (1, 2) ))

#### overflow-wraps
echo $(( 9223372036854775807 + 1 ))

#### too-big-constant
echo $(( 99999999999999999999 ))

#### exponent-zero-and-negative-base
echo $(( 0 ** 0 )) $(( (-2) ** 3 ))

#### increment-non-var-error
echo $(( 5++ ))
echo after

#### arith-in-array-index
a=(10 20 30); i=1
echo ${a[i+1]} ${a[$i]}

#### quoted-number-arith
echo $(( "3" + 4 ))

#### arith-neg-exponent
echo $((2**-1)); echo st=$?

#### arith-recursive
a=b; b=c; c=5; echo $((a+1))

#### arith-recursive-loop
a=a; echo $((a+1)); echo st=$?

#### arith-base
echo $((2#101)) $((16#ff)) $((8#17)) $((36#z)) $((64#@))

#### arith-bad-base
echo $((65#1)); echo after

#### arith-eq-octal
[ 010 -eq 8 ] && echo oct || echo dec
[[ 010 -eq 8 ]] && echo oct2

#### arith-eq-hex
[[ 0x10 -eq 16 ]] && echo hex; [ 0x10 -eq 16 ]; echo st=$?

#### arith-eq-base
[[ 2#11 -eq 3 ]] && echo base

#### arith-eq-expr
x=3; [[ x+1 -eq 4 ]] && echo expr

#### arith-set-u
set -u; echo $((nope+1)); echo after

#### arith-comma
echo $((a=1, b=2, a+b))

#### arith-ternary-assign
x=5; echo $(( x > 3 ? (y=1) : (y=2) )) $y

#### arith-let
let 'x = 3 * 4' y=x+1; echo $x $y; let 0; echo st=$?

#### arith-overflow
echo $(( 9223372036854775807 + 1 ))

#### arith-div-neg
echo $(( -7 / 2 )) $(( -7 % 2 ))

#### arith-string-var-expr
e='1 + 2 * 3'; echo $((e)) $(( e * 2 ))

#### div-by-zero-message-and-status
echo $((1/0))
echo "st=$?"

#### div-by-zero-next-line-runs
echo $((1/0))
echo next

#### div-by-zero-in-arith-command
(( 1/0 ))
echo "st=$?"

#### bad-token-in-expression
echo $(( 1 + * 2 ))
echo next

#### missing-operand
echo $(( 4 + ))
echo next

#### unbalanced-paren-in-expression
x=$(( (1+2 ))
echo next

#### assignment-to-constant
(( 3 = 4 ))
echo "st=$?"

#### string-with-space-in-arith
x="1 2"
echo $((x))
echo next

#### exponent-negative-is-error
echo $(( 2 ** -1 ))
echo next

#### exponent-large-wraps
echo $(( 2 ** 63 ))

#### modulo-negative
echo $(( -7 % 3 )) $(( 7 % -3 ))

#### shift-operators
echo $(( 1 << 4 )) $(( 256 >> 2 )) $(( -16 >> 2 ))

#### octal-invalid-digit-message
echo $(( 019 ))
echo next

#### hex-invalid-digit
echo $(( 0xZ ))
echo next

#### base-37-with-too-big
echo $(( 37#z ))
echo next

#### let-returns-1-for-zero
let x=0
echo "st=$?"

#### let-syntax-error
let "1 +"
echo "st=$?"

#### arith-error-in-for-c-style
for (( i=0; i<1/0; i++ )); do echo no; done
echo "st=$?"

#### arith-in-array-subscript-error
a=(1 2)
echo "${a[1/0]}"
echo next

#### unary-plus-minus-chain
echo $(( - - 3 )) $(( -+-3 )) $(( !0 )) $(( ~0 ))

#### comparison-results
echo $(( 3 > 2 )) $(( 3 < 2 )) $(( 2 == 2 )) $(( 2 != 2 ))

#### logical-short-circuit-no-side-effect
i=0
echo $(( 0 && (i=5) )) $i
echo $(( 1 || (i=6) )) $i
