//go:build !linux || sandboxer_portable

package local

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Off Linux (macOS), and on Linux built with the sandboxer_portable tag (how the tests run this
// code here), the local adapter has no kernel isolation: a command is a plain host process of the
// caller's user in a session and process group of its own, killed as a group when it ends, with a
// private TMPDIR; file calls are jailed to the workspace by os.Root as everywhere. Every result's
// Isolation is empty (network, filesystem, processTree and limits all false, no layer), and
// RequireIsolation refuses every command with errs.IsolationUnavailable, as Linux does when a layer
// is missing.

// notLinux is the reason every layer is unavailable.
var notLinux = "kernel isolation of the local adapter needs Linux (this is " + runtime.GOOS + "/" + runtime.GOARCH + ")"

// allLayers are the layers Probe reports, all unavailable here.
var allLayers = []string{LayerUserNS, LayerPIDNS, LayerProc, LayerKeyring, LayerNoCaps, LayerNoSetuid, LayerFSView,
	LayerNetNS, LayerLandlock, LayerLandlockScope, LayerLandlockNet, LayerCgroup, LayerLimits, LayerPIDNSCommand, LayerUnprivileged, LayerUIDPerSandbox}

// isolation without a kernel to enforce anything: a private TMPDIR, and the refusal of a
// fail-closed configuration.
type isolation struct {
	cfg Config
	tmp string
}

func newIsolation(cfg Config, _ string) (*isolation, error) {
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

// missing lists what a command lacks, in the terms of Linux's report (isolate_linux.go): the
// limits (unless none are set or the layer is disabled), the network cut (unless the command may
// use the network), the file system confinement and view, the process tree kill, and for a root
// caller the unprivileged uid of its own.
func (iso *isolation) missing(allowNetwork bool) []string {
	var m []string
	noLimits := iso.cfg.Memory == NoLimit && iso.cfg.Pids == NoLimit && iso.cfg.CPUs == 0
	if !noLimits && !slices.Contains(iso.cfg.DisableLayers, LayerLimits) {
		m = append(m, LayerLimits)
	}
	if !allowNetwork {
		m = append(m, "network")
	}
	m = append(m, "filesystem", LayerFSView, "processTree")
	if os.Geteuid() == 0 && !slices.Contains(iso.cfg.DisableLayers, LayerUnprivileged) {
		m = append(m, LayerUnprivileged, LayerUIDPerSandbox) // commands are the host's root to file permissions
	}
	return m
}

// startIsolated never starts anything: the caller runs the command as a plain process, and its
// result's Isolation says that nothing was enforced. Under RequireIsolation the command is refused
// with what it would lack.
func (s *Sandbox) startIsolated(c adapter.Command, _, _ string, _ []string, _, _ *os.File) (process, adapter.Isolation, error) {
	if s.iso.cfg.RequireIsolation {
		m := s.iso.missing(c.AllowNetwork)
		e := errs.New(errs.IsolationUnavailable, "exec", "", "required isolation cannot be applied: %s: %s", strings.Join(m, ", "), notLinux)
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

func (iso *isolation) viewRoots() []string { return nil }
