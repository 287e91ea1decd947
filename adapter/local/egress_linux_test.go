package local_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/egress/egresstest"
)

// TestEgressAllowlist: the egress harness on an isolated local sandbox (network namespace).
func TestEgressAllowlist(t *testing.T) {
	requireLayers(t, local.LayerNetNS)
	needTool(t, "busybox")
	egresstest.Run(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
		cfg := local.Config{Root: t.TempDir(), AllowHosts: allow, Egress: opts}
		if goBin, err := exec.LookPath("go"); err == nil { // go mod download in the sandbox too
			cfg.Path = local.DefaultPath + ":" + filepath.Dir(goBin)
		}
		sb, err := local.New(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sb.Stop(context.Background()) })
		return sb
	})
}

// TestEgressSecrets: secrets and rules on an isolated local sandbox, with the host's curl and python3.
func TestEgressSecrets(t *testing.T) {
	requireLayers(t, local.LayerNetNS)
	egresstest.RunSecrets(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
		sb, err := local.New(local.Config{Root: t.TempDir(), AllowHosts: allow, Egress: opts})
		require.NoError(t, err)
		t.Cleanup(func() { _ = sb.Stop(context.Background()) })
		return sb
	})
}
