# File descriptors above 2 (bash manual: "Redirections": duplicating, moving and closing
# descriptors, {varname} allocation, opening for reading and writing, here-documents and
# here-strings on a descriptor).

#### varname-fd-write
exec {fd}>out.txt
echo "fd>=10: $(( fd >= 10 ))"
echo hello >&$fd
exec {fd}>&-
cat out.txt

#### varname-fd-read
printf 'one\ntwo\n' > in.txt
exec {fd}<in.txt
read -r a <&$fd
read -r b <&$fd
exec {fd}<&-
echo "$a $b"

#### varname-fd-two-distinct
exec {a}>x.txt {b}>y.txt
[ "$a" != "$b" ] && echo distinct
echo x >&$a; echo y >&$b
exec {a}>&- {b}>&-
cat x.txt y.txt

#### fd3-heredoc
cat <&3 3<<EOF
from fd3
EOF

#### fd3-herestring
read -r line 3<<<"here string" <&3
echo "$line"

#### read-u-heredoc
while read -r -u 3 l; do echo "got $l"; done 3<<EOF
a
b
EOF

#### read-write-fd-keeps-content
echo abcdef > f.txt
exec 3<>f.txt
read -r -n 3 x <&3
echo XY >&3
exec 3>&-
echo "$x"; cat f.txt

#### read-write-creates-file
exec 5<>new.txt
echo made >&5
exec 5>&-
cat new.txt

#### move-fd
exec 3>moved.txt
exec 4>&3-
echo via4 >&4
echo via3 >&3 2>/dev/null || echo "fd3 closed"
exec 4>&-
cat moved.txt

#### write-to-closed-fd
exec 3>&-
echo x >&3
echo "st=$?"

#### bad-fd-redirect
echo x >&7
echo "st=$?"

#### swap-stdout-stderr
{ echo out; echo err >&2; } 3>&1 1>&2 2>&3 3>&- 2>/dev/null
echo done

#### capture-stderr-only
f() { echo to-out; echo to-err >&2; }
err=$( { f 2>&1 1>&3 3>&-; } 3>&1 )
echo "err=[$err]"

#### fd-on-compound-loop
for i in 1 2 3; do echo "line $i" >&3; done 3>loop.txt
cat loop.txt

#### fd-on-function-call
f() { echo "in f" >&4; }
f 4>func.txt
cat func.txt

#### fd-inherited-by-subshell
exec 3>sub.txt
( echo from-sub >&3 )
echo "$(echo from-cs >&3)"
exec 3>&-
cat sub.txt

#### exec-save-restore-stdin
printf 'a\nb\n' > in.txt
exec 6<&0 <in.txt
read -r first
exec 0<&6 6<&-
echo "first=$first"

#### dev-fd-path
exec 3>devfd.txt
echo through >/dev/fd/3
exec 3>&-
cat devfd.txt

#### append-fd
echo one > ap.txt
exec 3>>ap.txt
echo two >&3
exec 3>&-
cat ap.txt

#### fd-dup-input
printf 'l1\nl2\n' > in.txt
exec 3<in.txt
exec 4<&3
read -r a <&4
read -r b <&3
echo "$a $b"

#### tee-to-fd
exec 3>t.txt
echo both | tee /dev/fd/3
exec 3>&-
cat t.txt

#### heredoc-fd-and-stdin
cat - /dev/fd/3 3<<A <<B
three
A
zero
B

#### fd-redirect-in-if
if true; then echo inside >&3; fi 3>if.txt
cat if.txt

#### utility-reads-dev-stdin
echo piped | cat /dev/stdin

#### utility-writes-dev-stderr
echo logged | tee /dev/stderr 2>/dev/null

#### utility-writes-dev-stdout
echo twice | tee /dev/stdout

#### utility-reads-dev-fd-0
echo zero | wc -c /dev/fd/0 | sed 's/ .*//'

#### utility-dev-fd-not-open
echo x | tee /dev/fd/9 >/dev/null
echo "st=$?"

#### utility-reads-fd-from-file
printf 'a\nb\n' > in.txt
cat /dev/fd/3 3<in.txt | wc -l

#### dev-stdout-is-not-a-file
echo out | tee /dev/stdout >/dev/null
ls /dev/stdout >/dev/null 2>&1 && echo listed
[ -f /dev/stdout ] || echo "not a regular file"

#### save-stdin-without-input
exec 3<&0
read -r x <&3
echo "st=$? x=[$x]"
exec 3<&-

#### closed-stdin-cannot-be-duplicated
exec 0<&-
exec 4<&0
echo "st=$?"

