# Tilde expansion after brace expansion (bash manual, "Shell Expansions": brace expansion comes
# first, then tilde expansion, so every word a brace produces that begins with ~ is expanded;
# "Tilde Expansion": ~+, ~-, ~user, and after : or the first = of an assignment).

#### brace-prefix-tilde-each-word
echo {~,~/a} | sed "s#$HOME#H#g"

#### brace-alternatives-of-tilde-paths
echo ~/{a,b} | sed "s#$HOME#H#g"

#### brace-tilde-inside-alternative
echo x{~,y} | sed "s#$HOME#H#g"

#### brace-tilde-first-alternative
echo {~/x,y} | sed "s#$HOME#H#g"

#### brace-sequence-after-tilde
echo ~/d{1..3} | sed "s#$HOME#H#g"

#### brace-tilde-plus-minus
cd /tmp 2>/dev/null || cd /
cd "$HOME"
echo {~+,~-} | sed -e "s#$HOME#H#g"

#### brace-tilde-quoted-alternative
echo {"~",~} | sed "s#$HOME#H#g"

#### brace-tilde-escaped
echo {\~,a} | sed "s#$HOME#H#g"

#### brace-tilde-in-for-list
for d in ~/{src,bin}; do echo "$d"; done | sed "s#$HOME#H#g"

#### brace-tilde-in-array
a=(~/{p,q})
echo "${#a[@]} ${a[1]}" | sed "s#$HOME#H#g"

#### brace-tilde-unknown-user-stays
echo {~nosuchuser1,~}/x | sed "s#$HOME#H#g"

#### brace-tilde-in-cd-list
mkdir -p ~/c1 ~/c2
for d in ~/{c1,c2}; do cd "$d" && basename "$PWD"; done

#### brace-tilde-nested
echo {a,{~,b}} | sed "s#$HOME#H#g"

#### brace-tilde-with-home-changed
HOME=/h
echo {~,~/z}

#### brace-tilde-home-empty
HOME=
echo "[{~,x}]" {~,x}

#### brace-tilde-in-assignment-not-braced
v={~,x}
echo "$v"

#### brace-tilde-in-argument-assignment-like
HOME=/h
echo a={~,b}

#### brace-tilde-in-declare
HOME=/h
declare -a arr=({~,y})
echo "${arr[@]}"

#### brace-tilde-in-redirect-target-is-ambiguous
echo hi > {~/a,~/b}
echo "st=$?"

#### brace-tilde-mkdir-and-ls
mkdir -p ~/{one,two}
ls -d ~/{one,two} | sed "s#$HOME#H#g"

#### brace-tilde-in-case-word
HOME=/h
case {~,x} in "{~,x}") echo literal ;; *) echo other ;; esac

#### brace-tilde-in-double-quotes-not-expanded
echo "{~,a}"

#### brace-tilde-after-colon-in-word
HOME=/h
echo x:{~,y}

#### brace-tilde-trailing-slash
HOME=/h/
echo {~,~/}
