// Command sandboxer runs AI agents' tool calls (read, write, edit, grep, bash) in sandboxes: one
// call at a time (sandboxer tool), a raw command (sandboxer exec), or as an MCP server on stdio
// (sandboxer mcp). See docs/cli.md.
//
// This binary is the front: it links the standard library only, so that it starts in about the
// time of a Go hello world, and hands the call to the engine, sandboxerd, installed beside it (or
// on PATH, or named by SANDBOXER_ENGINE). One-shot commands (internal/oneshot.Served) go to the
// engine's resident server, started on first use and ending when idle, which keeps journals and
// isolation helpers warm; the others, and every call when SANDBOXER_SERVER=off or the server
// cannot be reached, replace this process with the engine.
package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sandboxer/sandboxer/internal/oneshot"
)

func main() {
	args := os.Args[1:]
	self, err := os.Executable()
	if err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		// The engine refuses a workspace that holds this binary: a command could replace it.
		os.Setenv("SANDBOXER_FRONT", self)
	}
	engine, err := findEngine(self)
	if err != nil {
		os.Stderr.WriteString("sandboxer: " + err.Error() + "\n")
		os.Exit(127)
	}
	if os.Getenv("SANDBOXER_SERVER") != "off" && oneshot.IsServed(args) {
		code, ok, err := serve(engine, args)
		if ok {
			os.Exit(code)
		}
		if err != nil {
			os.Stderr.WriteString("sandboxer: the resident server is not used, the call runs in a process of its own: " + err.Error() +
				" (see docs/cli.md; SANDBOXER_SERVER_DIR names another directory, SANDBOXER_SERVER=off runs every call so)\n")
		}
	}
	err = syscall.Exec(engine, append([]string{engine}, args...), os.Environ())
	os.Stderr.WriteString("sandboxer: " + engine + ": " + err.Error() + "\n")
	os.Exit(126)
}

// engineName is the engine's file name.
const engineName = "sandboxerd"

// findEngine finds sandboxerd: $SANDBOXER_ENGINE, else beside this binary (self, symlinks
// resolved; "" when unknown), else on PATH.
func findEngine(self string) (string, error) {
	if e := os.Getenv("SANDBOXER_ENGINE"); e != "" {
		return filepath.Abs(e)
	}
	if self != "" {
		if p := filepath.Join(filepath.Dir(self), engineName); isExecutable(p) {
			return p, nil
		}
	}
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		if p := filepath.Join(dir, engineName); filepath.IsAbs(dir) && isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New(engineName + " is neither beside this binary nor on PATH (install both: go install github.com/sandboxer/sandboxer/cmd/...@latest; or set SANDBOXER_ENGINE)")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