#### fd-heredoc-3
cat <<EOF 3<&0 <&-
x
EOF
echo st=$?

#### fd-3-heredoc-read
while read -u 3 line; do echo "got $line"; done 3<<EOF
a
b
EOF

#### fd-dup-close
exec 4>out; echo a >&4; exec 4>&-; echo b >&4; echo st=$?; cat out

#### fd-bad
echo hi >&5
echo st=$?

#### fd-varname-close
exec {fd}>o.txt; echo x >&$fd; exec {fd}>&-; cat o.txt; echo $((fd>=10))

#### fd-redirect-block
{ echo a; echo b >&2; } 2>&1 | cat

#### fd-swap
{ echo out; echo err >&2; } 3>&1 1>&2 2>&3 2>/dev/null

#### fd-append
echo a > f; echo b >> f; exec 3>>f; echo c >&3; cat f

#### fd-in-function-redirect
f() { echo in-f; } > f.out
f; cat f.out

#### fd-while-redirect
printf '1\n2\n' > n
while read x; do echo "n$x"; done < n

#### exec-fd3-write-then-cat
exec 3>out.txt
echo one >&3
echo two 1>&3
exec 3>&-
cat out.txt

#### exec-fd3-append-mode
echo zero > f
exec 3>>f
echo one >&3
exec 3>&-
cat f

#### exec-fd-read-lines-in-loop
printf 'a\nb\nc\n' > in
exec 4<in
while read -r -u 4 l; do echo "got $l"; done
exec 4<&-

#### exec-fd-read-one-line-at-a-time
printf '1\n2\n3\n' > in
exec 5<in
read -r x <&5
read -r y <&5
echo "$x $y"
cat <&5

#### varname-fd-is-10-or-more
exec {fd}>f
[ "$fd" -ge 10 ] && echo ok
echo hi >&$fd
exec {fd}>&-
cat f

#### varname-fd-read-more
echo content > f
exec {rfd}<f
read -r line <&$rfd
echo "$line"
exec {rfd}<&-

#### read-write-fd-on-new-file
exec 3<>rw.txt
echo hello >&3
exec 3>&-
cat rw.txt

#### read-write-fd-reads-existing
printf 'abc\n' > rw.txt
exec 3<>rw.txt
read -r l <&3
echo "$l"
exec 3>&-

#### fd-closed-write-error-status
exec 3>&-
echo hi >&3
echo "st=$?"

#### fd-dup-to-stdout-in-subshell
( exec 3>&1; echo via3 >&3 )

#### fd-redirect-stderr-to-fd3-to-file
exec 3>err.txt
ls /nonexistent-dir 2>&3
exec 3>&-
[ -s err.txt ] && echo has-error

#### fd-swap-through-3
{ echo out; echo err >&2; } 3>&1 1>&2 2>&3 2>/dev/null
echo "st=$?"

#### fd-in-while-loop-redirect-input
printf 'x\ny\n' > in
while read -r a <&3; do echo "[$a]"; done 3<in

#### fd-on-brace-group-output
{ echo a >&4; echo b >&4; } 4>g
cat g

#### fd-numbers-above-9
exec 12>f12
echo twelve >&12
exec 12>&-
cat f12

#### fd-duplicate-input-from-heredoc
exec 3<<EOF
from heredoc
EOF
cat <&3

#### fd-move-with-dash
exec 3>f
exec 4>&3-
echo via4 >&4
echo x >&3 2>/dev/null || echo closed3
exec 4>&-
cat f

#### fd-dev-fd-3
exec 3>f
echo hi > /dev/fd/3
exec 3>&-
cat f

#### fd-inherited-by-function
w() { echo "in w" >&3; }
exec 3>f
w
exec 3>&-
cat f

#### fd-redirection-order-matters
ls /nonexistent 2>&1 >/dev/null | grep -c . 

#### exec-stdout-to-file-then-restore
exec 3>&1
exec >log.txt
echo into-log
exec 1>&3 3>&-
echo back
cat log.txt

#### exec-stderr-to-stdout
exec 2>&1
ls /nonexistent-x | wc -l >/dev/null
echo err-merged >&2

#### fd-read-in-function-with-local-fd
readfirst() { local l; read -r l <&"$1"; echo "$l"; }
printf 'q\nr\n' > in
exec {f}<in
readfirst "$f"
readfirst "$f"
exec {f}<&-

#### fd-close-stdin-for-command
cat <&- 2>/dev/null
echo "st=$?"

#### fd-heredoc-on-fd-3-with-read-u
read -r -u 3 a <<EOF 3<&0
first
EOF
echo "[$a]"
