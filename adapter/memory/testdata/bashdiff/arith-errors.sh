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
