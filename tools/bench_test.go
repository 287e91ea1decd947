package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/tools"
	"github.com/sandboxer/sandboxer/tools/patch"
)

// benchLocal is a local sandbox without kernel isolation: the tool layer's own cost. The isolated
// exec figure is BenchmarkExecTrue in adapter/local.
func benchLocal(b *testing.B, root string) adapter.Sandbox {
	return benchLocalConfig(b, local.Config{Root: root, Isolation: local.IsolationOff})
}

func benchLocalConfig(b *testing.B, cfg local.Config) adapter.Sandbox {
	sb, err := local.New(cfg)
	require.NoError(b, err)
	b.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

// BenchmarkBashTrue compares the bash tool running /bin/true on the local adapter (input decoding,
// validation, policy check, process group, capture) with a bare exec.Command in the same run.
// Target: tool median at most 1.15x bare.
func BenchmarkBashTrue(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapter", func(b *testing.B) {
		sb := benchLocal(b, b.TempDir())
		ctx := context.Background()
		for b.Loop() {
			if _, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"/bin/true"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, iso := range []string{local.IsolationOff, local.IsolationAuto} {
		b.Run("tool/isolation="+iso, func(b *testing.B) {
			tc := tools.NewContext(benchLocalConfig(b, local.Config{Root: b.TempDir(), Isolation: iso}))
			in := json.RawMessage(`{"cmd":"/bin/true"}`)
			ctx := context.Background()
			if _, err := tools.Bash.Call(ctx, in, tc); err != nil { // starts the isolation helper
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := tools.Bash.Call(ctx, in, tc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGrep50MB compares the grep tool with bare `rg -n` over the same generated 50 MB tree
// (500 files of 100 KB, about 1000 matching lines). Target: tool at most 1.1x bare.
func BenchmarkGrep50MB(b *testing.B) {
	root := b.TempDir()
	genTree(b, root, 500, 100<<10)
	const pattern = "needle[0-9]+"
	b.Run("bare", func(b *testing.B) {
		var out bytes.Buffer
		for b.Loop() {
			out.Reset()
			cmd := exec.Command("rg", "-n", "--", pattern, ".")
			cmd.Dir, cmd.Stdout = root, &out
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(bytes.Count(out.Bytes(), []byte("\n"))), "matches")
	})
	b.Run("tool", func(b *testing.B) {
		tc := tools.NewContext(benchLocal(b, root))
		tc.MaxOutputBytes = tools.BashMaxOutputBytes
		in := json.RawMessage(`{"pattern":"` + pattern + `"}`)
		ctx := context.Background()
		var res *tools.Result
		for b.Loop() {
			var err error
			if res, err = tools.Grep.Call(ctx, in, tc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(strings.Count(res.Output, "\n")), "matches")
	})
}

func genTree(b *testing.B, root string, files, size int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau")
	var buf bytes.Buffer
	for i := range files {
		buf.Reset()
		for buf.Len() < size {
			for range 10 {
				buf.WriteString(words[rng.IntN(len(words))])
				buf.WriteByte(' ')
			}
			if rng.IntN(600) == 0 {
				fmt.Fprintf(&buf, "needle%d", rng.IntN(1000))
			}
			buf.WriteByte('\n')
		}
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%03d.txt", i))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, buf.Bytes(), 0o644))
	}
}

// edit1000 returns a 1000-line file and a 10-hunk patch for it whose hunks are all 2 lines off
// (so each one goes through the relocation search).
func edit1000() (string, string) {
	var src, p strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&src, "line %d: some ordinary source text\n", i)
	}
	p.WriteString("--- a/f.txt\n+++ b/f.txt\n")
	for h := range 10 {
		at := 50 + h*100 // 1-based line of the changed line
		// The header says the hunk starts at the changed line: 2 lines below where it really does.
		fmt.Fprintf(&p, "@@ -%d,5 +%d,5 @@\n", at, at)
		for i := at - 2; i <= at+2; i++ {
			if i == at {
				fmt.Fprintf(&p, "-line %d: some ordinary source text\n+line %d: CHANGED\n", i, i)
				continue
			}
			fmt.Fprintf(&p, " line %d: some ordinary source text\n", i)
		}
	}
	return src.String(), p.String()
}

func TestEdit1000Hunks(t *testing.T) {
	t.Parallel()
	src, p := edit1000()
	out, err := patch.Apply([]byte(src), p)
	require.NoError(t, err)
	require.Equal(t, 10, strings.Count(string(out), "CHANGED"))
	require.Contains(t, string(out), "line 550: CHANGED\n")
}

// BenchmarkEdit1000Lines10Hunks: the patch engine alone, and the edit tool on the local adapter
// (read, apply, atomic write). Target: under 1 ms.
func BenchmarkEdit1000Lines10Hunks(b *testing.B) {
	src, p := edit1000()
	b.Run("engine", func(b *testing.B) {
		for b.Loop() {
			if _, err := patch.Apply([]byte(src), p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tool", func(b *testing.B) {
		tc := tools.NewContext(benchLocal(b, b.TempDir()))
		ctx := context.Background()
		write, _ := json.Marshal(map[string]string{"path": "f.txt", "content": src})
		edit, _ := json.Marshal(map[string]string{"path": "f.txt", "patch": p})
		for b.Loop() {
			b.StopTimer()
			if _, err := tools.Write.Call(ctx, write, tc); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := tools.Edit.Call(ctx, edit, tc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
