package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// The commands on a long-lived sandbox's processes (adapter.Starter: started by bash with
// opts.background) and its ports (adapter.PortForwarder).

// openLongLived opens the sandbox named by --sandbox, which these commands require.
func openLongLived(c *cobra.Command) (*session, error) {
	s, err := settingsOf(c)
	if err != nil {
		return nil, err
	}
	if s.Sandbox == "" {
		return nil, usage(fmt.Errorf("%s: --sandbox ID is required (a long-lived sandbox: see sandboxer sandbox create)", c.Name()))
	}
	return openSession(c.Context(), s)
}

func starterOf(sess *session) (adapter.Starter, error) {
	st, ok := sess.Sandbox.(adapter.Starter)
	if c, capable := sess.Sandbox.(adapter.Capable); ok && capable && !c.Capabilities().Processes {
		ok = false
	}
	if !ok {
		return nil, &errs.Error{Code: errs.InvalidInput, Op: "process", Msg: "this sandbox's adapter cannot run background processes", Err: errors.ErrUnsupported}
	}
	return st, nil
}

// withProcess runs f on the process id of the sandbox named by --sandbox.
func withProcess(c *cobra.Command, id string, f func(adapter.Process) error) error {
	sess, err := openLongLived(c)
	if err != nil {
		return err
	}
	defer sess.Close()
	st, err := starterOf(sess)
	if err != nil {
		return err
	}
	p, err := st.Process(c.Context(), id)
	if err != nil {
		return err
	}
	return f(p)
}

func newPsCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "ps --sandbox ID",
		Short: `List a sandbox's background processes as {"processes":[...]}`,
		Long: `List the background processes (bash with opts.background) of a long-lived sandbox, running
and recently exited, oldest first, as one JSON object {"processes":[{"id","args","started",
"running","exitCode","isolation"}...]}. Processes of local and memory sandboxes live only as long
as the sandboxer process that started them (an MCP server); docker and oci sandboxes keep theirs.`,
		Args: exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			sess, err := openLongLived(c)
			if err != nil {
				return err
			}
			defer sess.Close()
			st, err := starterOf(sess)
			if err != nil {
				return err
			}
			return listProcesses(c.Context(), st, std)
		}),
	}
	addCommonFlags(c.Flags())
	return c
}

func listProcesses(ctx context.Context, st adapter.Starter, std Streams) error {
	list, err := st.Processes(ctx)
	if err != nil {
		return err
	}
	if list == nil {
		list = []adapter.ProcessState{}
	}
	return printJSON(std, map[string]any{"processes": list})
}

func newLogsCmd(std Streams) *cobra.Command {
	var follow, asJSON bool
	var since int64
	c := &cobra.Command{
		Use:   "logs --sandbox ID PROCESS [-f]",
		Short: "Print a background process's output (stdout to stdout, stderr to stderr)",
		Long: `Print what a background process of a long-lived sandbox wrote, from offset --since (0: the
oldest byte still held; each stream keeps its last 1 MiB): its stdout on stdout, its stderr on
stderr. With -f, follow the output until the process exits (or an interrupt). With --json, print
one JSON object per read instead: {"stdout","stderr","offset","dropped","running","exitCode"}.
Bytes the process's rings no longer held are reported on stderr ("N bytes dropped").`,
		Args: exactArgs(1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			if since < 0 {
				return usage(errors.New("logs: --since must not be negative"))
			}
			return withProcess(c, args[0], func(p adapter.Process) error {
				return printLogs(c.Context(), p, since, follow, asJSON, std)
			})
		}),
	}
	addCommonFlags(c.Flags())
	c.Flags().BoolVarP(&follow, "follow", "f", false, "follow the output until the process exits")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per read")
	c.Flags().Int64Var(&since, "since", 0, "offset to start from (the offset a previous read returned)")
	return c
}

// logsRecord is one read of logs --json, as process_output's result.
type logsRecord struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Offset   int64  `json:"offset"`
	Dropped  int64  `json:"dropped"`
	Running  bool   `json:"running"`
	ExitCode *int   `json:"exitCode,omitempty"`
}

// outputWaiter is a Process that can wait for output (the local and memory adapters' processes);
// others are polled.
type outputWaiter interface {
	WaitOutput(ctx context.Context, since int64) error
}

// logsPoll is how often logs -f asks a process that cannot wait for its output.
const logsPoll = 100 * time.Millisecond

