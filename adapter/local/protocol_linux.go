//go:build linux && !sandboxer_portable

package local

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"
)

// The messages between the adapter and a helper, besides the helper's spec and its ready report
// (JSON, once per helper): requests on the connection, in a compact binary form (one is decoded
// per command, on the command's critical path), the replies to socket ops, and the records of a
// command's status pipe.

// request is one message from the adapter to the helper.
type request struct {
	Op   string // "spawn", "signal", "dial", "listen" or "reset"
	ID   uint64
	Path string
	Args []string
	Env  []string
	Dir  string
	Sig  int
	// The files of a spawn, passed as SCM_RIGHTS: the write end of the command's status pipe
	// (first, so that it arrives even if the others do not), stdin, stdout, stderr and, if
	// Cgroup, a cgroup directory.
	Cgroup bool
	// Init runs the command under a per-command init in its own PID namespace.
	Init bool
	// ClearKeys asks a "reset" to clear the user keyrings too: the helper's uid is the sandbox's
	// own (never the caller's).
	ClearKeys bool
	// Port is the loopback port of "dial" (connect to it) and "listen" (listen on it): the reply
	// carries the socket, made in the helper's network namespace, as SCM_RIGHTS.
	Port int
}

// requestOps numbers the ops on the wire.
var requestOps = []string{"spawn", "signal", "dial", "listen", "reset"}

const (
	reqCgroup = 1 << iota
	reqInit
	reqClearKeys
)

// appendBinary encodes r: its op and flags (a byte each), then the numbers as varints, then the
// strings and lists of strings, each with its length first.
func (r *request) appendBinary(b []byte) []byte {
	var flags byte
	if r.Cgroup {
		flags |= reqCgroup
	}
	if r.Init {
		flags |= reqInit
	}
	if r.ClearKeys {
		flags |= reqClearKeys
	}
	b = append(b, byte(slices.Index(requestOps, r.Op)+1), flags)
	b = binary.AppendUvarint(b, r.ID)
	b = binary.AppendVarint(b, int64(r.Sig))
	b = binary.AppendVarint(b, int64(r.Port))
	b = appendString(b, r.Path)
	b = appendString(b, r.Dir)
	b = appendStrings(b, r.Args)
	return appendStrings(b, r.Env)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

var errBadRequest = errors.New("malformed request")

// decode is appendBinary's inverse. It fails on anything appendBinary does not make.
func (r *request) decode(b []byte) error {
	d := decoder{b: b}
	op, flags := d.byte(), d.byte()
	if op == 0 || int(op) > len(requestOps) {
		return errBadRequest
	}
	*r = request{Op: requestOps[op-1], Cgroup: flags&reqCgroup != 0, Init: flags&reqInit != 0, ClearKeys: flags&reqClearKeys != 0}
	r.ID = d.uvarint()
	r.Sig = int(d.varint())
	r.Port = int(d.varint())
	r.Path = d.string()
	r.Dir = d.string()
	r.Args = d.strings()
	r.Env = d.strings()
	if d.bad || len(d.b) > 0 {
		return errBadRequest
	}
	return nil
}

// decoder reads what appendBinary wrote; bad is set at the first thing that does not fit.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) strings() []string {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) { // each string takes a byte at least
		d.bad = true
		return nil
	}
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.string()
	}
	return ss
}

// reply is the helper's answer to a socket op on its connection (JSON): the socket (Socket, with
// the socket as SCM_RIGHTS) or why not (Err).
type reply struct {
	ID     uint64 `json:"id"`
	Socket bool   `json:"socket,omitempty"`
	Err    string `json:"err,omitempty"`
	Errno  int    `json:"errno,omitempty"`

	socket *os.File // the descriptor that came with a Socket reply (adapter side)
}

// A spawned command's news goes to its own status pipe, not to the shared connection: the
// adapter's call waits in poll(2) on that pipe, next to the command's output, and is woken by
// the helper directly (no goroutine reads and forwards it). Each record is 8 bytes, a kind and a
// value in the machine's byte order, written in one write (atomic on a pipe): started or failed
// to start, then exited. End of file without an exit record means the helper died.
const (
	recStarted = 1 // the command has exec'd
	recFailed  = 2 // it could not start; value: the errno
	recBad     = 3 // the spawn's descriptors did not all arrive
	recExited  = 4 // it has exited; value: its syscall.WaitStatus
	recSize    = 8
)

// writeRecord writes one status record. A pipe whose reader is gone (EPIPE: the adapter gave up
// on the command) is no error of the helper's.
func writeRecord(f *os.File, kind, value uint32) {
	var b [recSize]byte
	binary.NativeEndian.PutUint32(b[:4], kind)
	binary.NativeEndian.PutUint32(b[4:], value)
	_, _ = f.Write(b[:])
}

// readRecord reads one status record (blocking: the caller polled the pipe). io.EOF: the helper
// closed the pipe without writing one.
func readRecord(f *os.File) (kind, value uint32, err error) {
	var b [recSize]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return 0, 0, err
	}
	return binary.NativeEndian.Uint32(b[:4]), binary.NativeEndian.Uint32(b[4:]), nil
}
