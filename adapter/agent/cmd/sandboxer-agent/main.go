// Command sandboxer-agent is the process spawner of docker and oci sandboxes (see package agent). It
// serves the agent protocol on stdin and stdout and logs to stderr.
//
//	sandboxer-agent               serve until stdin ends, then exit: the container's main process
//	                              (or the first agent started in it) serves agent.HubSocket too;
//	                              an agent exec'd later relays its stdio to that one
//	sandboxer-agent -idle         serve, then stay as the container's main process until SIGTERM
//	sandboxer-agent -init [-idle] serve as PID 1 of an oci container (see agent.ServeInit): deaf
//	                              to signals from inside, reaping orphans; with -idle stay when
//	                              stdin ends (until the runtime kills the container)
//
//	sandboxer-agent -fs OP ARGS   one file operation in /workspace (agent.ServeFS), started by
//	                              the adapters as a command, in place of a shell script
//
// -user USER[:GROUP] (before the others) starts every command as that user (agent.RunAs): the
// adapters run the agent as the container's root with the capabilities to switch, and the
// commands as the sandbox user. Every agent makes itself not dumpable (agent.Protect).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

func main() {
	args := os.Args[1:]
	if err := agent.Protect(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxer-agent:", err)
		os.Exit(1)
	}
	if len(args) > 0 && args[0] == agent.FSFlag { // one file operation, run as a command
		os.Exit(agent.ServeFS(agent.Workspace, args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(args) >= 2 && args[0] == "-user" {
		if err := agent.RunAs(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, "sandboxer-agent:", err)
			os.Exit(2)
		}
		args = args[2:]
	}
	init := len(args) > 0 && args[0] == "-init"
	if init {
		args = args[1:]
	}
	idle := len(args) == 1 && args[0] == "-idle"
	if len(args) > 0 && !idle {
		fmt.Fprintln(os.Stderr, "usage: sandboxer-agent [-user USER[:GROUP]] [-init] [-idle]")
		os.Exit(2)
	}
	a := agent.New(init)
	if !a.ListenHub() && !init && !idle {
		// The container's agent serves the hub: relay to it, so that this client shares its
		// background processes and listeners. Without it (an older agent), serve here.
		if agent.Relay(os.Stdin, os.Stdout) {
			return
		}
	}
	if init {
		if err := a.Serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sandboxer-agent:", err)
		}
		if !idle {
			a.Close()
			return
		}
		for {
			time.Sleep(time.Hour) // PID 1 ignores every signal: the runtime's SIGKILL ends it
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- a.Serve(os.Stdin, os.Stdout) }()
	select {
	case <-stop:
		a.Close()
		os.Exit(0)
	case err := <-served:
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandboxer-agent:", err)
		}
	}
	if idle {
		<-stop
	}
	a.Close()
}
