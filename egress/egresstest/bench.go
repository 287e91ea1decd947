package egresstest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
)

// BenchDownload measures a 100 MB download by busybox wget inside a sandbox of the adapter,
// through its egress proxy (the sandbox's listener, the path to this process, the proxy), against
// the same download by busybox wget on the host straight over loopback: the two run alternately,
// and the medians of each (sandbox-MB/s, host-MB/s) and their ratio (x-host) are reported. The
// figure of issue 16: at least 70% of the host's throughput.
func BenchDownload(b *testing.B, newSandbox func(b *testing.B, allowHosts []string, opts egress.Config) adapter.Sandbox) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		b.Skip("no busybox on the host")
	}
	const size = 100 << 20
	srv := NewTarget(b, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		io.CopyN(w, zeros{}, size)
	}))
	sb := newSandbox(b, []string{"bench.test"}, egress.Config{
		Resolve:    Names(map[string]string{"bench.test": "127.0.0.1"}),
		AllowAddrs: LoopbackOnly,
	})
	ctx := context.Background()
	inside := adapter.Command{Args: []string{"busybox", "wget", "-q", "-O", "/dev/null", fmt.Sprintf("http://bench.test:%d/big", srv.Port)}}
	outside := func() error {
		return exec.Command(busybox, "wget", "-q", "-O", "/dev/null", fmt.Sprintf("http://127.0.0.1:%d/big", srv.Port)).Run()
	}
	if res, err := sb.ExecuteCommand(ctx, inside); err != nil || res.ExitCode != 0 {
		b.Fatalf("wget in the sandbox: %v %s", err, res.Stderr)
	}
	var in, out []time.Duration
	b.SetBytes(size)
	for b.Loop() {
		start := time.Now()
		if err := outside(); err != nil {
			b.Fatal(err)
		}
		out = append(out, time.Since(start))
		start = time.Now()
		if res, err := sb.ExecuteCommand(ctx, inside); err != nil || res.ExitCode != 0 {
			b.Fatalf("wget in the sandbox: %v %s", err, res.Stderr)
		}
		in = append(in, time.Since(start))
	}
	slices.Sort(in)
	slices.Sort(out)
	mbps := func(d time.Duration) float64 { return size / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(in[len(in)/2]), "sandbox-MB/s")
	b.ReportMetric(mbps(out[len(out)/2]), "host-MB/s")
	b.ReportMetric(mbps(in[len(in)/2])/mbps(out[len(out)/2]), "x-host")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
