//go:build linux && !sandboxer_portable

package local_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// Renames across directories of the workspace work (git mv, package managers): a file and a
// directory moved with rename(2), not copied, with and without the network, and with landlock-tcp
// in place of the network namespace (before, each Landlock layer of its own refused them, EXDEV).
func TestRenameAcrossDirectories(t *testing.T) {
	requireLayers(t, local.LayerLandlock)
	needTool(t, "python3")
	needTool(t, "git")
	move := `import os
os.makedirs('a/b', exist_ok=True); os.makedirs('c', exist_ok=True)
open('a/b/f', 'w').write('x')
os.rename('a/b/f', 'c/f'); os.rename('a/b', 'c/b'); os.rename('c/b', 'top')
print(sorted(os.listdir('c')), os.path.isdir('top'))
`
	for _, cfg := range []local.Config{{}, {DisableLayers: []string{local.LayerNetNS}}} {
		sb := newIsolated(t, cfg)
		for _, network := range []bool{false, true} {
			res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `rm -rf a c top && exec python3 -c "$1"`, "sh", move}, AllowNetwork: network})
			assert.Equal(t, 0, res.ExitCode, "%v network %t: %s", cfg.DisableLayers, network, res.Stderr)
			assert.Equal(t, "['f'] True\n", string(res.Stdout), "%v network %t", cfg.DisableLayers, network)
		}
		git := `rm -rf r && git init -q r && cd r && mkdir d && echo x > d/f && git add . &&
git -c user.email=t@example.com -c user.name=t commit -qm i && git mv d/f g && git status --short`
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", git}})
		assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		assert.Equal(t, "R  d/f -> g\n", string(res.Stdout))
	}
}
