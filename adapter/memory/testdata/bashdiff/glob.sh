# Pathname expansion (globbing).

#### star
touch b.txt a.txt c.log
echo *.txt

#### question-mark
touch a1 a2 a10
echo a?

#### bracket-class
touch x1 x2 x3 xa
echo x[12]
echo x[!12]
echo x[^12]

#### bracket-range
touch fa fb fc fd
echo f[b-c]

#### posix-class
touch A1 b2 C3
echo [[:upper:]]*

#### no-match-stays-literal
echo *.nomatch

#### nullglob
shopt -s nullglob
set -- *.nomatch
echo $#

#### failglob
shopt -s failglob
echo *.nomatch 2>/dev/null
echo "st=$?"

#### hidden-files-not-matched
touch .hidden visible
echo *

#### dotglob
touch .hidden visible
shopt -s dotglob
echo *

#### explicit-dot-matches-hidden
touch .h1 .h2 v
echo .h*

#### glob-in-subdir
mkdir -p d1 d2
touch d1/x d2/y
echo d*/*

#### glob-directories-only
mkdir -p dir1 dir2
touch file1
echo */

#### globstar
shopt -s globstar
mkdir -p a/b/c
touch a/1.md a/b/2.md a/b/c/3.md
echo **/*.md

#### globstar-off
mkdir -p a/b
touch a/b/x.md a/y.md
echo **/*.md

#### extglob-at
shopt -s extglob
touch a.jpg b.png c.gif
echo *.@(jpg|png)

#### extglob-not
shopt -s extglob
touch a.jpg b.png c.gif
echo !(*.jpg)

#### extglob-plus-star
shopt -s extglob
touch aaa ab b
echo +(a)

#### glob-sorted
touch c b a C B A
echo *

#### glob-quoted-part
touch 'a b.txt' ab.txt
echo "a b"*

#### glob-in-variable-quoted
touch g1 g2
p='g*'
echo "$p"
echo $p

#### glob-in-assignment-no-expand
touch g1 g2
x=g*
echo "$x"

#### glob-in-array-assignment
touch g1 g2
arr=(g*)
echo ${#arr[@]}

#### glob-escaped-star
touch 'star*' starx
echo star\*

#### glob-case-sensitive
touch Abc abc
echo a*

#### nocaseglob
touch Abc abc
shopt -s nocaseglob
echo a*

#### glob-with-brace
touch a.c a.h a.o
echo a.{c,h}

#### glob-bracket-special
touch 'a]' a-
echo a[]]
echo a[-]

#### glob-path-slash-not-matched-by-star
mkdir -p d
touch d/f
echo *f

#### test-pattern-in-double-brackets
[[ abc == a* ]] && echo match
[[ abc == "a*" ]] || echo nomatch

#### case-glob-patterns
for f in a.txt b.md c; do
  case $f in
    *.txt|*.md) echo "doc $f";;
    *) echo "other $f";;
  esac
done

#### glob-count-files
touch f1 f2 f3
files=(f*)
echo "${#files[@]} files"

#### glob-no-match-loop-guard
for f in *.xyz; do [ -e "$f" ] || continue; echo "$f"; done
echo end

#### glob-set-f-noglob
touch a1
set -o noglob
echo a*
set +o noglob
echo a*

#### glob-dot-dot-not-matched
touch .x
shopt -s dotglob
echo .*

#### glob-char-class-digit
touch f1 fa f22
echo f[[:digit:]]

#### glob-trailing-slash-file
touch plain
echo plain*/

#### glob-absolute-root-tmp-free
mkdir -p sub
touch sub/one sub/two
cd sub && echo *

#### ls-glob-sorted
touch b a c
ls *
