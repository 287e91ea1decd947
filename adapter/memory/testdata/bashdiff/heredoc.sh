# Here-documents.

#### basic-heredoc
cat <<END
line one
line two
END

#### heredoc-expands
name=world
cat <<END
hello $name
sum $((1+2))
cmd $(echo sub)
END

#### quoted-delimiter-no-expansion
name=world
cat <<'END'
hello $name
$(echo no)
END

#### double-quoted-delimiter
x=1
cat <<"END"
x=$x
END

#### partially-quoted-delimiter
x=1
cat <<E"N"D
x=$x
END

#### dash-strips-tabs
cat <<-END
	indented
		twice
	END

#### heredoc-backslash-escapes
cat <<END
dollar \$x backslash \\ backtick \` plain \n
END

#### heredoc-backslash-newline
cat <<END
joined \
line
END

#### heredoc-into-while
while read -r a b; do echo "$b $a"; done <<END
1 one
2 two
END

#### heredoc-into-variable
v=$(cat <<END
captured
text
END
)
echo "$v"

#### two-heredocs-one-line
cat <<A; cat <<B
from a
A
from b
B

#### heredoc-with-pipe
cat <<END | tr a-z A-Z
shout
END

#### heredoc-to-file
cat > conf.txt <<END
key=value
END
cat conf.txt

#### heredoc-empty
cat <<END
END
echo "after"

#### heredoc-in-function
f() {
  cat <<END
in function $1
END
}
f arg

#### heredoc-in-loop
for i in 1 2; do
  cat <<END
iter $i
END
done

#### heredoc-quotes-kept
cat <<END
"double" 'single'
END

#### heredoc-delimiter-with-spaces-after
cat <<END
text
END  
END

#### heredoc-special-chars
cat <<'END'
a | b & c ; d > e
END

#### heredoc-to-sh
bash <<'END'
echo from child $((2*3))
END

#### heredoc-read-multiple
read -r first <<END
only first line
second
END
echo "$first"

#### heredoc-with-tabs-kept
printf 'cat <<END\n\tkept\nEND\n' > s.sh
bash s.sh | od -An -c

#### heredoc-nested-command-subst
cat <<END
$(cat <<INNER
inner
INNER
)
END

#### heredoc-arith-and-array
a=(x y z)
cat <<END
${a[1]} ${#a[@]} $(( ${#a[@]} * 2 ))
END

#### heredoc-dash-quoted
cat <<-'END'
	$notexpanded
	END

#### heredoc-sed
sed 's/a/b/' <<END
banana
END

#### heredoc-grep-count
grep -c x <<END
x1
y
x2
END

#### heredoc-wc
wc -l <<END
1
2
3
END

#### here-string-multiline
cat <<< "a
b"

#### here-string-adds-newline
cat <<< x | od -An -c

#### heredoc-unterminated
cat <<END
no end

#### dash-tabs
cat <<-EOF
	a
		b
	EOF

#### two-heredocs-one-line-2
cat <<A; cat <<B
one
A
two
B

#### heredoc-two-fds
cat <<A 3<<B
a
A
b
B

#### heredoc-in-cmdsubst
x=$(cat <<EOF
v=$((1+2))
EOF
)
echo "$x"

#### heredoc-pipe
cat <<EOF | tr a-z A-Z
hello
EOF

#### heredoc-quoted-part
x=1
cat <<"E"OF
$x
EOF

#### heredoc-backslash
x=1
cat <<EOF
a\$x \\ \`
$x\
continued
EOF

#### heredoc-in-function-2
f() {
  cat <<EOF
in $1
EOF
}
f arg

#### heredoc-in-loop-2
for i in 1 2; do
  cat <<EOF
i=$i
EOF
done

#### heredoc-herestring-var
v='a b'
cat <<< "$v"
cat <<< $v
read -r x <<< "  lead"; echo "[$x]"

#### heredoc-empty-2
cat <<EOF
EOF
echo done

#### heredoc-while-read
while read -r a b; do echo "$b $a"; done <<EOF
1 x
2 y
EOF

#### heredoc-redirect-to-file
cat > f.txt <<EOF
data
EOF
cat f.txt

#### heredoc-cmd-subst-inside
cat <<EOF
$(echo sub) `echo back`
EOF

#### heredoc-single-quote-inside
cat <<EOF
it's "quoted"
EOF

#### heredoc-tab-strip
cat <<-END
	indented
		twice
	END

#### heredoc-quoted-delim-no-expansion
x=1
cat <<'END'
$x $(echo no) `echo no`
END

#### heredoc-partial-quote-delim
x=1
cat <<E"N"D
$x
END

#### heredoc-backslash-newline-joined
cat <<END
a\
b
END

#### heredoc-backslash-dollar
cat <<END
\$x \\ \a
END

#### heredoc-two-on-one-line
cat <<A; cat <<B
first
A
second
B

#### heredoc-in-function-more
f() {
  cat <<END
in $1
END
}
f arg

#### heredoc-to-while-read
while read -r l; do echo "[$l]"; done <<END
one
two
END

#### heredoc-with-command-subst
cat <<END
$(echo inner)
END

#### heredoc-into-variable-more
v=$(cat <<END
multi
line
END
)
echo "$v"

#### heredoc-in-pipeline
cat <<END | tr a-z A-Z
shout
END

#### herestring-with-var-and-newline
v="a b"
cat <<< "$v"
wc -l <<< "x"

#### heredoc-empty-body
cat <<END
END
echo "st=$?"

#### heredoc-delimiter-with-trailing-space-not-end
cat <<END
END 
END

#### heredoc-in-while-loop-body
for i in 1 2; do
  cat <<END
item $i
END
done

#### heredoc-with-tab-strip-and-expansion
v=val
cat <<-END
	v=$v
	END

#### heredoc-redirect-to-file-more
cat > f <<END
line1
END
cat f

#### heredoc-as-function-input
f() { while read -r l; do echo "f:$l"; done; }
f <<END
a
b
END

#### heredoc-with-arith-and-escapes
cat <<END
sum=$((2+3)) \`not\` \$HOME
END
