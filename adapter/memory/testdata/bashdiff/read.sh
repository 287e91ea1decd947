# The read builtin.

#### read-one-var
read -r x <<< 'hello world'
echo "[$x]"

#### read-two-vars
read -r a b <<< 'one two three'
echo "[$a][$b]"

#### read-more-vars-than-words
read -r a b c <<< 'one'
echo "[$a][$b][$c]"

#### read-default-reply
read -r <<< 'into reply'
echo "[$REPLY]"

#### read-reply-keeps-spaces
read <<< '  spaced  '
echo "[$REPLY]"

#### read-backslash-without-r
read x <<< 'a\tb\\c'
echo "[$x]"

#### read-backslash-with-r
read -r x <<< 'a\tb\\c'
echo "[$x]"

#### read-line-continuation
printf 'a\\\nb\n' > f
read x < f
echo "[$x]"

#### read-eof-status
read -r x < /dev/null
echo "st=$?"

#### read-partial-line-status
printf 'partial' > f
read -r x < f
echo "st=$? [$x]"

#### read-n-chars
read -n 3 x <<< 'abcdef'
echo "[$x]"

#### read-N-chars
printf 'a\nbcd' > f
read -N 3 x < f
echo "[$x]" | od -An -c

#### read-d-delimiter
read -d , x <<< 'one,two'
echo "[$x]"

#### read-d-empty-nul
printf 'a b\0c\0' > f
while IFS= read -r -d '' item; do echo "[$item]"; done < f

#### find-print0-read-loop
mkdir -p d/sub
touch 'd/a file' d/sub/b
find d -type f -print0 | sort -z | while IFS= read -r -d '' f; do echo "<$f>"; done

#### read-a-array
read -r -a arr <<< 'x y z'
echo ${#arr[@]} ${arr[2]}

#### read-a-with-ifs
IFS=, read -r -a arr <<< 'a,b,,c'
echo ${#arr[@]} "[${arr[2]}]"

#### read-t-timeout-data
read -t 1 x <<< 'quick'
echo "st=$? [$x]"

#### read-t-zero
read -t 0 <<< 'x'
echo "st=$?"

#### read-u-fd
exec 3<<< 'via fd 3'
read -r -u 3 line
echo "[$line]"

#### read-p-prompt-noninteractive
read -p 'prompt> ' x <<< 'answer' 2>/dev/null
echo "[$x]"

#### read-s-silent
read -s x <<< 'secret'
echo "[$x]"

#### read-from-pipe-in-subshell
echo piped | { read -r x; echo "[$x]"; }

#### read-lost-after-pipe
x=old
echo new | read -r x
echo "[$x]"

#### read-lastpipe
shopt -s lastpipe
x=old
echo new | read -r x
echo "[$x]"

#### read-ifs-colon-passwd-like
IFS=: read -r user _ uid _ <<< 'root:x:0:0:root:/root:/bin/bash'
echo "$user $uid"

#### read-trailing-ifs-whitespace
IFS=' ' read -r a b <<< 'x y   '
echo "[$a][$b]"

#### read-last-var-keeps-separators
IFS=: read -r a b <<< 'a:b:c:'
echo "[$a][$b]"

#### read-multiple-lines-with-loop
printf 'a 1\nb 2\n' | while read -r k v; do echo "$v$k"; done

#### read-empty-line
printf '\nnext\n' > f
{ read -r a; read -r b; } < f
echo "[$a][$b]"

#### read-invalid-option
read -Z x 2>/dev/null <<< x
echo "st=$?"

#### read-n-with-newline-first
read -n 5 x <<< $'ab\ncd'
echo "[$x]"

#### read-d-newline-explicit
read -d $'\n' x <<< 'line'
echo "[$x]"

#### read-d-missing-delimiter-status
read -d , x <<< 'nocomma'
echo "st=$? [$x]"

#### read-mapfile
printf 'l1\nl2\nl3\n' > f
mapfile -t lines < f
echo ${#lines[@]} "${lines[1]}"

#### readarray-alias
printf 'x\ny\n' | { readarray -t a; echo "${a[@]}"; }

#### read-nameref-free-var-name-invalid
read -r 1abc <<< x 2>/dev/null
echo "st=$?"

#### read-r-backslash-at-end
read -r x <<< 'ends\'
echo "[$x]"

#### read-ifs-newline
IFS=$'\n' read -r a b <<< 'one two'
echo "[$a][$b]"

#### read-in-while-with-index
i=0
while read -r line; do i=$((i+1)); echo "$i:$line"; done <<END
alpha
beta
END

#### read-from-command-subst-file
echo 'file content' > f
read -r x < <(cat f) 2>/dev/null || read -r x < f
echo "[$x]"

#### read-n1-loop-chars
s=abc
while read -n1 c; do echo "[$c]"; done <<< "$s"

#### read-delim-empty
printf 'a\0b\0' | while IFS= read -r -d '' x; do echo "[$x]"; done

#### read-n
read -n 2 x <<< abcd; echo $x

#### read-N-newline
printf 'a\nbc' | { read -N 3 x; printf '[%s]\n' "$x"; }

#### read-eof-status-2
printf 'partial' | { read x; echo "st=$? x=$x"; }

#### read-ifs-backslash
IFS=: read a b <<< 'x\:y:z'; echo "$a|$b"

#### read-trailing-ifs-ws
IFS=' ' read a b <<< 'one two  '; echo "[$a][$b]"

#### read-more-vars-than-fields
read a b c <<< 'x'; echo "[$a][$b][$c]"

#### read-ifs-nonws-trailing
IFS=: read a b <<< 'x:y:'; echo "[$a][$b]"

#### read-ifs-nonws-trailing-2
IFS=: read a b <<< 'x:y::'; echo "[$a][$b]"

#### read-ifs-mixed
IFS=' :' read a b c <<< ' x : y z'; echo "[$a][$b][$c]"

#### split-ifs-mixed-lead
IFS=' :'; x=' :a'; set -- $x; echo $#; printf '[%s]' "$@"; echo

#### split-trailing-nonws
IFS=:; x='a:b:'; set -- $x; echo $#

#### split-double-nonws
IFS=:; x='a::b'; set -- $x; echo $#

#### split-only-nonws
IFS=:; x=':'; set -- $x; echo $#; x='::'; set -- $x; echo $#
