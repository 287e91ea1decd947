package local_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// The figures of the local adapter, each next to its baseline:
//
//	go test -run '^$' -bench . -count 10 ./adapter/local/ | benchstat -
func benchSandbox(b *testing.B) *local.Sandbox {
	sb, err := local.New(local.Config{Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

func BenchmarkExecTrue(b *testing.B) {
	b.Run("baseline=exec.Command", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapter=local", func(b *testing.B) {
		sb := benchSandbox(b)
		ctx := context.Background()
		cmd := adapter.Command{Args: []string{"/bin/true"}}
		for b.Loop() {
			if res, err := sb.ExecuteCommand(ctx, cmd); err != nil || res.ExitCode != 0 {
				b.Fatal(err, res.ExitCode)
			}
		}
	})
}

func BenchmarkReadFile4KiB(b *testing.B) {
	sb := benchSandbox(b)
	data := make([]byte, 4096)
	p := filepath.Join(sb.Dir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("baseline=os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapter=local", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := sb.ReadFile(ctx, "f"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkWriteFile4KiB(b *testing.B) {
	sb := benchSandbox(b)
	data := make([]byte, 4096)
	p := filepath.Join(sb.Dir(), "f")
	b.Run("baseline=os.WriteFile", func(b *testing.B) {
		for b.Loop() {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapter=local", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if err := sb.WriteFile(ctx, "f", data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
