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
