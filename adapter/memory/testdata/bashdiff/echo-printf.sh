# echo and printf.

#### echo-plain
echo a b   c

#### echo-n
echo -n no-newline; echo

#### echo-e-escapes
echo -e 'a\tb\nc'

#### echo-en-combined
echo -en 'x\ty'; echo

#### echo-ne-combined
echo -ne 'p\nq'; echo

#### echo-e-backslash-c
echo -e 'stop\cnever'; echo

#### echo-E-no-escapes
echo -E 'a\tb'

#### echo-without-e-keeps-backslash
echo 'a\tb'

#### echo-dash-dash-printed
echo -- x

#### echo-unknown-option-printed
echo -x y

#### echo-e-octal-hex
echo -e '\0101\x42'

#### echo-multiple-flags-separate
echo -n -e 'a\tb'; echo

#### echo-empty
echo
echo ''

#### echo-dash-n-only-word
echo "-n"
echo x

#### echo-e-escape-e
echo -e '\e[0m' | od -An -c

#### printf-basic
printf '%s=%d\n' a 1 b 2

#### printf-reuse-format
printf '%s\n' a b c

#### printf-missing-args
printf '%s|%s|%d\n' only

#### printf-no-newline
printf abc; echo

#### printf-v-var
printf -v out '%05d' 42
echo "$out"

#### printf-v-array-element
declare -a arr
printf -v 'arr[1]' '%s' val
echo "${arr[1]}"

#### printf-dash-dash
printf -- '%s\n' a b

#### printf-float
printf '%.2f\n' 3.14159
printf '%8.3f|\n' 2.5

#### printf-string-width-precision
printf '%5.1s|\n' abc
printf '%-5s|%5s|\n' ab cd

#### printf-hex-octal
printf '%x %X %o %#x\n' 255 255 8 255

#### printf-char-code
printf '%d\n' "'A"
printf '%d\n' '"a'

#### printf-percent-c
printf '%c\n' hello

#### printf-percent-b
printf '%b\n' 'a\tb\\n' 'x\ny'

#### printf-percent-q
printf '%q\n' 'a b' "it's"

#### printf-escapes-in-format
printf 'a\tb\\n\n'

#### printf-zero-pad-negative
printf '%05d|%-5d|%+d\n' -42 7 3

#### printf-invalid-number
printf '%d\n' abc 2>/dev/null
echo "st=$?"

#### printf-hex-input
printf '%d %d\n' 0x10 010

#### printf-star-width
printf '%*s|\n' 6 ab
printf '%-*s|\n' 6 ab

#### printf-percent-e-g
printf '%e %g %g\n' 1234.5 0.0001 100000000

#### printf-no-args-format-only
printf 'plain\n'

#### printf-literal-percent-s-args
printf '%s %s\n' a

#### printf-unsigned
printf '%u\n' 42

#### printf-i
printf '%i\n' 17

#### printf-octal-escape-in-format
printf '\101\102\n'

#### printf-unicode-escape
printf '\u00e9\n'

#### printf-width-unicode
printf '%-4s|\n' é

#### printf-stops-at-backslash-c
printf 'a\cb'; echo
printf '%b' 'x\cy'; echo

#### printf-bad-format-char
printf '%z\n' 2>/dev/null
echo "st=$?"

#### printf-to-stderr
printf 'err\n' >&2 2>/dev/null
echo ok

#### printf-table
printf '%-6s%4s\n' name qty apple 3 kiwi 12

#### printf-join-array
arr=(a b c)
printf '%s,' "${arr[@]}"; echo

#### printf-repeat-char
printf '=%.0s' 1 2 3 4 5; echo

#### printf-dash-arg
printf '%s\n' -n

#### printf-v-no-output
printf -v x 'hidden'
echo "[$x]"

#### printf-float-rounding
printf '%.0f %.0f %.1f\n' 2.5 3.5 0.05

#### echo-args-with-spaces
echo "a  b" c

#### echo-var-with-dash-e
x=-e
echo $x

#### printf-s-with-newlines
printf '[%s]\n' "$(printf 'a\nb')"

#### printf-percent-percent-args
printf '%d%%\n' 50

#### printf-dashdash
printf -- '%s\n' a b

#### printf-d-nonnum
printf '%d\n' abc; echo st=$?

#### printf-d-partial
printf '%d\n' 12abc; echo st=$?

