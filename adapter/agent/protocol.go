// Package agent is the small process spawner that runs inside docker and oci sandboxes, and its
// client. Both adapters own it: it lives beside them, not inside either.
//
// A daemon or runtime exec costs tens of milliseconds (the daemon, containerd and runc each take
// their turn), so the docker and oci adapters start one long-lived agent per sandbox handle and
// send every command to it over a single stream: the container's own stdio when the adapter
// created the container (the agent is its main process), or one exec when it attached to an
// existing one. The agent forks the command, streams
// its stdout and stderr back, and reports its exit status; a command then costs one fork and a
// round trip instead of a daemon exec.
//
// The agent only spawns processes. Everything that needs judgement (the workspace jail, process
// trees, timeouts) stays in the adapter's shell scripts, which the agent runs like any command, so
// that both transports (agent and plain daemon exec) behave the same.
//
// Start.Wrap runs a command the way the adapter's shell wrapper does (working directory resolved
// in the workspace jail, the program checked, its own session, a marker in its environment, the
// tree killed when it exits), natively: no wrapper process, no fork for the cleanup or the kill.
//
// The package imports the standard library only: the root file system recipe (package rootfs)
// compiles cmd/sandboxer-agent from the embedded Source into a static binary.
//
// # Wire format
//
// Both directions carry frames: one type byte, a 4-byte big-endian call id, a 4-byte big-endian
// payload length, then the payload (at most MaxPayload bytes).
//
//	client to agent: 'S' start (JSON Start), 'I' stdin bytes, 'E' end of stdin,
//	                 'K' kill the call's tree (4-byte grace in milliseconds between SIGTERM and SIGKILL),
//	                 'Q' request (JSON Request: dial, listen, and the background processes' ops)
//	agent to client: 'O' stdout bytes, 'R' stderr bytes, 'A' stdin bytes consumed (4-byte count),
//	                 'X' exit (JSON Exit; the call's last frame),
//	                 't' part of a result, 'T' a result's last part (JSON Result, cut in parts
//	                 of at most MaxPayload bytes), 'N' a connection accepted on the listener whose
//	                 request id is the 4-byte payload (the frame's id is the new stream's)
//	both ways:       'W' stream data, 'F' end of a stream's data (half close), 'C' stream reset,
//	                 'w' stream bytes written out (4-byte count: flow control, see StreamWindow)
//
// Ids are the client's (a counter from 1), except the streams of accepted connections, which the
// agent numbers with the top bit set.
//
// The agent runs in the sandbox: the client reads it as a hostile peer. A frame, a result and the
// unfinished results of a stream are bounded (MaxPayload, MaxResult, MaxResultsHeld), a stream's
// data by its window; a frame past a bound, or one an honest agent never sends, ends the stream
// (see Client.Violation).
//
// When the agent's input ends (the client went away), it kills every process it started for that
// client, with their trees, and exits (or, with -idle, stays as the container's main process).
// Background processes (Request op "start") belong to the agent, not to a client: they live until
// they exit, are signalled, or the agent ends.
//
// # Direct streams
//
// When the host and the sandbox share a directory (SetDirect), a stream is a unix connection of
// its own, made by the agent to the client's socket there, instead of W/F/C/w frames on the link:
// see direct.go.
//
// # One agent, many clients
//
// The main agent of a container (the container's main process) also listens on the unix socket
// HubSocket, in a directory only the agent's user can open. An agent
// started by an exec (a client that attached to an existing container) relays its stdio to that
// socket when it answers, so that every client of a sandbox talks to the one agent that keeps the
// background processes and the listeners; without it, the exec'd agent serves its client itself.
package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version. The image carries it in a label; the adapter uses the agent
// only when the versions match.
const Version = "7"

// Path is where the image build installs the agent.
const Path = "/usr/local/bin/sandboxer-agent"

// BroughtPath is where an adapter mounts the host's agent, read-only, into a container whose
// image has none (any image: Debian, python, a user's own). It is a path no image uses.
const BroughtPath = "/.sandboxer-agent"

