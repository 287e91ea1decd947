package main

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/internal/oneshot"
)

// serve hands the call to the engine's resident server for this environment, starting it when
// none answers, and returns the call's exit status. ok is false when the call did not reach the
// server (no server could be started or reached, or it refused this process): nothing ran, and
// the caller runs the engine itself. err then says why when the user should hear of it: the
// server directory cannot be used (missing, or refused by its checks), or a file in it is not
// one sandboxer made (oneshot.ErrUnsafe).
func serve(engine string, args []string) (code int, ok bool, err error) {
	euid := os.Geteuid()
	fi, err := os.Stat(engine)
	if err != nil {
		return 0, false, nil
	}
	d, err := oneshot.OpenServerDir(oneshot.Dir(os.Getenv, os.Getuid()), euid)
	if err != nil {
		return 0, false, err
	}
	defer d.Close()
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	env := oneshot.ServerEnv(os.Environ())
	name := oneshot.Name(engine, fi, env, umask)
	conn, err := dial(d, name, euid)
	if err != nil {
		if errors.Is(err, oneshot.ErrUnsafe) {
			return 0, false, err
		}
		if running(d) >= oneshot.MaxServers {
			return 0, false, nil
		}
		if started, err := start(engine, d, name, env); !started {
			return 0, false, err
		}
		for deadline := time.Now().Add(2 * time.Second); err != nil && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
			conn, err = dial(d, name, euid)
		}
		if err != nil {
			return 0, false, unsafeOnly(err)
		}
	}
	defer conn.Close()
	kf, err := d.OpenFile(oneshot.KeyName(name), os.O_RDONLY, 0)
	if err != nil {
		return 0, false, unsafeOnly(err)
	}
	key, err := io.ReadAll(io.LimitReader(kf, 4096))
	kf.Close()
	if err != nil {
		return 0, false, nil
	}
	return call(conn, string(key), args, d.Name(name+".log"))
}

// acceptWait bounds the connect to the server and its answer to the request: a server answers
// in microseconds, once it has read the request. One that has not within this is stuck (its
// accept loop held up by a shortage of descriptors, or wedged), and since it holds nothing of the
// caller's yet (the stdio goes only to a server that accepted the call), the call runs in a
// process of its own instead of waiting for it.
const acceptWait = 5 * time.Second

// interruptWait bounds how long an interrupted front waits for the server to end its call.
const interruptWait = time.Second

// unsafeOnly is err if it is an oneshot.ErrUnsafe, else nil.
func unsafeOnly(err error) error {
	if errors.Is(err, oneshot.ErrUnsafe) {
		return err
	}
	return nil
}

// call sends the request, then this process's standard streams once the server accepted it, and
// waits for the exit status. ok is false when nothing ran; err then says why when the user
// should hear of it (the server did not accept within acceptWait).
func call(conn *os.File, key string, args []string, logFile string) (code int, ok bool, err error) {
	cwd, err := os.Getwd()
	if err != nil {
		return 0, false, nil
	}
	// The whole environment: the SANDBOXER_* variables are the call's settings, the others are
	// read only for the env: source of a secret (--secret NAME=env:VAR).
	req := oneshot.Request{Key: key, Dir: cwd, Args: args, Env: os.Environ()}
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	// Accepted, or refused before anything ran, within acceptWait (the socket's timeouts, set by
	// dial).
	var reply [oneshot.ReplyLen]byte
	if _, err := conn.Write(req.Append(nil)); err != nil {
		return 0, false, nil
	}
	if _, err := io.ReadFull(conn, reply[:]); err != nil || reply[0] != oneshot.Accepted {
		if errors.Is(err, syscall.EAGAIN) {
			return 0, false, errors.New("the server did not accept the call within " + acceptWait.String() + " (its log: " + logFile + ")")
		}
		return 0, false, nil
	}
	// From here only the server's answer, or a signal (wait), ends the wait.
	var none syscall.Timeval
	cerr := raw.Control(func(fd uintptr) {
		syscall.SetsockoptTimeval(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &none)
		err = syscall.Sendmsg(int(fd), []byte{oneshot.Stdio}, syscall.UnixRights(0, 1, 2), nil, 0)
	})
	if errors.Join(cerr, err) != nil {
		return 0, false, nil // the server is gone: without the stdio nothing ran
	}
	return wait(conn, raw, logFile), true, nil
}

// catchAfter is how long a call runs before the front catches the signals that interrupt it
// (wait). Catching them costs a process about 0.3 ms (os/signal starts two threads), more than
// the whole wait of most served calls: a front interrupted before then dies of the signal at
// once, which closes its connection and cancels the call all the same.
const catchAfter = 10 * time.Millisecond

