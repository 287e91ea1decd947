package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent/trustfile"
	"github.com/sandboxer/sandboxer/egress"
)

var _ egress.Egressed = (*Sandbox)(nil)

// Egress returns the sandbox's egress proxy, made at first use; nil without Config.AllowHosts
// (egress.Egressed). ExecuteCommand attaches it (Ensure) and env adds egress.EnvOf.
func (s *Sandbox) Egress() *egress.Proxy { return s.egress.Get(s.cfg.AllowHosts, s.cfg.Egress) }

// TrustCA implements egress.TrustStore: the bundle of the sandbox's root file system (read on
// the host, from the tree its spec names) followed by pem, in a file of the commands' HOME.
func (s *Sandbox) TrustCA(ctx context.Context, pem []byte) (string, error) {
	if s.rec.Home == "" {
		return "", errors.New("the sandbox was made before commands had a HOME of their own")
	}
	err := trustfile.Write(filepath.Join(s.rec.Home, trustfile.Path), pem, func() ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(s.lay.sandbox(s.rec.ID), "bundle", "config.json"))
		if err != nil {
			return nil, err
		}
		var spec specs.Spec
		if err := json.Unmarshal(b, &spec); err != nil || spec.Root == nil {
			return nil, fmt.Errorf("the sandbox's spec names no root file system: %v", err)
		}
		root := spec.Root.Path
		if !filepath.IsAbs(root) {
			root = filepath.Join(s.lay.sandbox(s.rec.ID), "bundle", root)
		}
		return trustfile.System(root), nil
	})
	if err != nil {
		return "", err
	}
	return path.Join(adapter.DefaultHome, trustfile.Path), nil
}
