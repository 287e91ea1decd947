package sdk_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/internal/servetest"
)

// BenchmarkSDKOverhead: the median latency of reading a small file (1 KiB) through the Go
// client (the remote adapter), the TypeScript SDK and the Python SDK, on one server of the local
// adapter in the same run; the SDKs' own scripts also time the bare request of their runtime
// (fetch, http.client).
//
//	go test -run '^$' -bench SDKOverhead -benchtime 1x ./sdk/
func BenchmarkSDKOverhead(b *testing.B) {
	node, tsc := needNode(b)
	requirePytest(b)
	buildTS(b, tsc)
	srv := servetest.Start(b, "--adapter", "local")
	ctx := context.Background()
	sb, err := remote.New(ctx, remote.Config{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Stop(ctx)
	if err := sb.WriteFile(ctx, "bench.txt", make([]byte, 1024)); err != nil {
		b.Fatal(err)
	}
	env := append(cleanEnv(), "SANDBOXER_URL="+srv.URL)
	for range b.N {
		const n = 1000
		d := make([]time.Duration, n)
		for i := range n {
			start := time.Now()
			if _, err := sb.ReadFile(ctx, "bench.txt"); err != nil {
				b.Fatal(err)
			}
			d[i] = time.Since(start)
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		goMs := float64(d[n/2].Microseconds()) / 1000

		ts := exec.Command(node, filepath.Join(tsDir, "bench", "exec.mjs"), "500")
		ts.Env = env
		out, err := ts.CombinedOutput()
		if err != nil {
			b.Fatalf("node bench: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`readFile, SDK\s+median ([\d.]+) ms`).FindSubmatch(out)
		f := regexp.MustCompile(`readFile, fetch\s+median ([\d.]+) ms`).FindSubmatch(out)
		if m == nil || f == nil {
			b.Fatalf("node bench: no readFile medians in\n%s", out)
		}
		tsMs, _ := strconv.ParseFloat(string(m[1]), 64)
		fetchMs, _ := strconv.ParseFloat(string(f[1]), 64)

		py := exec.Command("/usr/bin/python3", filepath.Join("python", "bench.py"), "--url", srv.URL, "-n", "1000")
		py.Env = append(env, "PYTHONPATH=python")
		out, err = py.Output()
		if err != nil {
			b.Fatalf("python bench: %v\n%s", err, out)
		}
		var pr struct {
			SDK struct{ Median float64 } `json:"sdk_read_file_ms"`
			Raw struct{ Median float64 } `json:"raw_http_client_ms"`
		}
		if err := json.Unmarshal(out, &pr); err != nil {
			b.Fatalf("python bench: %v\n%s", err, out)
		}
		b.ReportMetric(goMs, "go-median-ms")
		b.ReportMetric(tsMs, "ts-sdk-median-ms")
		b.ReportMetric(fetchMs, "ts-bare-fetch-median-ms")
		b.ReportMetric(pr.SDK.Median, "py-sdk-median-ms")
		b.ReportMetric(pr.Raw.Median, "py-bare-http.client-median-ms")
		b.ReportMetric(tsMs-goMs, "ts-over-go-ms")
		b.ReportMetric(pr.SDK.Median-goMs, "py-over-go-ms")
	}
}