// wait waits for the call's exit status. After catchAfter, SIGINT, SIGTERM and SIGHUP (those
// not ignored when the front started) end the wait: the front closes its writing end, which
// cancels the call in the server as the signal would have in a process of its own (its command
// killed, its journal row completed as cancelled, its result written), and returns the status
// the server answers with within interruptWait. A server that has not answered by then (or a
// second signal): the front says so and dies of the signal.
func wait(conn *os.File, raw syscall.RawConn, logFile string) int {
	sigs := make(chan os.Signal, 2)
	time.AfterFunc(catchAfter, func() {
		for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			if !signal.Ignored(s) {
				signal.Notify(sigs, s)
			}
		}
	})
	status := make(chan int, 1)
	go func() {
		var reply [oneshot.ReplyLen]byte
		if _, err := io.ReadFull(conn, reply[:]); err != nil || reply[0] != oneshot.Exit {
			os.Stderr.WriteString("sandboxer: the server ended during the call (its log: " + logFile + ")\n")
			status <- 1
			return
		}
		status <- int(binary.BigEndian.Uint32(reply[1:]))
	}()
	var sig os.Signal
	select {
	case code := <-status:
		return code
	case sig = <-sigs:
	}
	raw.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_WR) })
	select {
	case code := <-status:
		return code
	case <-time.After(interruptWait):
	case <-sigs:
	}
	os.Stderr.WriteString("sandboxer: interrupted (" + sig.String() + "): the server did not end the call within " +
		interruptWait.String() + ", it goes on ending it (its log: " + logFile + ")\n")
	die(sig)
	return 0
}

// die ends this process by sig, as if it had not been caught.
func die(sig os.Signal) {
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig.(syscall.Signal))
	time.Sleep(time.Second) // the signal ends the process
	os.Exit(128 + int(sig.(syscall.Signal)))
}

// dial connects to the socket of the server name in d: a socket (not a link) of this user,
// served by this user.
func dial(d *oneshot.ServerDir, name string, euid int) (*os.File, error) {
	sock := name + ".sock"
	if err := d.CheckSocket(sock); err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), d.Name(sock))
	// The connect, the request and its answer each wait at most acceptWait (see call).
	tv := syscall.NsecToTimeval(int64(acceptWait))
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: d.SocketPath(sock)}); err != nil {
		f.Close()
		return nil, err
	}
	if cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED); err != nil || int(cred.Uid) != euid {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, oneshot.Unsafe(d.Name(sock), "is served by uid "+strconv.Itoa(int(cred.Uid))+", not by you")
	}
	return f, nil
}

// running counts the servers of d: each holds its lock file locked. A lock that is not a file
// sandboxer made (a FIFO, a link) is no server's, and is never opened in a way that blocks.
func running(d *oneshot.ServerDir) int {
	names, _ := d.Names()
	n := 0
	for _, l := range names {
		if !strings.HasSuffix(l, ".lock") {
			continue
		}
		f, err := d.OpenFile(l, os.O_RDONLY, 0)
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

// start starts a server (sandboxerd server) in a session of its own, with env (and the idle
// time of $SANDBOXER_SERVER_IDLE, if set), its output going to NAME.log, and waits until it says
// it is ready, or that another one is starting. err is an oneshot.ErrUnsafe when the server's
// log or lock is not a file sandboxer made (the server would refuse its lock).
func start(engine string, d *oneshot.ServerDir, name string, env []string) (bool, error) {
	if lock, err := d.OpenFile(name+".lock", os.O_RDONLY, 0); err == nil {
		lock.Close()
	} else if errors.Is(err, oneshot.ErrUnsafe) {
		return false, err
	}
	logf, err := d.OpenFile(name+".log", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return false, unsafeOnly(err)
	}
	defer logf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return false, nil
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return false, nil
	}
	defer r.Close()
	argv := []string{engine, "server", "--dir", d.Path(), "--name", name}
	if idle := os.Getenv("SANDBOXER_SERVER_IDLE"); idle != "" {
		argv = append(argv, "--idle", idle)
	}
	if listen := os.Getenv("SANDBOXER_SERVER_METRICS_LISTEN"); listen != "" {
		argv = append(argv, "--metrics-listen", listen)
	}
	_, err = syscall.ForkExec(engine, argv, &syscall.ProcAttr{
		Dir: "/", Env: env, Files: []uintptr{null.Fd(), logf.Fd(), logf.Fd(), w.Fd()},
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	w.Close()
	if err != nil {
		return false, nil
	}
	r.SetReadDeadline(time.Now().Add(10 * time.Second)) // a server that hangs as it starts
	said, _ := io.ReadAll(io.LimitReader(r, 64))
	return strings.HasPrefix(string(said), oneshot.Ready) || strings.HasPrefix(string(said), oneshot.Busy), nil
}
