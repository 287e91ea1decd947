package adapter

import (
	"context"
	"time"
)

// Long-running processes (issue 17): a command started in one call, whose output is read, whose
// stdin is written and which is signalled in later calls, and which lives until it exits, is
// killed, or its sandbox stops.

// DefaultMaxProcesses bounds the running processes of a sandbox when the adapter's configuration
// does not say; one more Start is errs.LimitExceeded. Of the exited ones a sandbox keeps (for their
// output and status) the most recent DefaultMaxProcesses, and forgets older ones (a handle of a
// forgotten process may then answer errs.NotFound: docker and oci keep processes by ID only).
const DefaultMaxProcesses = 16

// ProcessRingBytes bounds the output a process keeps per stream: older bytes are dropped, and
// ProcessOutput.Dropped says how many a reader missed.
const ProcessRingBytes = 1 << 20

// Starter starts processes that outlive the call that started them.
//
// For docker and oci the agent in the sandbox keeps the processes (and their output), so a
// long-lived sandbox's processes outlive the sandboxer process that started them and another
// process attached to the same sandbox finds them by ID. For local and memory they live as long as
// the Sandbox value (they end with Stop, or with the sandboxer process).
type Starter interface {
	// Start starts cmd and returns at once. cmd.Timeout, if set, still ends the process;
	// cmd.Stdin must be nil (write input with Process.Write); cmd.Stdout and cmd.Stderr, if set,
	// get a live copy as with ExecuteCommand while this handle lives. Errors as ExecuteCommand's
	// for a command that cannot start, and errs.LimitExceeded when the sandbox already keeps its
	// maximum of processes.
	Start(ctx context.Context, cmd Command) (Process, error)
	// Processes lists the sandbox's processes, running and exited, oldest first.
	Processes(ctx context.Context) ([]ProcessState, error)
	// Process finds a process by ID: errs.NotFound when the sandbox has no such process.
	Process(ctx context.Context, id string) (Process, error)
}

// Process is one process started by Starter.Start. Its methods may be called from several
// goroutines. Once the sandbox is stopped, a handle either reports the process as exited or fails
// with errs.SandboxUnavailable.
type Process interface {
	// ID is unique within the sandbox (short, printable, stable across processes of the
	// sandboxer that attach to the same sandbox).
	ID() string
	// Output returns what the process wrote after offset since (0: from the start): the bytes
	// still in each stream's ring, Offset to pass as since next time, and Dropped, the bytes after
	// since that the rings no longer hold. Offsets count the bytes of both streams together in
	// the order they were produced (as the adapter received them: output of the two streams that
	// arrives together, as through two pipes, has no finer order), so one number orders stdout
	// and stderr; a since beyond the
	// end returns nothing and the current end. The State is as of the same instant as the bytes:
	// a reader that sees Running false and reads again from Offset gets nothing more.
	Output(ctx context.Context, since int64) (ProcessOutput, error)
	// Write sends data to the process's stdin (blocking while the process does not read it,
	// bounded by ctx). Errors: errs.InvalidInput once stdin is closed or the process exited.
	Write(ctx context.Context, data []byte) error
	// CloseStdin ends the process's stdin (it reads end of file). Closing it again, or after the
	// process exited, is not an error.
	CloseStdin(ctx context.Context) error
	// Signal sends a signal by name ("TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2",
	// "STOP", "CONT") to the process's whole tree. Unknown names are errs.InvalidInput; an exited
	// process is not an error.
	Signal(ctx context.Context, sig string) error
	// Wait waits for the process to exit (or ctx) and returns its final state.
	Wait(ctx context.Context) (ProcessState, error)
	// State is the process's state now.
	State(ctx context.Context) (ProcessState, error)
}

// OutputLimiter is a Process whose reads can be bounded (the tool layer bounds process_output by
// its maxOutputBytes). OutputLimit is Output covering at most limit offsets after since (limit 0:
// no bound), so at most limit bytes come back; offsets after since whose bytes the rings no
// longer hold are skipped first (and counted in Dropped), so a reader far behind gets the oldest
// bytes still held rather than empty reads.
type OutputLimiter interface {
	OutputLimit(ctx context.Context, since int64, limit int) (ProcessOutput, error)
}

// ProcessState describes a process at one instant.
type ProcessState struct {
	ID      string    `json:"id"`
	Args    []string  `json:"args"`
	Started time.Time `json:"started"`
	Running bool      `json:"running"`
	// ExitCode is meaningful once Running is false: 128+signo for a signal, as ExecuteCommand.
	ExitCode int `json:"exitCode"`
	// Limit names a resource limit that ended it ("memory"), as Result.Limit.
	Limit string `json:"limit,omitempty"`
	// Isolation is what was enforced for it, as Result.Isolation.
	Isolation Isolation `json:"isolation"`
}

// ProcessOutput is one read of a process's output (see Process.Output).
type ProcessOutput struct {
	Stdout  []byte       `json:"stdout"`
	Stderr  []byte       `json:"stderr"`
	Offset  int64        `json:"offset"`
	Dropped int64        `json:"dropped"`
	State   ProcessState `json:"state"`
}
