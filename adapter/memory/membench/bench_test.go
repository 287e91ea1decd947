package membench_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/memory"
)

// benchExec runs cmd b.N times and reports the median call time next to the mean.
func benchExec(b *testing.B, sb adapter.Sandbox, cmd adapter.Command, want string) {
	b.Helper()
	ctx := context.Background()
	res, err := sb.ExecuteCommand(ctx, cmd)
	if err != nil || string(res.Stdout) != want {
		b.Fatalf("warm-up: %v, stdout %q stderr %q", err, res.Stdout, res.Stderr)
	}
	var times []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := sb.ExecuteCommand(ctx, cmd); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns")
}

func memSandbox(b *testing.B) *memory.Sandbox {
	sb, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

func localSandbox(b *testing.B) *local.Sandbox {
	sb, err := local.New(local.Config{Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

var (
	echoShC  = adapter.Command{Args: []string{"sh", "-c", "echo hi"}}
	echoArgv = adapter.Command{Args: []string{"echo", "hi"}}
)

// BenchmarkEcho compares `echo hi` in the memory adapter with the local adapter (the baseline,
// a host process per call) in the same run.
func BenchmarkEcho(b *testing.B) {
	b.Run("memory/sh-c", func(b *testing.B) { benchExec(b, memSandbox(b), echoShC, "hi\n") })
	b.Run("memory/argv", func(b *testing.B) { benchExec(b, memSandbox(b), echoArgv, "hi\n") })
	b.Run("local/sh-c", func(b *testing.B) { benchExec(b, localSandbox(b), echoShC, "hi\n") })
	b.Run("local/argv", func(b *testing.B) { benchExec(b, localSandbox(b), echoArgv, "hi\n") })
}

// BenchmarkPipeline1MB is `cat f | grep x | wc -l` over a 1 MB file, with the local adapter as
// the baseline.
func BenchmarkPipeline1MB(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		if i%10 == 0 {
			sb.WriteString("line with x marks the spot\n")
		} else {
			sb.WriteString("an ordinary line of text..\n")
		}
	}
	data := []byte(sb.String())
	want := strings.Count(sb.String(), "x")
	cmd := adapter.Command{Args: []string{"sh", "-c", "cat f | grep x | wc -l"}}
	for _, c := range []struct {
		name string
		sb   func(*testing.B) adapter.Sandbox
	}{
		{"memory", func(b *testing.B) adapter.Sandbox { return memSandbox(b) }},
		{"local", func(b *testing.B) adapter.Sandbox { return localSandbox(b) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := c.sb(b)
			if err := s.WriteFile(context.Background(), "f", data); err != nil {
				b.Fatal(err)
			}
			res, err := s.ExecuteCommand(context.Background(), cmd)
			if err != nil || strings.TrimSpace(string(res.Stdout)) != itoa(want) {
				b.Fatalf("warm-up: %v %q %q", err, res.Stdout, res.Stderr)
			}
			benchExec(b, s, cmd, string(res.Stdout))
		})
	}
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n))
}

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
