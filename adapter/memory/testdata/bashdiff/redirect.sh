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

#### order-2to1-then-file
{ echo out; echo err >&2; } 2>&1 >f.txt | cat; echo "file: $(cat f.txt)"

#### amp-greater
{ echo o; echo e >&2; } &> both.txt; cat both.txt

#### amp-append
echo a &> x.txt; echo b &>> x.txt; cat x.txt

#### greater-amp-file
echo hi >& y.txt; cat y.txt

#### close-stdout
echo hi >&-; echo st=$?

#### ambiguous
x="a b"; echo hi > $x; echo st=$?; ls

#### ambiguous-unset
echo hi > $nothing; echo st=$?

#### glob-target
touch only.one; echo data > only.*; cat only.one

#### to-directory
mkdir d; echo hi > d; echo st=$?

#### missing-input
cat < /nonexistent/x; echo st=$?; echo next

#### exec-restore
exec 3>&1; exec >o.txt; echo to-file; exec >&3 3>&-; echo back; cat o.txt

#### compound-redirect-in
{ read a; read b; } <<EOF
1
2
EOF
echo "$a$b"

#### if-redirect
if true; then echo in-if; fi > g.txt; cat g.txt

#### redirect-order-dup
ls /nonexistent 2>/dev/null >&2; echo st=$?

#### herestring-fd
cat 3<<<"three" <&3

#### redirect-builtin-error
cd /nonexistent 2>/dev/null || echo failed

#### append-creates
rm -f new.txt; echo a >> new.txt; cat new.txt

#### input-output-same-file
echo content > s.txt; cat < s.txt > t.txt; cat t.txt

#### dev-null-read-2
cat < /dev/null; echo st=$?

#### stderr-to-stdout-in-cmdsubst
x=$(ls /nonexistent 2>&1); [ -n "$x" ] && echo captured

#### redirect-stdout-and-stderr-ampersand
{ echo out; echo err >&2; } &> both
sort both

#### redirect-append-both
echo a &>> log
echo b &>> log
cat log

#### redirect-stderr-pipe
{ echo err >&2; } |& cat

#### redirect-input-from-missing-file
cat < nope
echo "st=$?"

#### redirect-to-directory-error
mkdir -p d
echo x > d
echo "st=$?"

#### redirect-noclobber-force
set -C
echo a > f
echo b > f 2>/dev/null || echo refused
echo c >| f
cat f

#### redirect-on-compound-while
i=0
while [ $i -lt 2 ]; do echo $i; i=$((i+1)); done > out
cat out

#### redirect-before-command-name
> f echo hi
cat f

#### redirect-multiple-outputs-last-wins
echo hi > a > b
echo "[$(cat a)] [$(cat b)]"

#### redirect-in-cmdsubst-stderr
x=$(echo err >&2 2>/dev/null; echo out)
echo "$x"

#### redirect-fd-to-fd-then-file
{ echo o; echo e >&2; } 2>&1 > f | cat
cat f

#### redirect-heredoc-and-output-same-command
cat <<END > out
body
END
cat out

#### redirect-input-and-output-same-file-truncates
echo data > f
cat < f > f
wc -c < f

#### redirect-append-then-read
echo 1 >> f
echo 2 >> f
wc -l < f

#### redirect-subshell-output
( echo a; echo b ) > f
cat f

#### redirect-function-definition-with-redirect
f() { echo in-f; } > f.out
f
cat f.out

#### redirect-glob-target-single-match
touch only1.log
echo x > only*.log
cat only1.log

#### redirect-empty-var-target
t=
echo x > $t
echo "st=$?"

#### redirect-stdin-from-dev-null
cat < /dev/null
echo "st=$?"

#### redirect-close-stdout-error
echo hi >&-
echo "st=$?"
