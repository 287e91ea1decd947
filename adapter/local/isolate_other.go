//go:build !linux || sandboxer_portable

package local

import (
	"os"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

const notLinux = "kernel isolation of the local adapter needs Linux"

// isolation off Linux: nothing can be enforced; a fail-closed configuration refuses every command.
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

func (s *Sandbox) startIsolated(c adapter.Command, _, _ string, _ []string, _, _ *os.File) (process, adapter.Isolation, error) {
	if s.iso.cfg.RequireIsolation {
		return nil, adapter.Isolation{}, errs.New(errs.IsolationUnavailable, "exec", "", notLinux)
	}
	return nil, adapter.Isolation{}, nil
}

// Probe reports which isolation layers the local adapter can apply on this machine: none off Linux.
func Probe() Report {
	var rep Report
	for _, l := range []string{LayerUserNS, LayerPIDNS, LayerProc, LayerNetNS, LayerLandlock, LayerLandlockScope, LayerLandlockNet, LayerCgroup} {
		rep.Layers = append(rep.Layers, LayerStatus{Name: l, Reason: notLinux})
	}
	return rep
}

func (iso *isolation) limitHit(int) string { return "" }

const (
	janitorDir = "dir"
	janitorPG  = "pg"
)

// lookAfter and released: off Linux nothing removes what a killed process leaves.
func lookAfter(string, string) {}
func released(string)          {}
