package main_test

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkMCPBash compares one MCP tools/call of bash running /bin/true on the local adapter,
// with the journal on, against the baseline measured in the same run: bare
// exec.Command("/bin/true").Run(). Each reports its median as median-ns (the target: MCP no more
// than 1.25x the baseline).
//
//	go test -run '^$' -bench BenchmarkMCPBash -benchtime 500x ./cmd/sandboxer/
func BenchmarkMCPBash(b *testing.B) {
	b.Run("baseline-exec", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportMedian(b, lat)
	})
	// isolation=off is the tool path itself; isolation=auto adds the local adapter's kernel
	// isolation (namespaces, Landlock, a cgroup per command), whose own figure is in adapter/local.
	for _, iso := range []string{"off", "auto"} {
		b.Run("mcp-bash-journal/isolation="+iso, func(b *testing.B) {
			e := newEnv(b)
			cs := e.startMCP(b, "--run-id", "bench", "--node-id", "n", "--isolation", iso)
			args := map[string]any{"cmd": "/bin/true"}
			callTool(b, cs, "bash", args) // warm up: connection, journal file, prepared statements
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				res := callTool(b, cs, "bash", args)
				lat = append(lat, time.Since(start))
				if res.IsError {
					b.Fatal(text(b, res))
				}
			}
			reportMedian(b, lat)
		})
	}
}

func reportMedian(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "median-ns")
}
