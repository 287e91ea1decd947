# Integers in the arithmetic comparisons of [ ], test and [[ ]] (bash manual: "Bash Conditional
# Expressions": "arg1 and arg2 may be positive or negative integers"; inside [[ ]] they are
# evaluated as arithmetic expressions, so octal, hex and base#n apply there, not in [ ]).

#### test-eq-leading-zero-decimal
[ 010 -eq 10 ] && echo decimal || echo other

#### test-eq-hex-is-error
[ 0x10 -eq 16 ]
echo "st=$?"

#### test-eq-base-notation-is-error
test 2#101 -eq 5
echo "st=$?"

#### dbl-eq-octal
[[ 010 -eq 8 ]] && echo octal || echo decimal

#### dbl-eq-hex
[[ 0x1F -eq 31 ]] && echo yes || echo no

#### dbl-eq-hex-uppercase-x
[[ 0XfF -eq 255 ]] && echo yes || echo no

#### dbl-eq-base-2
[[ 2#1010 -eq 10 ]] && echo yes || echo no

#### dbl-eq-base-36
[[ 36#z -eq 35 ]] && echo yes || echo no

#### dbl-eq-base-64-symbols
[[ 64#@ -eq 62 && 64#_ -eq 63 ]] && echo yes || echo no

#### dbl-eq-invalid-octal
[[ 09 -eq 9 ]]
echo "st=$?"

#### dbl-eq-invalid-base
[[ 65#1 -eq 1 ]]
echo "st=$?"

#### dbl-eq-digit-too-big-for-base
[[ 2#3 -eq 3 ]]
echo "st=$?"

#### dbl-eq-variable-holding-octal
n=017
[[ $n -eq 15 ]] && echo fifteen || echo seventeen

#### test-eq-variable-holding-octal
n=017
[ "$n" -eq 17 ] && echo seventeen || echo fifteen

#### dbl-eq-expression-operands
[[ 1+2 -eq 3 ]] && echo yes || echo no

#### dbl-eq-name-operand
x=7
[[ x -eq 7 ]] && echo yes || echo no

#### test-eq-name-operand-is-error
x=7
[ x -eq 7 ]
echo "st=$?"

#### test-eq-spaces-around-number
[ " 42 " -eq 42 ] && echo yes || echo no

#### test-eq-plus-sign
[ +5 -eq 5 ] && echo yes || echo no

#### test-eq-negative
[ -3 -lt 0 ] && echo neg || echo pos

#### test-eq-empty-is-error
[ "" -eq 0 ]
echo "st=$?"

#### test-lt-large-values
[ 9223372036854775807 -gt 0 ] && echo yes || echo no

#### test-eq-float-is-error
[ 1.5 -eq 1 ]
echo "st=$?"

#### dbl-lt-hex-vs-decimal
[[ 0x10 -lt 17 ]] && echo yes || echo no

#### dbl-ge-octal-negative
[[ -010 -ge -8 ]] && echo yes || echo no

#### dbl-ne-bases
[[ 8#17 -ne 0xF ]] && echo differ || echo same

#### test-ne-with-leading-zeros
test 007 -ne 7 && echo differ || echo same

#### let-octal-vs-test
(( 010 == 8 )) && echo arith-octal
[ 010 -eq 10 ] && echo test-decimal

#### dbl-eq-unset-is-zero
unset u
[[ $u -eq 0 ]] && echo zero || echo other

#### dbl-eq-empty-string-is-zero
[[ "" -eq 0 ]] && echo zero || echo other

#### dbl-eq-quoted-hex
[[ "0x10" -eq 16 ]] && echo yes || echo no

#### test-invalid-message-to-stderr
[ abc -eq 1 ] 2>/dev/null
echo "st=$?"
