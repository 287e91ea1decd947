package main

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/internal/oneshot"
)

// serve hands the call to the engine's resident server for this environment, starting it when
// none answers, and returns the call's exit status. ok is false when the call did not reach the
// server (no server could be started or reached, or it refused this process): nothing ran, and
// the caller runs the engine itself.
func serve(engine string, args []string) (code int, ok bool) {
	uid := os.Getuid()
	dir := oneshot.Dir(os.Getenv, uid)
	fi, err := os.Stat(engine)
	if err != nil || !ownDir(dir, uid) {
		return 0, false
	}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	env := oneshot.ServerEnv(os.Environ())
	name := oneshot.Name(engine, fi, env, umask)
	sock := filepath.Join(dir, name+".sock")
	conn, err := dial(sock)
	if err != nil {
		if running(dir) >= oneshot.MaxServers || !start(engine, dir, name, env) {
			return 0, false
		}
		for deadline := time.Now().Add(2 * time.Second); err != nil && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
			conn, err = dial(sock)
		}
		if err != nil {
			return 0, false
		}
	}
	defer conn.Close()
	key, err := os.ReadFile(oneshot.KeyFile(dir, name))
	if err != nil {
		return 0, false
	}
	return call(conn, string(key), args, filepath.Join(dir, name+".log"))
}

// call sends the request with this process's standard streams and waits for the exit status.
func call(conn *os.File, key string, args []string, logFile string) (int, bool) {
	cwd, err := os.Getwd()
	if err != nil {
		return 0, false
	}
	req := oneshot.Request{Key: key, Dir: cwd, Args: args}
	for _, kv := range os.Environ() {
		if oneshot.PerCall(kv) {
			req.Env = append(req.Env, kv)
		}
	}
	msg := req.Append(nil)
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int
	cerr := raw.Write(func(fd uintptr) bool {
		n, err = syscall.SendmsgN(int(fd), msg, syscall.UnixRights(0, 1, 2), nil, 0)
		return true
	})
	if err = errors.Join(cerr, err); err == nil && n < len(msg) {
		_, err = conn.Write(msg[n:])
	}
	if err != nil {
		return 0, false
	}
	// Accepted, or refused before anything ran; then the exit status.
	var reply [oneshot.ReplyLen]byte
	if _, err := io.ReadFull(conn, reply[:]); err != nil || reply[0] != oneshot.Accepted {
		return 0, false
	}
	if _, err := io.ReadFull(conn, reply[:]); err != nil || reply[0] != oneshot.Exit {
		os.Stderr.WriteString("sandboxer: the server ended during the call (its log: " + logFile + ")\n")
		return 1, true
	}
	return int(binary.BigEndian.Uint32(reply[1:])), true
}

// dial connects to a server's socket.
func dial(sock string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), sock)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// running counts the servers of dir: each holds its lock file locked.
func running(dir string) int {
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	n := 0
	for _, l := range locks {
		f, err := os.Open(l)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == syscall.EWOULDBLOCK {
			n++
		}
		f.Close()
	}
	return n
}

// ownDir makes sure the socket directory exists, is this user's and no one else's.
func ownDir(dir string, uid int) bool {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return false
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFDIR && int(st.Uid) == uid && st.Mode&0o077 == 0
}

// start starts a server (sandboxerd server) in a session of its own, with env (and the idle
// time of $SANDBOXER_SERVER_IDLE, if set), its output going to NAME.log, and waits until it says it is ready, or that another one is starting.
func start(engine, dir, name string, env []string) bool {
	logf, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return false
	}
	defer logf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return false
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return false
	}
	defer r.Close()
	argv := []string{engine, "server", "--dir", dir, "--name", name}
	if idle := os.Getenv("SANDBOXER_SERVER_IDLE"); idle != "" {
		argv = append(argv, "--idle", idle)
	}
	_, err = syscall.ForkExec(engine, argv, &syscall.ProcAttr{
		Dir: "/", Env: env, Files: []uintptr{null.Fd(), logf.Fd(), logf.Fd(), w.Fd()},
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	w.Close()
	if err != nil {
		return false
	}
	r.SetReadDeadline(time.Now().Add(10 * time.Second)) // a server that hangs as it starts
	said, _ := io.ReadAll(io.LimitReader(r, 64))
	return strings.HasPrefix(string(said), oneshot.Ready) || strings.HasPrefix(string(said), oneshot.Busy)
}
