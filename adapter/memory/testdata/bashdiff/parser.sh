# What the parser accepts and the exit statuses of errors: scripts bash runs, syntax errors
# (status 2, the lines before the error have run), fatal expansion errors under bash -c (bash
# manual: "Shell Syntax", "Exit Status", "Shell Parameter Expansion", "Bash POSIX Mode").

#### heredoc-dollar-delimiter
cat <<$EOF
hi
$EOF
echo st=$?

#### heredoc-quoted-dollar-delimiter
cat <<'$X'
a $HOME
$X

#### arith-command-dynamic-lvalue
foo=1
(( x$foo = 42 ))
echo "$x1"

#### arith-dynamic-name-in-expansion
i=2
echo $(( v$i = 7 )) "$v2"

#### syntax-error-status-2
echo before
if then fi

#### syntax-error-later-line-runs-earlier
echo first
echo second
fi
echo never

#### syntax-error-unclosed-quote
echo start
echo "unterminated

#### syntax-error-unexpected-done
echo a
done

#### syntax-error-in-eval-continues
eval 'if then'
echo "st=$?"

#### syntax-error-in-subshell-string
bash -c 'echo in; (' 
echo "st=$?"

#### syntax-error-in-function-body-defined-later
f() { echo f; }
f
case x in
echo no

#### bad-substitution-status
echo before
echo "${x!!}"
echo after

#### bad-substitution-in-function-continues
f() { echo "${a:b:c:d}"; }
f
echo after=$?

#### unset-question-fatal-127
echo "${nope?it is unset}"
echo after

#### set-u-fatal-127
set -u
echo "$nothere"
echo after

#### set-u-in-arith-fatal
set -u
echo $(( nothere + 1 ))
echo after

#### arith-error-exits-1
echo $((1 +))
echo after

#### arith-error-in-command-continues
(( 1 + ))
echo "st=$?"

#### arith-float-error
echo $((1.5 + 1))
echo after

#### arith-in-if-condition-error
if (( 2 ** -1 )); then echo yes; else echo no; fi
echo after

#### break-outside-loop-status
break
echo "st=$?"

#### continue-outside-loop-status
continue 2
echo "st=$?"

#### return-outside-function-status
return 3
echo "st=$?"

#### reserved-word-as-argument
echo if then else fi do done case esac
echo { }

#### function-keyword-forms
function a { echo a; }
function b() { echo b; }
c() ( echo c )
a; b; c

#### nested-command-substitution-case
x=$(case y in y) echo yes ;; esac)
echo "$x"

#### comment-after-word
echo a#b # comment
echo '#' \# "#"

#### line-continuation
echo one \
two \
three

#### semicolons-and-newlines-in-compound
if true
then echo t
fi; while false; do :; done; for i in 1 2; do echo $i; done

#### empty-command-substitution
x=$( )
echo "[$x]" $?

#### redirect-before-command
>out.txt echo hi
<out.txt cat

#### assignment-only-status-from-cmdsubst
x=$(exit 3)
echo $?

#### double-semicolon-fallthrough
case a in
  a) echo a ;&
  b) echo b ;;
  c) echo c ;;
esac
case b in
  b) echo b2 ;;&
  *) echo any ;;
esac

#### not-a-valid-identifier-status
declare 1x=2
echo "st=$?"
export 'a b=1'
echo "st=$?"

#### command-not-found-continues
nosuchcommand_xyz
echo "st=$?"

#### exit-status-of-failed-redirect
cat </nonexistent/file
echo "st=$?"
echo hi >/nonexistent/dir/file
echo "st=$?"

#### syntax-error-after-exit-never-reached
echo a
exit 3
fi

#### syntax-error-exit-trap-runs
trap 'echo bye' EXIT
echo a
done

#### arith-error-two-lines
echo $((1 +))
echo mid
echo $((2 *))
echo end

#### arith-error-rest-of-line-abandoned
echo a; echo $((3 -)); echo b
echo c

#### bad-substitution-then-status
echo "${x!!}"
echo "st=$?"

#### arith-error-inside-multiline-if
if true; then
  echo $((1 +))
fi
echo after

#### syntax-error-in-sourced-eval-string-keeps-going
eval 'echo $((1 +))'
echo "st=$?"

#### eval-arith-error-line-then-next
eval 'echo a
echo $((2 *))
echo b'
echo "st=$?"

#### eval-real-syntax-error-status-2
eval 'echo a
fi'
echo "st=$?"
