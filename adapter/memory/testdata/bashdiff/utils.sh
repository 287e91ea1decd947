# Utilities scripts lean on: od, xargs, sort, tr, find, sed, grep, cut, wc, head, tail, awk.

#### od-c
printf 'ab\tc\n' | od -c

#### od-An-c
printf 'hi\n' | od -An -c

#### od-x-bytes
printf 'AB' | od -An -tx1

#### od-default-octal-words
printf 'abcd' | od

#### od-nul-bytes
printf 'a\0b' | od -An -c

#### od-An-tu1
printf '\001\377' | od -An -tu1

#### xargs-basic
printf 'a\nb\nc\n' | xargs echo

#### xargs-n1
printf 'a b c' | xargs -n1 echo item

#### xargs-0
printf 'x y\0z\0' | xargs -0 -n1 echo

#### xargs-I
printf '1\n2\n' | xargs -I{} echo 'n={}'

#### xargs-empty-input
printf '' | xargs echo ran

#### xargs-r
printf '' | xargs -r echo ran
echo "st=$?"

#### find-print0-xargs-0
mkdir d
touch 'd/a b' d/c
find d -type f -print0 | sort -z | xargs -0 -n1 echo

#### sort-z
printf 'b\0a\0c\0' | sort -z | tr '\0' '\n'

#### tr-delete-nul
printf 'a\0b\0' | tr -d '\0'; echo

#### tr-nul-to-newline
printf 'x\0y\0' | tr '\0' '\n'

#### tr-upper
echo hello | tr a-z A-Z

#### tr-squeeze
echo 'a   b    c' | tr -s ' '

#### tr-delete-class
echo 'a1b2c3' | tr -d '[:digit:]'

#### tr-complement
echo 'abc123' | tr -cd '[:alpha:]'; echo

#### sort-numeric-reverse
printf '10\n9\n100\n' | sort -nr

#### sort-unique
printf 'b\na\nb\n' | sort -u

#### sort-key-field
printf 'x 3\ny 1\nz 2\n' | sort -k2 -n

#### sort-field-separator
printf 'a,3\nb,1\n' | sort -t, -k2

#### uniq-count
printf 'a\na\nb\n' | uniq -c

#### wc-variants
printf 'one two\nthree\n' > f
wc -l < f
wc -w < f
wc -c < f

#### wc-with-filename
printf 'x\n' > f
wc -l f

#### head-tail
seq 10 > f
head -n 3 f
tail -n 2 f
tail -n +9 f

#### head-c
printf 'abcdef' | head -c 3; echo

#### cut-fields
echo 'a:b:c' | cut -d: -f2
echo 'a:b:c' | cut -d: -f1,3

#### cut-chars
echo abcdef | cut -c2-4

#### grep-basic
printf 'apple\nbanana\ncherry\n' > f
grep an f
grep -c a f
grep -v an f

#### grep-n-i
printf 'Foo\nbar\nfoo\n' | grep -ni foo

#### grep-E-alternation
printf 'cat\ndog\nbird\n' | grep -E 'cat|dog'

#### grep-o
echo 'a1b22c333' | grep -o '[0-9]*'

#### grep-r-l
mkdir -p src
echo 'TODO x' > src/a.txt
echo 'done' > src/b.txt
grep -rl TODO src

#### grep-w-x
printf 'foo\nfoobar\n' | grep -w foo
printf 'foo\nfoobar\n' | grep -x foobar

#### sed-substitute
echo 'hello world' | sed 's/world/there/'

#### sed-global-and-delete
printf 'a-b-c\nskip\n' | sed -e 's/-/+/g' -e '/skip/d'

#### sed-n-p
seq 5 | sed -n '2,3p'

#### sed-in-place
printf 'x=1\n' > conf
sed -i 's/1/2/' conf
cat conf

#### sed-capture-groups
echo 'key=value' | sed -E 's/(.*)=(.*)/\2=\1/'

#### sed-address-regex-range
printf 'a\nstart\nb\nend\nc\n' | sed -n '/start/,/end/p'

#### find-name
mkdir -p p/q
touch p/a.go p/q/b.go p/c.txt
find p -name '*.go' | sort

#### find-type-d
mkdir -p t/u/v
find t -type d | sort

#### find-maxdepth
mkdir -p m/n
touch m/1 m/n/2
find m -maxdepth 1 | sort

#### find-exec
mkdir e
echo content > e/f
find e -type f -exec cat {} \;

#### basename-dirname
basename /a/b/c.txt
basename /a/b/c.txt .txt
dirname /a/b/c.txt

#### tee-append
echo one | tee -a log >/dev/null
echo two | tee -a log >/dev/null
cat log

#### diff-same-and-different
printf 'a\nb\n' > x
printf 'a\nc\n' > y
diff x x && echo same
diff x y >/dev/null || echo differ

#### mktemp-and-rm
t=$(mktemp)
[ -f "$t" ] && echo created
rm "$t"
[ -e "$t" ] || echo removed

#### mkdir-p-and-ls
mkdir -p a/b/c
ls a/b

#### cp-mv-rm
echo data > f
cp f g
mv g h
rm f
ls
cat h

#### cat-n
printf 'a\nb\n' | cat -n

#### rev-lines
printf 'abc\n' | rev

#### awk-print-field
echo 'a b c' | awk '{print $2}'

#### awk-sum
printf '1\n2\n3\n' | awk '{s+=$1} END {print s}'

#### awk-F-and-NR
printf 'x,1\ny,2\n' | awk -F, 'NR==2 {print $1}'

#### awk-printf
echo 'pi 3.14159' | awk '{printf "%s=%.2f\n", $1, $2}'

#### seq-w
seq -w 8 10

#### nl-numbering
printf 'a\nb\n' | nl

#### paste-s
printf 'a\nb\nc\n' | paste -sd, -

#### fold-width
echo abcdefghij | fold -w 4

#### expr-arith
expr 3 + 4

#### comm-basic
printf 'a\nb\n' > x
printf 'b\nc\n' > y
comm -12 x y

#### sha256sum-stdin
printf 'abc' | sha256sum

#### base64-roundtrip
echo hello | base64 | base64 -d

#### md5sum-stdin
printf 'abc' | md5sum

#### stat-size
printf 'abcd' > f
stat -c %s f

#### du-or-ls-size
printf 'abcd' > f
ls -l f | awk '{print $5}'

#### column-t
printf 'a b\nccc d\n' | column -t

#### printf-into-xargs-sh
printf '1\n2\n' | xargs -I{} sh -c 'echo "v={}"'

#### true-in-path
/bin/true && echo ok
/usr/bin/env echo via-env
