// Command sandboxer runs AI agents' tool calls (read, write, edit, grep, bash) in sandboxes: one
// call at a time (sandboxer tool), a raw command (sandboxer exec), or as an MCP server on stdio
// (sandboxer mcp). See docs/cli.md; the commands live in internal/cli.
package main

import (
	"os"

	"github.com/sandboxer/sandboxer/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
