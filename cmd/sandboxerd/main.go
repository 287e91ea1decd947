// Command sandboxerd is the sandboxer engine: the whole command line (see docs/cli.md; the
// commands live in internal/cli), and the resident server (sandboxerd server) that the front,
// cmd/sandboxer, hands one-shot calls to. Run it directly for a call in a process of its own.
package main

import (
	"os"

	"github.com/sandboxer/sandboxer/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
