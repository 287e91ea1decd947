# Redirections and file descriptors.

#### stdout-to-file
echo hi > out.txt
cat out.txt

#### append
echo a > f; echo b >> f
cat f

#### stdin-from-file
printf 'x\ny\n' > in.txt
wc -l < in.txt

#### stderr-to-devnull
ls /nonexistent-dir 2>/dev/null
echo "st=$?"

#### stderr-to-stdout
{ echo out; echo err >&2; } 2>&1 | sort

#### both-to-file
{ echo out; echo err >&2; } > all.txt 2>&1
sort all.txt

#### ampersand-greater
{ echo out; echo err >&2; } &> all.txt
sort all.txt

#### order-matters
{ echo err >&2; } 2>&1 >/dev/null | cat

#### redirect-to-fd3
exec 3>out.txt
echo hi >&3
exec 3>&-
cat out.txt

#### read-from-fd3
printf 'l1\nl2\n' > in.txt
exec 3<in.txt
read -r a <&3
read -r b <&3
exec 3<&-
echo "$a $b"

#### fd-dup-in-command
echo to3 3>&1 1>&2 2>&3 2>/dev/null

#### fd4-block
{ echo one >&4; echo two >&4; } 4>f4.txt
cat f4.txt

#### while-read-fd3
printf 'a\nb\n' > list.txt
while read -r line <&3; do echo "got $line"; done 3< list.txt

#### noclobber-refuses
echo first > f
set -o noclobber
echo second > f 2>/dev/null
echo "st=$?"
cat f

#### noclobber-force
echo first > f
set -C
echo second >| f
cat f

#### noclobber-new-file-ok
set -o noclobber
echo new > fresh.txt
cat fresh.txt

#### noclobber-append-ok
echo a > f
set -o noclobber
echo b >> f
cat f

#### redirect-missing-file
cat < missing.txt 2>/dev/null
echo "st=$?"

#### redirect-failure-skips-command
echo notrun < missing.txt 2>/dev/null
echo "st=$?"

#### redirect-in-middle
echo a > f b
cat f

#### redirect-before-command
> f echo front
cat f

#### truncate-with-colon
echo data > f
: > f
wc -c < f

#### truncate-bare-redirect
echo data > f
> f
wc -c < f

#### here-string
cat <<< 'from here string'

#### here-string-var
v='a b'
tr ' ' '-' <<< "$v"

#### redirect-block
{ echo a; echo b; } > f
cat f

#### redirect-loop-output
for i in 1 2 3; do echo $i; done > f
cat f

#### redirect-loop-input
printf '1\n2\n' > f
while read -r n; do echo "n=$n"; done < f

#### dev-stdout
echo x > /dev/stdout

#### dev-stderr-silenced
echo x > /dev/stderr 2>/dev/null
echo done

#### exec-redirect-stdout
exec > out.txt
echo captured
exec >&-
cat out.txt >&2

#### exec-save-restore-stdout
exec 5>&1
exec > f
echo infile
exec 1>&5 5>&-
echo back
cat f

#### redirect-append-fd
exec 3>>log.txt
echo one >&3
echo two >&3
exec 3>&-
cat log.txt

#### read-write-fd
echo hello > f
exec 3<>f
read -r w <&3
exec 3>&-
echo "$w"

#### subshell-redirect
( echo sub ) > f
cat f

#### cat-multiple-redirects
echo one > a; echo two > b
cat a b > c
cat c

#### redirect-to-directory-fails
mkdir d
echo x > d 2>/dev/null
echo "st=$?"

#### stderr-only-pipe
{ echo out; echo err >&2; } 2>&1 >/dev/null | tr a-z A-Z

#### pipe-ampersand
{ echo out; echo err >&2; } |& sort

#### dev-null-read
read -r x < /dev/null
echo "st=$? [$x]"

#### tee-to-file
echo tee-me | tee t.txt
cat t.txt

#### fd-close-stdout-write-error
( echo x >&- ) 2>/dev/null
echo "st=$?"

#### redirect-with-variable-name
f=dyn.txt
echo dyn > "$f"
cat dyn.txt

#### function-with-redirect
f() { echo infunc; }
f > out.txt
cat out.txt

#### function-body-redirect
f() { echo body; } > fb.txt
f
cat fb.txt

#### redirect-number-needs-no-space
echo err 2>/dev/null 1>&2

#### heredoc-to-fd3-read
exec 3<<EOF3
from fd3
EOF3
cat <&3
