//go:build !linux || sandboxer_portable

package local

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Off Linux (macOS), and on Linux built with the sandboxer_portable tag (how the tests run this
// code here), the local adapter has no kernel isolation: a command is a plain host process of the
// caller's user in a session and process group of its own, killed as a group when it ends, with a
// private TMPDIR; file calls are jailed to the workspace by os.Root as everywhere. Every result's
// Isolation is empty (network, filesystem, processTree and limits all false, no layer). Isolation
// on fails closed: every command is refused with errs.IsolationUnavailable, as Linux does when a
// layer is missing, and needs isolation: off.

// notLinux is the reason every layer is unavailable.
var notLinux = "kernel isolation of the local adapter needs Linux (this is " + runtime.GOOS + "/" + runtime.GOARCH + ")"

// allLayers are the layers Probe reports, all unavailable here.
var allLayers = []string{LayerUserNS, LayerPIDNS, LayerIPCNS, LayerUTSNS, LayerProc, LayerKeyring, LayerNoCaps, LayerNoSetuid, LayerFSView,
	LayerNetNS, LayerLandlock, LayerLandlockScope, LayerLandlockNet, LayerCgroup, LayerLimits, LayerPIDNSCommand, LayerUnprivileged, LayerUIDPerSandbox, LayerUnixConnect, LayerDisk}

// isolation without a kernel to enforce anything: a private TMPDIR, and the refusal of a
// fail-closed configuration.
type isolation struct {
	cfg Config
	tmp string
}

func newIsolation(cfg Config, _ string, _ *homeDir, _ []string, _ []cache) (*isolation, error) {
	tmp, err := os.MkdirTemp("", "sandboxer-tmp-")
	if err != nil {
		return nil, err
	}
	return &isolation{cfg: cfg, tmp: tmp}, nil
}

func (iso *isolation) stop() error { return os.RemoveAll(iso.tmp) }

func (iso *isolation) ensureTmp() error { return nil }

func (iso *isolation) capabilities() (adapter.FSIsolation, adapter.NetworkIsolation) {
	return adapter.FSNone, adapter.NetHost
}

// missing lists what a command lacks, in the terms of Linux's report (isolate_linux.go): every
// layer it needs (neededLayers) and the process tree's kill.
func (iso *isolation) missing(allowNetwork bool) []string {
	m := neededLayers(iso.cfg, allowNetwork)
	if needProcessTree(iso.cfg) {
		m = append(m, "processTree")
	}
	return m
}

// startIsolated never starts anything. With isolation on it refuses the command (fail closed),
// with what it would lack; with every layer it needs disabled by name, the caller runs it as a
// plain process, and its result's Isolation says that nothing was enforced.
func (s *Sandbox) startIsolated(c adapter.Command, _, _ string, _ []string, _, _ *os.File) (process, adapter.Isolation, error) {
	if m := s.iso.missing(c.AllowNetwork); len(m) > 0 {
		e := errs.New(errs.IsolationUnavailable, "exec", "", "isolation layer(s) %s cannot be applied: %s; isolation: off runs commands as plain processes of your user", strings.Join(m, ", "), notLinux)
		e.Details = map[string]any{"missing": m, "layers": []string{}}
		return nil, adapter.Isolation{}, e
	}
	return nil, adapter.Isolation{}, nil
}

// Probe reports which isolation layers the local adapter can apply on this machine: none here.
func Probe() Report {
	var rep Report
	for _, l := range allLayers {
		rep.Layers = append(rep.Layers, LayerStatus{Name: l, Reason: notLinux})
	}
	return rep
}

func (iso *isolation) limitHit(int) string { return "" }

const (
	janitorDir = "dir"
	janitorPG  = "pg"
)

// lookAfter and released: there is no janitor here; what a SIGKILLed owner leaves (its temporary
// directories, a running command's process group) stays.
func lookAfter(string, string) {}
func released(string, string)  {}

// socket: without namespaces commands share the host's network.
func (iso *isolation) socket(context.Context, string, int) (*os.File, error) { return nil, nil }

func (iso *isolation) warm(bool) {}

// reset empties TMPDIR: there is nothing else of the sandbox's own here.
func (iso *isolation) reset(context.Context) error {
	entries, err := os.ReadDir(iso.tmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(iso.tmp, e.Name())); err != nil {
			return err
		}
	}
	return os.Chmod(iso.tmp, 0o700)
}