// Frame types.
const (
	FrameStart    byte = 'S'
	FrameStdin    byte = 'I'
	FrameStdinEOF byte = 'E'
	FrameKill     byte = 'K'
	FrameStdout   byte = 'O'
	FrameStderr   byte = 'R'
	FrameAck      byte = 'A'
	FrameExit     byte = 'X'

	FrameRequest    byte = 'Q'
	FrameResult     byte = 'T'
	FrameResultPart byte = 't'
	FrameAccept     byte = 'N'
	FrameData       byte = 'W'
	FrameFin        byte = 'F'
	FrameClose      byte = 'C'
	FrameWindow     byte = 'w'
)

// HubDir is the directory of HubSocket: made by the container's main agent, owned by its user and
// open to it alone (in /tmp, which every adapter's container has writable). An agent serves or
// relays to a hub only in such a directory, and only to and from peers of its own user.
const HubDir = "/tmp/.sandboxer-agent-" + Version

// HubSocket is the unix socket where a container's main agent serves the clients that exec'd
// agents relay. It is a file, not an abstract name: an abstract name belongs to the network
// namespace, which the host's, when a sandbox shares it, shares with every other process there.
const HubSocket = HubDir + "/hub"

// acceptedBit marks the ids the agent gives the streams of accepted connections.
const acceptedBit = 1 << 31

// Request asks the agent for something other than a foreground process (FrameRequest).
type Request struct {
	// Op is one of: "direct" (the client's direct streams, see SetDirect), "dial" (connect to
	// 127.0.0.1:Port; the request's id becomes the stream's),
	// "listen" (listen on 127.0.0.1:Port; connections arrive as FrameAccept until the client
	// sends FrameClose with the request's id), "start" (a background process: Start),
	// "list", "output" (of process Process, after Since, waiting up to WaitMs for something new),
	// "input" (Data to its stdin, then its end if EOF), "signal" (Signal by name to its tree),
	// "wait" (up to WaitMs for its exit).
	Op      string `json:"op"`
	Port    int    `json:"port,omitempty"`
	Start   *Start `json:"start,omitempty"`
	Process string `json:"process,omitempty"`
	Since   int64  `json:"since,omitempty"`
	Limit   int    `json:"limit,omitempty"` // "output": at most this many bytes (0: all the rings hold)
	WaitMs  int    `json:"waitMs,omitempty"`
	Data    []byte `json:"data,omitempty"`
	EOF     bool   `json:"eof,omitempty"`
	Signal  string `json:"signal,omitempty"`
	// Direct asks for a direct stream ("dial", and "listen"'s connections); Path and Token are
	// "direct"'s: the client's socket as the sandbox sees it, and the token each connection
	// opens with (see SetDirect).
	Direct bool   `json:"direct,omitempty"`
	Path   string `json:"path,omitempty"`
	Token  []byte `json:"token,omitempty"`
}

// Result answers a Request. Code classifies an Error: "invalid", "notfound" (no such process),
// "limit", "refused" (nothing listens), "inuse" (the port is taken), or for "start" a failure of
// Wrap ("wrap:" and the code Wrap would print: escape, notfound, noexec) and "failed" (the program
// could not be started).
type Result struct {
	Error     string      `json:"error,omitempty"`
	Code      string      `json:"code,omitempty"`
	Process   *ProcState  `json:"process,omitempty"`
	Processes []ProcState `json:"processes,omitempty"`
	Output    *ProcOutput `json:"output,omitempty"`
}

// ProcState is a background process's state.
type ProcState struct {
	ID       string   `json:"id"`
	Args     []string `json:"args"`
	Started  int64    `json:"started"` // Unix nanoseconds
	Running  bool     `json:"running"`
	ExitCode int      `json:"exitCode"`
}

// ProcOutput is one read of a background process's output (see ring.Buffer.Read).
type ProcOutput struct {
	Stdout  []byte    `json:"stdout,omitempty"`
	Stderr  []byte    `json:"stderr,omitempty"`
	Offset  int64     `json:"offset"`
	Dropped int64     `json:"dropped"`
	State   ProcState `json:"state"`
}

// MaxProcesses bounds the running background processes of an agent (Result code "limit").
const MaxProcesses = 16