#### printf-b-c
printf '%b|' 'a\cb' c; echo; echo st=$?

#### printf-b-octal
printf '%b\n' 'x\0101y' '\101'

#### printf-reuse-format-2
printf '%s=%s\n' a 1 b 2 c

#### printf-missing-args-2
printf '%s %d|\n'

#### printf-char-arg
printf '%d %d\n' "'a" '"b'

#### printf-escapes
printf 'a\tb\x41\101\u00e9\n'

#### printf-width-neg
printf '[%-5s][%5s][%05d][%+d][% d]\n' ab cd 42 5 6

#### printf-percent
printf '100%%\n'

#### printf-invalid-directive
printf '%z\n' x; echo st=$?

#### printf-e-g
printf '%e %g %.3g\n' 1234.5 0.0001 3.14159

#### printf-hex-arg
printf '%d %d\n' 0x1f 010

#### printf-q-special
printf '%q\n' 'a b' "it's" '' $'\t'

#### printf-c
printf '%c%c\n' abc d

#### printf-s-precision
printf '[%.0s][%.1s][%-3.2s]\n' abc abc abc

#### printf-i-o-x
printf '%i %o %x %#x %#o\n' 10 8 255 255 8

#### printf-large
printf '%d\n' 9223372036854775807 -9223372036854775808

#### printf-overflow
printf '%d\n' 99999999999999999999; echo st=$?

#### printf-float-round
printf '%.0f %.1f %.2f\n' 2.5 0.05 1.005

#### printf-negative-hex
printf '%x\n' -1

#### printf-star-width-2
printf '[%*d][%-*d]\n' 4 1 4 2

#### printf-escape-in-arg-s
printf '%s\n' 'a\nb'

#### printf-b-escapes
printf '%b\n' 'a\tb' '\x41' '\u263a' 'c\\d'

#### printf-trailing-backslash
printf 'a\\'; echo

#### printf-unknown-escape
printf 'a\qb\n'

#### printf-no-format
printf; echo st=$?

#### printf-e-notation-arg
printf '%d\n' 1e3; echo st=$?

#### printf-space-number
printf '%d\n' ' 12'; echo st=$?

#### printf-plus-number
printf '%d %d\n' +5 -0

#### printf-octal-escape-3digit
printf '\1011\n'

#### printf-v-with-escape
printf -v out 'x\ty'; echo "[$out]"

#### printf-percent-b-c-stops
printf '%b%s\n' 'a\cb' rest; echo; echo st=$?

#### echo-e-octal
echo -e 'a\0101b' '\x42'

#### echo-E
echo -E 'a\nb'

#### echo-dash-n-combined
echo -ne 'x\n'; echo -n -e 'y\n'

#### echo-double-dash
echo -- -n

#### printf-dashdash-then-format
printf -- '%s\n' x

#### printf-d-of-word-status
printf '%d\n' abc
echo "st=$?"

#### printf-d-of-leading-number
printf '%d\n' 12abc
echo "st=$?"

#### printf-d-of-char-constant
printf '%d %d\n' "'A" '"B'

#### printf-b-backslash-c-stops-all
printf '%b|%s\n' 'ab\cde' rest
echo

#### printf-b-octal-zero-prefix
printf '%b\n' '\0101\101'

#### printf-format-reused-for-extra-args
printf '%s=%s\n' a 1 b 2 c

#### printf-percent-q-spaces
printf '%q\n' 'a b' "it's"

#### printf-v-assigns
printf -v out '%05d' 42
echo "$out"

#### printf-precision-star
printf '%.*s\n' 3 abcdef

#### printf-hex-upper
printf '%X %#x %o\n' 255 255 8

#### printf-e-float
printf '%.2f %e\n' 3.14159 12345.678

#### printf-missing-arg-zero
printf '%d|%s|\n'

#### printf-too-big-number
printf '%d\n' 99999999999999999999
echo "st=$?"

#### printf-escape-in-format-only
printf 'a\tb\n' 
printf '%s\n' 'a\tb'

#### printf-negative-width
printf '[%-5s][%5s]\n' ab cd

#### printf-c-first-char
printf '%c\n' hello

#### printf-invalid-conversion
printf '%z\n' 1
echo "st=$?"

#### echo-e-and-E
echo -e 'a\tb'
echo -E 'a\tb'

#### echo-n-flag-combined
echo -ne 'x\n'
echo -- -n
