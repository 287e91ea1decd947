# Variables holding expressions in arithmetic (bash manual, "Shell Arithmetic": "The value of a
# variable is evaluated as an arithmetic expression when it is referenced"; a null or unset
# variable is 0), their recursion, and the errors of that evaluation.

#### var-holds-sum
e=1+2
echo $((e+3))

#### var-holds-product-precedence
e=1+2
echo $((e*3))

#### dollar-var-is-textual
e=1+2
echo $(($e*3))

#### chain-of-names
a=b b=c c=5
echo $((a+1))

#### chain-with-expression
a=b+1 b=c*2 c=3
echo $((a))

#### self-reference-is-error
a=a
echo $((a+1))
echo "st=$?"

#### mutual-recursion-is-error
a=b b=a
echo $((a))
echo "st=$?"

#### name-holding-assignment-evaluates
x='y=4'
echo $((x)) "$y"

#### name-holding-invalid-expression
x='1 +'
echo $((x))
echo "st=$?"

#### name-holding-word
x=hello
hello=9
echo $((x))

#### name-holding-unset-name
x=nosuch
echo $((x*2))

#### name-holding-empty
x=
echo $((x+1))

#### name-holding-spaces
x='  7  '
echo $((x*2))

#### name-holding-hex
x=0x10
echo $((x+1))

#### name-holding-octal
x=010
echo $((x))

#### name-holding-base
x=2#111
echo $((x))

#### name-holding-negative
x=-3
echo $((x*x))

#### let-uses-expression-var
e='2*3'
let r=e+1
echo "$r"

#### arith-command-expression-var
e='4>3'
(( e )) && echo true

#### increment-expression-var-is-error
e=1+2
(( e++ ))
echo "st=$? e=$e"

#### array-element-holding-expression
a=(1+1 2*5)
echo $((a[0] + a[1]))

#### index-holding-expression
i=1+1
a=(x y z)
echo "${a[i]}"

#### expression-var-in-test-dbl-bracket
e=2+3
[[ e -eq 5 ]] && echo yes

#### expression-var-in-for-arith
n=2+1
for ((i=0; i<n; i++)); do echo "$i"; done

#### deep-chain
v1=v2 v2=v3 v3=v4 v4=v5 v5=1
echo $((v1))

#### ternary-in-var
t='1?2:3'
echo $((t))

#### comma-in-var
c='1,2'
echo $((c))

#### declare-i-evaluates-on-assignment
declare -i n
e=3*3
n=e
echo "$n"

#### set-u-with-expression-var-unset-inner
set -u
x=nosuch
echo $((x+1))
echo "st=$?"
