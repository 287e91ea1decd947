// Command sandboxer-agent is the process spawner of docker and oci sandboxes (see package agent). It
// serves the agent protocol on stdin and stdout and logs to stderr.
//
//	sandboxer-agent         serve until stdin ends, then exit (started by an exec)
//	sandboxer-agent -idle   serve, then stay as the container's main process until SIGTERM
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

func main() {
	idle := len(os.Args) > 1 && os.Args[1] == "-idle"
	if len(os.Args) > 1 && !idle {
		fmt.Fprintln(os.Stderr, "usage: sandboxer-agent [-idle]")
		os.Exit(2)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- agent.Serve(os.Stdin, os.Stdout) }()
	select {
	case <-stop:
		os.Exit(0)
	case err := <-served:
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandboxer-agent:", err)
		}
	}
	if idle {
		<-stop
	}
}
