package shellfs

// The shell code below runs inside the sandbox under busybox sh. It is kept in constants so
// that each call is one exec with fixed text and the caller's data only in argv or stdin.

// JailFn is the text of a shell function, jail, for any script run in the sandbox (the adapters'
// own exec wrappers use it too). jail resolves a workspace-relative path (already lexically clean,
// from adapter.Rel) through every symlink, component by component, inside the sandbox. It sets R
// to the real absolute path and returns 3 as soon as the walk leaves /workspace (an absolute link
// elsewhere, ".." above the root, dangling or not), 5 on a symlink loop. Components that do not
// exist are taken as they are: they cannot be links.
const JailFn = `
jail() {
	R=/workspace; _rest=$1; _n=0
	while [ -n "$_rest" ]; do
		_c=${_rest%%/*}
		case $_rest in */*) _rest=${_rest#*/};; *) _rest=;; esac
		case $_c in
		''|.) continue;;
		..) [ "$R" = /workspace ] && return 3; R=${R%/*}; continue;;
		esac
		if [ -L "$R/$_c" ]; then
			_n=$((_n+1)); [ $_n -gt 40 ] && return 5
			_t=$(readlink -- "$R/$_c") || return 5
			case $_t in
			/workspace) R=/workspace; _t=;;
			/workspace/*) R=/workspace; _t=${_t#/workspace/};;
			/*) return 3;;
			esac
			_rest=$_t${_rest:+/$_rest}
		else
			R=$R/$_c
		fi
	done
	return 0
}
`

// Exit codes of the file scripts.
const (
	exitEscape   = 3
	exitNotFound = 4
	exitLoop     = 5
	exitIsDir    = 6
	exitNotDir   = 7
	exitIO       = 8
	exitInvalid  = 9
)

// readScript: argv path; stdout the content.
const readScript = JailFn + `
jail "$1" || exit $?
[ -f "$R" ] || exit 4
exec cat -- "$R"
`

// writeScript: argv path; stdin the content. Writes a temporary file beside the target and
// renames it over the target; new files are 0644, a replaced executable stays executable (0755).
const writeScript = JailFn + `
jail "$1" || exit $?
[ "$R" = /workspace ] && exit 6
[ -e "$R" ] && [ ! -f "$R" ] && exit 6
_d=${R%/*}
[ -d "$_d" ] || mkdir -p -- "$_d" 2>/dev/null || exit 7
_t=$_d/.sandboxer-tmp-$$
cat >"$_t" || { rm -f -- "$_t"; exit 8; }
[ -f "$R" ] && [ -x "$R" ] && chmod 755 "$_t"
mv -f -- "$_t" "$R" || { rm -f -- "$_t"; exit 8; }
`

// statScript: argv path; resolves the parent and reports the final component itself (a symlink is
// reported as a symlink, but one that leads outside the workspace is refused like any other path).
// stdout: "size rawmode inode date time zone", a newline, and a symlink's target text.
const statScript = JailFn + `
case $1 in */*) jail "${1%/*}" || exit $?; R=$R/${1##*/};; .) R=/workspace;; *) R=/workspace/$1;; esac
[ -e "$R" ] || [ -L "$R" ] || exit 4
_l=$R
if [ -L "$_l" ]; then jail "$1" || exit $?; fi
stat -c '%s %f %i %y' -- "$_l" || exit 8
[ -L "$_l" ] && exec readlink -- "$_l"
exit 0
`

// symlinkScript: argv path target. Makes path a symbolic link to target (the text as given): the
// parent resolved in the jail and created, the link made under a temporary name and renamed over
// what is there (a link there is removed first, so the rename cannot land inside a directory it
// points to). A directory in the way exits 6.
const symlinkScript = JailFn + `
case $1 in */*) jail "${1%/*}" || exit $?; R=$R/${1##*/};; *) R=/workspace/$1;; esac
[ -d "$R" ] && [ ! -L "$R" ] && exit 6
_d=${R%/*}
[ -d "$_d" ] || mkdir -p -- "$_d" 2>/dev/null || exit 7
_t=$_d/.sandboxer-tmp-$$
ln -s -- "$2" "$_t" || exit 8
[ -L "$R" ] && rm -f -- "$R"
mv -f -- "$_t" "$R" || { rm -f -- "$_t"; exit 8; }
`

