package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/errs"
)

// A command's output and exit are collected on the calling goroutine by one poll(2) loop over the
// two output pipes, its exit file and, when the call's context can end, an eventfd set when it
// does. The exit file is a plain child's pidfd (readable once it has exited) or, for a command of
// the isolation helper, the read end of its status pipe, where the helper writes the exit status
// itself. The pipes stay out of the Go runtime's poller: a goroutine per pipe plus one for the
// wait, woken through the poller, cost a short command ~0.2 ms of hand-offs between threads (see
// BenchmarkExecTrue). A child on a kernel without pidfds is collected by collectAsync instead.

// outPipes are a command's stdout and stderr pipes.
type outPipes struct {
	r    [2]*os.File // read ends, non-blocking and outside the runtime's poller
	w    [2]*os.File // write ends, for the command; closed by closeWriters
	done [2]bool     // end of file seen on r[i], or its read cut
}

func newOutPipes() (*outPipes, error) {
	p := &outPipes{}
	for i := range 2 {
		var fds [2]int
		if err := pipeCloexec(fds[:]); err != nil {
			p.close()
			return nil, err
		}
		p.r[i] = os.NewFile(uintptr(fds[0]), "|0")
		p.w[i] = os.NewFile(uintptr(fds[1]), "|1")
	}
	return p, nil
}

// nonblock makes the read ends non-blocking, once the command has its write ends (two system
// calls fewer on the way to its start). The read end's only status flag: O_NONBLOCK (O_CLOEXEC is
// a descriptor flag). Set after the File is made, so the runtime does not add the pipe to its
// poller.
func (p *outPipes) nonblock() error {
	return withFDs(p.r[:], func(fds []int) error {
		for _, fd := range fds {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
				return err
			}
		}
		return nil
	})
}

// closeWriters closes this process's copies of the write ends once the command has them.
func (p *outPipes) closeWriters() {
	for _, f := range p.w {
		if f != nil {
			f.Close()
		}
	}
}

func (p *outPipes) close() {
	for i := range 2 {
		for _, f := range []*os.File{p.r[i], p.w[i]} {
			if f != nil {
				f.Close()
			}
		}
	}
}

// read copies what pipe i holds now into w, without waiting for more. At end of file (or an
// error) it marks the pipe done.
func (p *outPipes) read(i int, b []byte, w io.Writer) {
	for !p.done[i] {
		n, err := p.r[i].Read(b)
		if n > 0 {
			_, _ = w.Write(b[:n])
			continue
		}
		if !errors.Is(err, unix.EAGAIN) {
			p.done[i] = true
		}
		return
	}
}

// collect copies the command's output into out[0] (stdout) and out[1] (stderr) until it has
// exited and its pipes are closed. On the command's timeout, or when ctx ends, the group gets
// SIGTERM, then SIGKILL after KillGrace; cause says why (nil when the command exited on its
// own). Once the main process has exited, whatever it left behind is killed (p.finish), and a
// descendant that escaped the group and still holds a pipe gets WaitDelay before the pipes are
// cut, keeping what they already hold.
func (s *Sandbox) collect(ctx context.Context, p process, pipes *outPipes, timeout time.Duration, out [2]io.Writer) (ex exit, cause error, err error) {
	if err := pipes.nonblock(); err != nil {
		return exit{}, nil, err
	}
	exitFile := p.exitFile()
	if exitFile == nil {
		ex, cause, err = s.collectAsync(ctx, p, pipes, timeout, out)
		return ex, cause, err
	}
	var wake *os.File // readable once ctx has ended
	if ctx.Done() != nil {
		efd, err := newWakeFD()
		if err != nil {
			return exit{}, nil, err
		}
		wake = os.NewFile(uintptr(efd), "eventfd")
		defer wake.Close()
		// After Close the write fails with os.ErrClosed: it never reaches a reused number.
		stop := context.AfterFunc(ctx, func() { _, _ = wake.Write([]byte{1, 0, 0, 0, 0, 0, 0, 0}) })
		defer stop()
	}
	err = withFDs([]*os.File{pipes.r[0], pipes.r[1], exitFile, wake}, func(fds []int) error {
		ex, cause, err = s.pollLoop(ctx, p, pipes, timeout, out, fds)
		return err
	})
	return ex, cause, err
}

