# Indexed and associative arrays.

#### array-literal
a=(one two three)
echo ${a[0]} ${a[2]} ${#a[@]}

#### array-all-quoted
a=('x y' z)
printf '[%s]\n' "${a[@]}"

#### array-star-joined
a=(a b c)
IFS=-
echo "${a[*]}"

#### array-append
a=(1)
a+=(2 3)
echo ${a[@]}

#### array-assign-index
a=()
a[3]=x
echo ${#a[@]} ${!a[@]}

#### array-negative-index
a=(1 2 3)
echo ${a[-1]} ${a[-2]}

#### array-unset-element
a=(1 2 3)
unset 'a[1]'
echo ${a[@]} ${#a[@]} ${!a[@]}

#### array-slice
a=(a b c d e)
echo ${a[@]:1:3}

#### array-keys
a=(x y z)
echo ${!a[@]}

#### array-element-default
a=()
echo ${a[0]:-empty}

#### array-scalar-is-element-zero
a=(first second)
echo $a

#### array-from-command
a=($(echo 1 2 3))
echo ${#a[@]}

#### array-copy
a=(1 'b c')
b=("${a[@]}")
echo ${#b[@]} "${b[1]}"

#### array-length-of-element
a=(hello)
echo ${#a[0]}

#### array-in-loop-with-index
a=(x y)
for ((i=0; i<${#a[@]}; i++)); do echo "$i:${a[i]}"; done

#### array-join-with-ifs-function
join() { local IFS=$1; shift; echo "$*"; }
join , a b c

#### assoc-basic
declare -A m
m[one]=1
m[two]=2
echo ${m[one]} ${m[two]} ${#m[@]}

#### assoc-literal
declare -A m=([a]=x [b]=y)
echo ${m[a]}${m[b]}

#### assoc-keys-sorted
declare -A m=([b]=2 [a]=1 [c]=3)
for k in "${!m[@]}"; do echo "$k=${m[$k]}"; done | sort

#### assoc-key-with-space
declare -A m
m['a b']=spaced
echo "${m['a b']}"

#### assoc-unset-key
declare -A m=([a]=1 [b]=2)
unset 'm[a]'
echo ${#m[@]} ${!m[@]}

#### assoc-exists-check
declare -A m=([a]=1)
[[ -v m[a] ]] && echo has-a
[[ -v m[z] ]] || echo no-z

#### assoc-counting
declare -A count
for w in a b a c a b; do count[$w]=$(( ${count[$w]:-0} + 1 )); done
for k in a b c; do echo "$k ${count[$k]}"; done

#### assoc-plus-equals
declare -A m
m[k]+=a
m[k]+=b
echo ${m[k]}

#### array-plus-equals-string
a=(x)
a+=y
echo ${a[@]}

#### array-sparse-iteration
a=([2]=two [5]=five)
for i in "${!a[@]}"; do echo "$i ${a[$i]}"; done

#### declare-a
declare -a arr=(p q)
echo ${arr[1]}

#### declare-p-array
a=(1 2)
declare -p a

#### declare-p-assoc
declare -A m=([k]=v)
declare -p m

#### declare-p-scalar
s='x y'
declare -p s

#### array-element-with-arith-index
a=(10 20 30)
i=0
echo ${a[i+2]} ${a[$((i+1))]}

#### array-empty-expansion
a=()
set -- "${a[@]}"
echo $#

#### array-in-double-quotes-with-prefix
a=(x y)
printf '[%s]\n' "pre-${a[@]}-post"

#### array-unset-whole
a=(1 2)
unset a
echo ${#a[@]}

#### array-pattern-remove-each
a=(file1.txt file2.txt)
echo ${a[@]%.txt}

#### array-replace-each
a=(ab cb)
echo ${a[@]/b/X}

#### array-length-after-append-loop
a=()
for i in 1 2 3 4; do a+=($i); done
echo ${#a[@]}

#### array-contains-check
a=(red green blue)
for c in "${a[@]}"; do [[ $c == green ]] && echo found; done

#### mapfile-from-heredoc
mapfile -t lines <<END
first
second
END
echo ${#lines[@]} ${lines[0]}

#### array-sort-via-printf
a=(c a b)
sorted=($(printf '%s\n' "${a[@]}" | sort))
echo ${sorted[@]}

#### array-reverse
a=(1 2 3)
for ((i=${#a[@]}-1; i>=0; i--)); do printf '%s ' ${a[i]}; done; echo

#### declare-i-integer
declare -i n=5
n+=3
n=n*2
echo $n

#### declare-lowercase-uppercase
declare -l lo=HeLLo
declare -u up=HeLLo
echo $lo $up

#### local-array-in-function
f() { local -a a=(1 2); a+=(3); echo ${#a[@]}; }
f

#### assoc-iterate-values
declare -A m=([x]=1 [y]=2)
s=0
for v in "${m[@]}"; do s=$((s+v)); done
echo $s

#### array-index-from-variable-string
a=(zero one two)
idx=2
echo ${a[idx]} ${a[$idx]}

#### nameref
declare -n ref=target
target=orig
ref=changed
echo $target

#### array-assign-list-with-indices
a=([0]=a [2]=c)
echo "${a[@]}" ${#a[@]}