// chmodScript: argv path 0|1. Makes the regular file at path 0644 or 0755 (1); anything else,
// a symbolic link among them, exits 4.
const chmodScript = JailFn + `
case $1 in */*) jail "${1%/*}" || exit $?; R=$R/${1##*/};; *) R=/workspace/$1;; esac
[ -L "$R" ] && exit 4
[ -f "$R" ] || exit 4
_m=644; [ "$2" = 1 ] && _m=755
chmod "$_m" -- "$R" || exit 8
`

// removeScript: argv path; removes a file, a symlink (not its target) or an empty directory.
const removeScript = JailFn + `
case $1 in */*) jail "${1%/*}" || exit $?; R=$R/${1##*/};; .) exit 9;; *) R=/workspace/$1;; esac
[ -e "$R" ] || [ -L "$R" ] || exit 4
if [ -d "$R" ] && [ ! -L "$R" ]; then rmdir -- "$R" || exit 8; else rm -f -- "$R" || exit 8; fi
`

// listScript: argv dir. stdout: NUL-terminated names of regular files and symbolic links (not
// following them), each link's name followed by its NUL-terminated target text; stderr: one
// "size rawmode inode date time zone" line per name, in the same order. A file or directory that
// disappears during the walk (a concurrent write's temporary file, a removal) is left out: find
// reports it as "No such file or directory" and exits 1, which is not an error here; any other
// message of find's is. The adapter's own temporary files and directories are never walked.
const listScript = JailFn + `
jail "$1" || exit $?
[ -d "$R" ] || exit 4
cd /workspace || exit 8
_r=${R#/workspace}; _r=.${_r}
exec 3>&2 4>&1
_e=$(find "$_r" -name '.sandboxer-tmp-*' -prune -o \( -type f -o -type l \) -exec sh -c '
for _f; do
	if [ -L "$_f" ]; then
		_t=$(readlink -- "$_f") || continue
		stat -c "%s %f %i %y" -- "$_f" >&3 2>/dev/null && printf "%s\0%s\0" "$_f" "$_t"
	else
		stat -c "%s %f %i %y" -- "$_f" >&3 2>/dev/null && printf "%s\0" "$_f"
	fi
done
exit 0
' sh {} + 2>&1 >&4)
_rc=$?
[ $_rc = 0 ] && exit 0
printf '%s\n' "$_e" | grep -qv 'No such file or directory$' || exit 0
printf '%s\n' "$_e" >&2
exit $_rc
`

// readManyScript: argv paths. stderr: the real path of each, NUL-terminated, in order; stdout: a
// tar of them relative to /workspace. A missing path exits 4 after printing "index" to stderr.
const readManyScript = JailFn + `
_i=0
for _a; do
	jail "$_a"; _rc=$?
	[ $_rc = 0 ] || { printf 'index %s\n' $_i >&2; exit $_rc; }
	[ -f "$R" ] || { printf 'index %s\n' $_i >&2; exit 4; }
	_i=$((_i+1))
done
for _a; do jail "$_a"; printf '%s\0' "${R#/workspace/}" >&2; done
cd /workspace || exit 8
for _a; do jail "$_a"; set -- "$@" "${R#/workspace/}"; shift; done
exec tar -cf - -- "$@"
`

// writeManyScript: argv paths; stdin a tar whose entries are named 0, 1, ... in the order of the
// paths. Every path is checked before anything is moved into place.
const writeManyScript = JailFn + `
_i=0
for _a; do
	jail "$_a"; _rc=$?
	[ $_rc = 0 ] || { printf 'index %s\n' $_i >&2; exit $_rc; }
	{ [ "$R" = /workspace ] || [ -d "$R" ]; } && { printf 'index %s\n' $_i >&2; exit 6; }
	_i=$((_i+1))
done
_s=/workspace/.sandboxer-tmp-$$
mkdir -- "$_s" || exit 8
trap 'rm -rf -- "$_s"' EXIT
tar -xf - -C "$_s" || exit 8
# tar keeps whole-second times; give the files the kernel's own clock, as a plain write would, so a
# stat cache (FileSync) can tell them apart from files written within the same second.
find "$_s" -type f -exec touch -c -- {} + || exit 8
_i=0
for _a; do
	jail "$_a"
	_d=${R%/*}
	[ -d "$_d" ] || mkdir -p -- "$_d" 2>/dev/null || { printf 'index %s\n' $_i >&2; exit 7; }
	mv -f -- "$_s/$_i" "$R" || exit 8
	_i=$((_i+1))
done
`

// tarOutScript / tarInScript copy a whole workspace (Fork).
const (
	tarOutScript = `cd /workspace && exec tar -cf - .`
	tarInScript  = `cd /workspace && exec tar -xf -`
)