// printLogs prints p's output from since, once or (follow) until p exits or ctx ends.
func printLogs(ctx context.Context, p adapter.Process, since int64, follow, asJSON bool, std Streams) error {
	for {
		out, err := p.Output(ctx, since)
		if err != nil {
			if follow && ctx.Err() != nil {
				return nil
			}
			return err
		}
		if asJSON {
			rec := logsRecord{Stdout: string(out.Stdout), Stderr: string(out.Stderr), Offset: out.Offset,
				Dropped: out.Dropped, Running: out.State.Running}
			if !out.State.Running {
				rec.ExitCode = &out.State.ExitCode
			}
			if !follow || len(out.Stdout)+len(out.Stderr) > 0 || out.Dropped > 0 || !out.State.Running {
				if err := printJSON(std, rec); err != nil {
					return err
				}
			}
		} else {
			if out.Dropped > 0 {
				fmt.Fprintf(std.Err, "sandboxer: %d bytes dropped\n", out.Dropped)
			}
			if _, err := std.Out.Write(out.Stdout); err != nil {
				return err
			}
			if _, err := std.Err.Write(out.Stderr); err != nil {
				return err
			}
		}
		since = out.Offset
		if !follow || !out.State.Running {
			return nil
		}
		if w, ok := p.(outputWaiter); ok {
			if err := w.WaitOutput(ctx, since); err != nil {
				return nil // interrupted
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logsPoll):
		}
	}
}

func newKillCmd(std Streams) *cobra.Command {
	var sig string
	c := &cobra.Command{
		Use:   "kill --sandbox ID PROCESS [--signal S]",
		Short: `Send a signal to a background process's tree and print {"process":...,"signal":...}`,
		Args:  exactArgs(1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			return withProcess(c, args[0], func(p adapter.Process) error {
				if err := p.Signal(c.Context(), sig); err != nil {
					if errors.Is(err, errs.InvalidInput) {
						return usage(err)
					}
					return err
				}
				return printJSON(std, map[string]string{"process": p.ID(), "signal": strings.TrimPrefix(strings.ToUpper(sig), "SIG")})
			})
		}),
	}
	addCommonFlags(c.Flags())
	c.Flags().StringVarP(&sig, "signal", "s", "TERM", "TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP or CONT")
	return c
}

// parseForward parses [HOSTPORT:]PORT. HOSTPORT 0 picks a free port; without it, the host port is
// PORT.
func parseForward(spec string) (hostPort, port int, err error) {
	h, p, found := strings.Cut(spec, ":")
	if !found {
		h, p = spec, spec
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return 0, 0, fmt.Errorf("port-forward: %q: the sandbox port must be 1..65535", spec)
	}
	hostPort, err = strconv.Atoi(h)
	if err != nil || hostPort < 0 || hostPort > 65535 {
		return 0, 0, fmt.Errorf("port-forward: %q: the host port must be 0..65535 (0: any free one)", spec)
	}
	return hostPort, port, nil
}

func newPortForwardCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "port-forward --sandbox ID [HOSTPORT:]PORT",
		Short: "Forward a port of 127.0.0.1 on the host to a port on the sandbox's loopback",
		Long: `Listen on 127.0.0.1:HOSTPORT (only loopback: nothing else can connect) and forward each
connection to 127.0.0.1:PORT inside the sandbox (local isolated: through the isolation helper into
the sandbox's network namespace; docker and oci: through the sandbox agent; no port is published
and the sandbox's network stays off). HOSTPORT defaults to PORT; 0 picks a free port. Once
listening it prints {"listen":"127.0.0.1:HOSTPORT","port":PORT} and serves until interrupted.`,
		Args: exactArgs(1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			hostPort, port, err := parseForward(args[0])
			if err != nil {
				return usage(err)
			}
			sess, err := openLongLived(c)
			if err != nil {
				return err
			}
			defer sess.Close()
			pf, ok := sess.Sandbox.(adapter.PortForwarder)
			if !ok {
				return &errs.Error{Code: errs.InvalidInput, Op: "port-forward", Msg: "this sandbox's adapter cannot forward ports", Err: errors.ErrUnsupported}
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)))
			if err != nil {
				return err
			}
			if err := printJSON(std, map[string]any{"listen": ln.Addr().String(), "port": port}); err != nil {
				ln.Close()
				return err
			}
			return forward(c.Context(), ln, pf, port, std.Err)
		}),
	}
	addCommonFlags(c.Flags())
	return c
}

// forward serves ln until ctx ends: each connection is joined to a DialPort(port) of pf, bytes
// copied both ways (each direction's end passed on as a half close). A connection the sandbox
// refuses is closed at once and reported on warn. ln is closed on return, and every
// connection with it.
func forward(ctx context.Context, ln net.Listener, pf adapter.PortForwarder, port int, warn io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	var warnMu sync.Mutex
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			in, err := pf.DialPort(ctx, port)
			if err != nil {
				warnMu.Lock()
				fmt.Fprintf(warn, "sandboxer: port-forward: %v\n", err)
				warnMu.Unlock()
				return
			}
			defer in.Close()
			// Closing both ends on ctx's end unblocks the copies.
			unhook := context.AfterFunc(ctx, func() { conn.Close(); in.Close() })
			defer unhook()
			pipeBoth(conn, in)
		}()
	}
}

// pipeBoth copies a to b and b to a until both directions have ended.
func pipeBoth(a, b net.Conn) {
	done := make(chan struct{}, 2)
	half := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go half(a, b)
	go half(b, a)
	<-done
	<-done
}
