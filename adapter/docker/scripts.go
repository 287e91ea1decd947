package docker

import "github.com/sandboxer/sandboxer/adapter/internal/shellfs"

// The shell code below runs inside the container under busybox sh. It is kept in constants so
// that each call is one exec with fixed text and the caller's data only in argv or stdin.

// scanFn signals, with builtins only (no fork: it works in a container out of pids and costs
// little), every process whose environment carries SANDBOXER_EXEC_ID=$_id, and its process group;
// with a second argument it also sends that signal to the wrapper of $_id (found by the
// SANDBOXER_WRAPPER=$_id of its initial environment).
const scanFn = `
scan() {
	for _q in /proc/[0-9]*; do
		_q=${_q#/proc/}
		[ "$_q" = "$$" ] && continue
		while IFS= read -r -d '' _l; do
			case $_l in
			"SANDBOXER_EXEC_ID=$_id") kill -$1 -$_q $_q 2>/dev/null; break;;
			"SANDBOXER_WRAPPER=$_id") [ -n "$2" ] && kill -$2 $_q 2>/dev/null; break;;
			esac
		done 2>/dev/null <"/proc/$_q/environ"
	done
}
`

// execWrapper runs a command over a daemon exec (the agent does the same natively, see
// agent.Wrap): argv is id nonce dir args... . It resolves dir in the jail, checks
// the program exists, then starts it with setsid (its own session and process group) carrying
// SANDBOXER_EXEC_ID in its environment, waits, and then kills the group and every process still
// carrying the marker, so nothing started by the command survives it or holds its output open.
// The killer reaches the group through the wrapper (USR1: SIGTERM the group, USR2: SIGKILL it),
// which matters when the command cleared its environment. Failures before the start are reported
// as exit 199 plus a line "sandboxer:NONCE:CODE" on stderr (nothing else has written there yet).
const execWrapper = shellfs.JailFn + scanFn + `
unset SANDBOXER_WRAPPER
set -f
_id=$1 _nonce=$2 _dir=$3 _p=; shift 3
fail() { printf 'sandboxer:%s:%s\n' "$_nonce" "$1" >&2; exit 199; }
jail "$_dir"; case $? in 0) ;; 3) fail escape;; *) fail notfound;; esac
[ -d "$R" ] || fail notfound
cd "$R" 2>/dev/null || fail notfound
case $1 in
*/*) [ -f "$1" ] && [ -x "$1" ] || fail noexec;;
*) _ok=; _ifs=$IFS; IFS=:
	for _d in $PATH; do [ -f "${_d:-.}/$1" ] && [ -x "${_d:-.}/$1" ] && { _ok=1; break; }; done
	IFS=$_ifs; [ -n "$_ok" ] || fail noexec;;
esac
trap '[ -n "$_p" ] && kill -TERM -$_p 2>/dev/null' USR1
trap '[ -n "$_p" ] && kill -KILL -$_p 2>/dev/null' USR2
exec 3<&0
SANDBOXER_EXEC_ID=$_id setsid "$@" <&3 3<&- &
_p=$!
exec 3<&-
while :; do
	wait $_p; _rc=$?
	kill -0 $_p 2>/dev/null || break
done
kill -9 -$_p 2>/dev/null
scan 9
exit $_rc
`

// killScript ends the tree of one command (argv: id): SIGTERM to its process group and to every
// process carrying its marker, a short grace, then SIGKILL. Everything but the grace's sleep is
// a builtin; a failed fork makes the script exit non-zero and the caller retries with more room.
const killScript = scanFn + `
_id=$1
scan TERM USR1
sleep 0.2
scan KILL USR2
exit 0
`
