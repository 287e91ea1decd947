package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/journal"
	"github.com/sandboxer/sandboxer/tools"
)

// BenchmarkReceipt measures what a receipt adds to a bash call recorded in a chained journal
// (issue 39: at most 50 µs): the same call, in the same run and interleaved, with an empty
// receipt in its row and no path diff ("without"), with the receipt in its row ("receipt"), and
// with the path diff too ("paths"). The adapter's cgroup reads are in all three: their own
// cost is BenchmarkMeter in adapter/internal/cgstat. The workspace holds 100 or 1000 small files in 20 directories.
//
//	go test -run '^$' -bench Receipt -benchtime 400x -count 3 ./tools/
func BenchmarkReceipt(b *testing.B) {
	for _, files := range []int{100, 1000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			root := b.TempDir()
			for i := range files {
				p := filepath.Join(root, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i))
				require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(b, os.WriteFile(p, []byte("x\n"), 0o644))
			}
			tc := tools.NewContext(benchLocalConfig(b, local.Config{Root: root}))
			j, err := journal.Open(context.Background(), filepath.Join(b.TempDir(), "j.db"), journal.Options{})
			require.NoError(b, err)
			b.Cleanup(func() { j.Close() })
			ctx := context.Background()
			in := json.RawMessage(`{"cmd":"/bin/true"}`)
			if _, err := tools.Bash.Call(ctx, in, tc); err != nil { // starts the isolation helper
				b.Fatal(err)
			}
			seq := 0
			// call runs one bash call between its journal row's Begin and Finish: with the
			// receipt in the row or an empty one, with the path diff or without.
			call := func(receipt, paths bool) time.Duration {
				seq++
				start := time.Now()
				e := journal.Entry{RunID: "bench", NodeID: "n", Attempt: 1, ToolName: "bash", InputJSON: string(in),
					StartedAtMs: start.UnixMilli(), SideEffect: true, IdempotencyKey: fmt.Sprint("k-", seq)}
				s, err := j.Begin(ctx, e)
				if err != nil {
					b.Fatal(err)
				}
				tc.NoPathDiff = !paths
				res, err := tools.Bash.Call(ctx, in, tc)
				if err != nil {
					b.Fatal(err)
				}
				out := res.Value.(tools.BashResult)
				if !receipt {
					out.Receipt = adapter.Receipt{} // its three zero members stay in the row
				}
				row, err := json.Marshal(out)
				if err != nil {
					b.Fatal(err)
				}
				e.Seq, e.OutputJSON, e.Status, e.FinishedAtMs, e.ErrorJSON = s, string(row), journal.StatusSuccess, time.Now().UnixMilli(), "null"
				if err := j.Finish(ctx, e); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			variants := []struct {
				name           string
				receipt, paths bool
			}{{"without", false, false}, {"receipt", true, false}, {"paths", true, true}}
			lat := make([][]time.Duration, len(variants))
			for n := 0; b.Loop(); n++ {
				for k := range variants {
					i := (n + k) % len(variants) // each goes first in turn
					lat[i] = append(lat[i], call(variants[i].receipt, variants[i].paths))
				}
			}
			median := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2].Nanoseconds()) / 1e3
			}
			w, r, p := median(lat[0]), median(lat[1]), median(lat[2])
			b.ReportMetric(w, "without-us")
			b.ReportMetric(r-w, "receipt-added-us")
			b.ReportMetric(p-w, "with-paths-added-us")
		})
	}
}
