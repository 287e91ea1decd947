package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/tools"
)

// The figures of issue 36 (docs/figures.md), each with its baseline in the same run:
//
//	go test -run '^$' -bench . -benchtime 1x ./adapter/remote/

// median of durations.
func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// BenchmarkToolCall: a read tool call through the API on loopback (Go client, the journal off
// and on) against the same call in process on a local sandbox; median of 2,000 calls each.
func BenchmarkToolCall(b *testing.B) {
	const calls = 2000
	ctx := context.Background()
	input := json.RawMessage(`{"path":"go.mod"}`)
	content := []byte("module example.com/m\n\ngo 1.26\n")

	dir := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "go.mod"), content, 0o644))
	lsb, err := local.New(local.Config{Root: dir})
	require.NoError(b, err)
	defer lsb.Stop(ctx)
	read := tools.Lookup("read")
	tc := tools.NewContext(lsb)
	inProcess := func() {
		if _, err := read.Call(ctx, input, tc); err != nil {
			b.Fatal(err)
		}
	}

	through := func(journal string) func() {
		srv := servetest.Start(b, "--adapter", "local", "--journal", journal)
		sb, err := remote.New(ctx, remote.Config{URL: srv.URL})
		require.NoError(b, err)
		b.Cleanup(func() { sb.Stop(ctx) })
		require.NoError(b, sb.WriteFile(ctx, "go.mod", content))
		return func() {
			if _, err := sb.CallTool(ctx, "read", input, remote.ToolCall{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	cases := []struct {
		name string
		call func()
	}{
		{"in-process", inProcess},
		{"api-journal-off", through("off")},
		{"api-journal-on", through(filepath.Join(b.TempDir(), "journal.db"))},
	}
	medians := map[string]time.Duration{}
	for range b.N {
		for _, c := range cases {
			d := make([]time.Duration, calls)
			for i := range calls {
				start := time.Now()
				c.call()
				d[i] = time.Since(start)
			}
			medians[c.name] = median(d)
		}
	}
	for _, c := range cases {
		b.ReportMetric(float64(medians[c.name].Microseconds()), c.name+"-median-µs")
	}
	b.ReportMetric(float64((medians["api-journal-off"] - medians["in-process"]).Microseconds()), "api-added-median-µs")
}

// BenchmarkReadsPerSecond: read tool calls on one sandbox by 8 concurrent Go clients for 5 s
// (the journal on, as a server runs by default).
func BenchmarkReadsPerSecond(b *testing.B) {
	ctx := context.Background()
	srv := servetest.Start(b, "--adapter", "local")
	sb, err := remote.New(ctx, remote.Config{URL: srv.URL})
	require.NoError(b, err)
	defer sb.Stop(ctx)
	require.NoError(b, sb.WriteFile(ctx, "notes.md", []byte("- ship it\n")))
	input := json.RawMessage(`{"path":"notes.md"}`)
	for range b.N {
		var n, failed int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		deadline := time.Now().Add(5 * time.Second)
		for range 8 {
			wg.Go(func() {
				var k, f int64
				for time.Now().Before(deadline) {
					reply, err := sb.CallTool(ctx, "read", input, remote.ToolCall{})
					if err != nil || string(reply) != "{\"ok\":true,\"output\":\"- ship it\\n\"}\n" {
						f++
					}
					k++
				}
				mu.Lock()
				n, failed = n+k, failed+f
				mu.Unlock()
			})
		}
		wg.Wait()
		b.ReportMetric(float64(n)/5, "reads/s")
		b.ReportMetric(float64(failed), "errors")
	}
}

// pattern is a reader of n bytes that are not all zeros (a file system could store zeros sparsely).
type pattern struct{ left int64 }

var block = func() []byte {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}()

func (p *pattern) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	n := copy(b, block)
	if int64(n) > p.left {
		n = int(p.left)
	}
	p.left -= int64(n)
	return n, nil
}

// BenchmarkTransfer: a 1 GiB file uploaded from this host and downloaded through the API (local
// adapter: the server writes the host file; docker: through the sandbox agent) against the same
// bytes over a plain loopback TCP connection from and into a file on the same file system (the
// kernel's sendfile and splice: no copy through user space).
func BenchmarkTransfer(b *testing.B) {
	for _, name := range []string{"local", "docker"} {
		b.Run(name, func(b *testing.B) { benchTransfer(b, name) })
	}
}

func benchTransfer(b *testing.B, adapterName string) {
	const size = 1 << 30
	ctx := context.Background()
	srv := servetest.Start(b, "--adapter", adapterName, "--max-file-bytes", "2GiB")
	sb, err := remote.New(ctx, remote.Config{URL: srv.URL})
	require.NoError(b, err)
	defer sb.Stop(ctx)

	// The file uploaded, as a user uploads one: a file of this host.
	src := filepath.Join(b.TempDir(), "src.bin")
	f, err := os.Create(src)
	require.NoError(b, err)
	_, err = io.Copy(f, &pattern{left: size})
	require.NoError(b, err)
	require.NoError(b, f.Close())
	open := func() *os.File {
		f, err := os.Open(src)
		require.NoError(b, err)
		return f
	}

	// Baseline: TCP on loopback, the receiver writing a file in the server's state directory.
	baseline := func(upload bool) time.Duration {
		path := filepath.Join(srv.StateDir, "baseline.bin")
		defer os.Remove(path)
		if !upload {
			f, err := os.Create(path)
			require.NoError(b, err)
			_, err = io.Copy(f, &pattern{left: size})
			require.NoError(b, err)
			require.NoError(b, f.Close())
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(b, err)
		defer ln.Close()
		done := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			if upload {
				f, err := os.Create(path)
				if err == nil {
					_, err = io.Copy(f, c)
					err = errors.Join(err, f.Close())
				}
				done <- err
				return
			}
			f, err := os.Open(path)
			if err == nil {
				_, err = io.Copy(c, f)
				f.Close()
			}
			done <- err
		}()
		start := time.Now()
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(b, err)
		if upload {
			in := open()
			_, err = io.Copy(c, in)
			in.Close()
			require.NoError(b, err)
			c.Close()
			require.NoError(b, <-done)
		} else {
			n, err := io.Copy(io.Discard, c)
			require.NoError(b, err)
			require.Equal(b, int64(size), n)
			c.Close()
			require.NoError(b, <-done)
		}
		return time.Since(start)
	}
	mbps := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	for range b.N {
		baseUp := baseline(true)
		start := time.Now()
		in := open()
		n, err := sb.WriteFileFrom(ctx, "big.bin", in)
		in.Close()
		require.NoError(b, err)
		require.Equal(b, int64(size), n)
		up := time.Since(start)

		baseDown := baseline(false)
		start = time.Now()
		rc, size2, err := sb.OpenFile(ctx, "big.bin")
		require.NoError(b, err)
		got, err := io.Copy(io.Discard, rc)
		rc.Close()
		require.NoError(b, err)
		require.Equal(b, size2, got)
		down := time.Since(start)

		b.ReportMetric(mbps(baseUp), "loopback-up-MiB/s")
		b.ReportMetric(mbps(up), "api-up-MiB/s")
		b.ReportMetric(100*baseUp.Seconds()/up.Seconds(), "up-%-of-loopback")
		b.ReportMetric(mbps(baseDown), "loopback-down-MiB/s")
		b.ReportMetric(mbps(down), "api-down-MiB/s")
		b.ReportMetric(100*baseDown.Seconds()/down.Seconds(), "down-%-of-loopback")
	}
}