// MaxPayload bounds one frame's payload; output and stdin are sent in chunks of at most this size.
const MaxPayload = 32 << 10

// MaxResult bounds one Result as the client receives it (the JSON of all its parts). The largest
// an agent sends is an "output" read of a process's whole rings: two streams of ringBytes, base64
// in the JSON, and the process's state twice (Process and Output.State); the next is "list":
// every process the hub keeps (MaxProcesses running, as many exited), each state carrying the
// arguments that came in one request frame (at most MaxPayload). The sum of both bounds either,
// with room for the rest of each state. A result past it breaks the protocol.
const MaxResult = 2*((ringBytes+2)/3*4) + (2*MaxProcesses+2)*MaxPayload

// MaxResultsHeld bounds the bytes of unfinished results a client holds at once (the parts of
// concurrent results interleave on the link): a whole "output" read of each process the agent
// may run at once. Past it the agent breaks the protocol, whatever the single results.
const MaxResultsHeld = MaxProcesses * MaxResult

// Window bounds the stdin bytes a client has sent but the agent has not acknowledged yet.
const Window = 1 << 20

const headerLen = 9

// Start asks the agent to run a process.
type Start struct {
	Args []string `json:"args"`
	// Env is added to the agent's own environment (the container's); later entries win.
	Env []string `json:"env,omitempty"`
	// Dir is the working directory (absolute).
	Dir string `json:"dir,omitempty"`
	// Stdin says stdin frames follow; without it the process reads /dev/null.
	Stdin bool `json:"stdin,omitempty"`
	// Tree names the process tree: when the agent's input ends, processes whose environment
	// carries SANDBOXER_EXEC_ID=Tree or SANDBOXER_WRAPPER=Tree are killed with the process.
	Tree string `json:"tree,omitempty"`
	// Wrap, when set, runs Args as a sandbox command (see Wrap); Dir is then ignored.
	Wrap *Wrap `json:"wrap,omitempty"`
	// TimeoutMs ends a background process's tree after this long (0: never).
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// Wrap describes a sandbox command. The agent resolves Dir inside Root through every symlink,
// component by component (an absolute link to Root or below stays inside; anything else that
// leaves Root is an escape), checks that Args[0] names an executable regular file (on the PATH of
// the command's environment when it has no slash), starts it in a session of its own with
// SANDBOXER_EXEC_ID=ID added to its environment, and when it exits kills its process group and
// every process still carrying the marker. A failure before the start is reported as exit 199 and
// the single stderr line "sandboxer:NONCE:CODE", CODE one of escape, notfound, noexec.
type Wrap struct {
	Root  string `json:"root"`
	Dir   string `json:"dir"` // relative to Root, lexically clean
	ID    string `json:"id"`
	Nonce string `json:"nonce"`
}

// Exit reports how a process ended.
type Exit struct {
	// Code is the exit status, 128+N for a process killed by signal N, and 126 when the process
	// could not be started (Error then says why, as a daemon exec would).
	Code  int    `json:"code"`
	Error string `json:"error,omitempty"`
}

// frame is one decoded frame; payload is only valid until the next read.
type frame struct {
	typ     byte
	id      uint32
	payload []byte
}

// frameReader reads frames from r, reusing one buffer.
type frameReader struct {
	r   io.Reader
	hdr [headerLen]byte
	buf []byte
}

// ErrProtocol is wrapped by the error of a frame that breaks the protocol: a payload over
// MaxPayload, and on the client's side whatever its reader refuses (see Client.Violation).
var ErrProtocol = errors.New("agent protocol violation")

func (fr *frameReader) next() (frame, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(fr.hdr[5:])
	if n > MaxPayload {
		// Refused on the header alone: the length is never allocated, nor its bytes read.
		return frame{}, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrProtocol, n, MaxPayload)
	}
	if cap(fr.buf) < int(n) {
		fr.buf = make([]byte, n, MaxPayload)
	}
	p := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	return frame{typ: fr.hdr[0], id: binary.BigEndian.Uint32(fr.hdr[1:5]), payload: p}, nil
}

// appendFrame appends one encoded frame to b.
func appendFrame(b []byte, typ byte, id uint32, payload []byte) []byte {
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}