// pollLoop is collect's loop. fds are the numbers of stdout's and stderr's read ends, the
// process's exit file and the wake eventfd (-1 if none), borrowed for the length of the loop.
func (s *Sandbox) pollLoop(ctx context.Context, p process, pipes *outPipes, timeout time.Duration, out [2]io.Writer, fds []int) (ex exit, cause error, err error) {
	pipeFD, exitfd, wake := fds[:2], fds[2], fds[3]
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	start := time.Now()
	var deadline, killAt, abandonAt, cutAt time.Time // zero: none
	if timeout > 0 {
		deadline = start.Add(timeout)
	}
	exited, terminating, killed, abandoned := false, false, false, false
	terminate := func(why error) {
		if exited || terminating {
			return
		}
		cause, terminating = why, true
		p.signal(syscall.SIGTERM)
		killAt = time.Now().Add(s.cfg.KillGrace)
	}

	polled := make([]unix.PollFd, 0, 4)
	for {
		if exited && pipes.done[0] && pipes.done[1] {
			return ex, cause, nil
		}
		next := time.Time{}
		switch {
		case exited:
			next = cutAt
		case terminating && !killed:
			next = killAt
		case killed && !abandoned:
			next = abandonAt
		case !terminating:
			next = deadline
		}
		ms := -1
		if !next.IsZero() {
			ms = max(0, int((time.Until(next)+time.Millisecond-1)/time.Millisecond))
		}

		polled = polled[:0]
		for i, fd := range pipeFD {
			if !pipes.done[i] {
				polled = append(polled, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
		}
		if !exited {
			polled = append(polled, unix.PollFd{Fd: int32(exitfd), Events: unix.POLLIN})
		}
		if wake >= 0 && !terminating && !exited {
			polled = append(polled, unix.PollFd{Fd: int32(wake), Events: unix.POLLIN})
		}
		if _, err := unix.Poll(polled, ms); err != nil && !errors.Is(err, unix.EINTR) {
			return exit{}, nil, err
		}
		for _, f := range polled {
			if f.Revents&unix.POLLNVAL != 0 {
				// Every number here is borrowed from an open File: only a raw close of a
				// number somewhere else in the process can do this. Say so, rather than take
				// the wake-up for a cancellation or an exit.
				return exit{}, nil, fmt.Errorf("descriptor %d was closed under the wait", f.Fd)
			}
		}

		for i, fd := range pipeFD {
			switch ev := revents(polled, fd); {
			case pipes.done[i] || ev == 0:
			case ev&(unix.POLLIN|unix.POLLERR) == 0:
				pipes.done[i] = true // hung up and empty: end of file, without a read to say so
			default:
				pipes.read(i, *bp, out[i])
			}
		}
		now := time.Now()
		if !exited && ready(polled, exitfd) {
			code, werr := p.wait() // does not block: the child has exited
			ex, exited = exit{code, werr}, true
			p.finish() // whatever the command left behind dies with it
			cutAt = now.Add(s.cfg.WaitDelay)
		}
		switch {
		case exited:
			if !now.Before(cutAt) {
				for i := range pipeFD {
					pipes.read(i, *bp, out[i]) // what the pipe holds now, then cut
					pipes.done[i] = true
				}
			}
		case wake >= 0 && ready(polled, wake):
			why := ctx.Err()
			if errors.Is(why, context.DeadlineExceeded) {
				why = errs.Wrap(errs.ProcessTimeout, "exec", "", why)
			}
			terminate(why)
		case !deadline.IsZero() && !now.Before(deadline):
			terminate(errs.New(errs.ProcessTimeout, "exec", "", "command outlived its timeout of %s", timeout))
		}
		if terminating && !killed && !exited && !now.Before(killAt) {
			p.signal(syscall.SIGKILL)
			killed = true
			abandonAt = now.Add(unresponsive)
		}
		// A SIGKILLed command's exit is reported at once, unless its helper no longer answers (a
		// helper stopped or wedged): then the helper is taken for dead, which ends the wait.
		if killed && !abandoned && !exited && !now.Before(abandonAt) {
			p.abandon()
			abandoned = true
		}
	}
}

// ready reports whether poll found fd readable (or hung up, or in error: a read tells which).
func ready(fds []unix.PollFd, fd int) bool { return revents(fds, fd) != 0 }

// revents is what poll found for fd (0 if fd was not polled).
func revents(fds []unix.PollFd, fd int) int16 {
	for _, f := range fds {
		if int(f.Fd) == fd {
			return f.Revents
		}
	}
	return 0
}

// collectAsync is collect for a process without an exit descriptor: a goroutine per pipe reading
// through the runtime's poller, one waiting for the exit, and the calling goroutine selecting on
// them, the timeout and ctx.
func (s *Sandbox) collectAsync(ctx context.Context, p process, pipes *outPipes, timeout time.Duration, out [2]io.Writer) (exit, error, error) {
	var files [2]*os.File
	for i := range pipes.r {
		f, err := pollableDup(pipes.r[i])
		if err != nil {
			for _, f := range files {
				if f != nil {
					f.Close()
				}
			}
			return exit{}, nil, err
		}
		files[i] = f
	}
	dones := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	for i, f := range files {
		defer f.Close()
		go stream(f, out[i], dones[i])
	}
	exited := make(chan exit, 1)
	go func() {
		code, err := p.wait()
		exited <- exit{code, err}
	}()

	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var cause error
	var ex exit
	select {
	case ex = <-exited:
	case <-timer:
		cause = errs.New(errs.ProcessTimeout, "exec", "", "command outlived its timeout of %s", timeout)
		ex = s.terminate(p, exited)
	case <-ctx.Done():
		cause = ctx.Err()
		if errors.Is(cause, context.DeadlineExceeded) {
			cause = errs.Wrap(errs.ProcessTimeout, "exec", "", cause)
		}
		ex = s.terminate(p, exited)
	}
	p.finish() // whatever the command left behind dies with it

	// A descendant that left the group may still hold the pipes: wait a little, then cut them.
	grace := time.NewTimer(s.cfg.WaitDelay)
	defer grace.Stop()
	for _, done := range dones {
		select {
		case <-done:
		case <-grace.C:
			for _, f := range files {
				_ = f.SetReadDeadline(time.Now())
			}
			<-done
		}
	}
	return ex, cause, nil
}

// terminate sends SIGTERM to the group, then SIGKILL after the grace, and returns how it exited.
func (s *Sandbox) terminate(p process, exited <-chan exit) exit {
	p.signal(syscall.SIGTERM)
	t := time.NewTimer(s.cfg.KillGrace)
	defer t.Stop()
	select {
	case ex := <-exited:
		return ex
	case <-t.C:
		p.signal(syscall.SIGKILL)
	}
	// A SIGKILLed command's exit is reported at once, unless its helper no longer answers (a
	// helper stopped or wedged): then the helper is taken for dead, which ends the wait.
	t.Reset(unresponsive)
	select {
	case ex := <-exited:
		return ex
	case <-t.C:
		p.abandon()
		return <-exited
	}
}

// unresponsive is how long a helper may leave a request unanswered (a spawn, the exit of a killed
// command) before the adapter takes it for dead and kills it. A helper serves its spawns one after
// another: with 10 s, a CI run's descriptor stress (dozens of concurrent commands per sandbox, each
// spawn a new PID namespace, on 2 cores at load 10 and more) had its helpers killed as wedged
// while their queue was only slow. 30 s still bounds every wait.
const unresponsive = 30 * time.Second

// stream copies one pipe into w until end of file. When the read deadline is set because a
// descendant still holds the pipe, it takes what is already buffered in the pipe without
// waiting, and stops.
func stream(r *os.File, w io.Writer, done chan<- struct{}) {
	defer close(done)
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	b := *bp
	for {
		n, err := r.Read(b)
		if n > 0 {
			_, _ = w.Write(b[:n])
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			drain(r, b, w)
		}
		if err != nil {
			return
		}
	}
}

// drain copies what is buffered in the pipe now, without waiting for more.
func drain(r *os.File, b []byte, w io.Writer) {
	_ = r.SetReadDeadline(time.Time{})
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.Read(int(fd), b)
			if n <= 0 || err != nil {
				return true
			}
			_, _ = w.Write(b[:n])
		}
	})
}
