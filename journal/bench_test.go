package journal_test

import (
	"context"
	"database/sql"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/journal"
)

// BenchmarkJournal measures sustained journal writes in rows per second (the rows/s metric; the
// target is at least 10,000). Baseline, in the same run: the same INSERT through a bare
// database/sql prepared statement on a WAL, synchronous=NORMAL database.
//
//	go test -run '^$' -bench BenchmarkJournal -benchtime 20000x ./journal/
func BenchmarkJournal(b *testing.B) {
	ctx := context.Background()
	pos := journal.Position{RunID: "bench", NodeID: "n", Attempt: 1}

	b.Run("baseline-bare-insert", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "bare.db")
		j, err := journal.Open(ctx, path, journal.Options{}) // only to create the schema
		require.NoError(b, err)
		require.NoError(b, j.Close())
		db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000")
		require.NoError(b, err)
		defer db.Close()
		st, err := db.Prepare(`INSERT INTO tool_calls (run_id, node_id, iteration, attempt, seq, tool_name,
			input_json, output_json, started_at_ms, finished_at_ms, status, error_json, idempotency_key,
			side_effect, idempotent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		require.NoError(b, err)
		defer st.Close()
		b.ResetTimer()
		for i := range b.N {
			e := entry(pos, i+1, "write")
			_, err := st.Exec(e.RunID, e.NodeID, e.Iteration, e.Attempt, e.Seq, e.ToolName, e.InputJSON,
				e.OutputJSON, e.StartedAtMs, e.FinishedAtMs, string(e.Status), e.ErrorJSON,
				e.IdempotencyKey, e.SideEffect, e.Idempotent)
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})

	b.Run("Record", func(b *testing.B) {
		j := open(b, journal.Options{})
		b.ResetTimer()
		for i := range b.N {
			if err := j.Record(ctx, entry(pos, i+1, "write")); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})

	b.Run("Reserve", func(b *testing.B) {
		j := open(b, journal.Options{})
		b.ResetTimer()
		for range b.N {
			if _, err := j.Reserve(ctx, pos); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})

	b.Run("Begin+Finish", func(b *testing.B) {
		// What one tool call of the CLI or the MCP server costs the journal: the running row
		// (which allocates the seq), then its outcome.
		j := open(b, journal.Options{})
		b.ResetTimer()
		for range b.N {
			seq, err := j.Begin(ctx, entry(pos, 0, "write"))
			if err != nil {
				b.Fatal(err)
			}
			if err := j.Finish(ctx, entry(pos, seq, "write")); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})

	b.Run("Reserve+Record", func(b *testing.B) {
		// The same through the library's other path: a seq reservation, then the whole row.
		j := open(b, journal.Options{})
		b.ResetTimer()
		for range b.N {
			seq, err := j.Reserve(ctx, pos)
			if err != nil {
				b.Fatal(err)
			}
			if err := j.Record(ctx, entry(pos, seq, "write")); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})

	b.Run("RecordBatch-100", func(b *testing.B) {
		j := open(b, journal.Options{})
		batch := make([]journal.Entry, 0, 100)
		b.ResetTimer()
		for i := range b.N {
			batch = append(batch, entry(pos, i+1, "write"))
			if len(batch) == cap(batch) || i == b.N-1 {
				if err := j.RecordBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// BenchmarkBeginCold measures one Begin as a tool call meets it: back to back (warm), after a
// 1 ms pause, and after a bare exec of /bin/true and the pause, as in BenchmarkMCPBash's loop,
// where the exec and the pause leave the CPU's caches cold for SQLite's code. Each reports the
// median Begin (begin-median-ns); the row is completed with Finish outside the timing.
//
//	go test -run '^$' -bench BeginCold -benchtime 1000x -count 3 ./journal/
func BenchmarkBeginCold(b *testing.B) {
	ctx := context.Background()
	pos := journal.Position{RunID: "bench", NodeID: "n", Attempt: 1}
	for _, before := range []string{"nothing", "pause", "exec+pause"} {
		b.Run("after="+before, func(b *testing.B) {
			j := open(b, journal.Options{})
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				switch before {
				case "exec+pause":
					if err := exec.Command("/bin/true").Run(); err != nil {
						b.Fatal(err)
					}
					time.Sleep(time.Millisecond)
				case "pause":
					time.Sleep(time.Millisecond)
				}
				start := time.Now()
				seq, err := j.Begin(ctx, entry(pos, 0, "bash"))
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if err := j.Finish(ctx, entry(pos, seq, "bash")); err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "begin-median-ns")
		})
	}
}

// BenchmarkChain measures what the hash chain adds to a tool call's journal rows: Begin+Finish
// in one run as the CLI and the MCP server write them, on three journals in turn (each first in
// turn), so that each meets the same load: Finish as before the chain (one UPDATE: the baseline,
// unchained-us), chained (the UPDATE with the link, and the run's head moved, in one transaction:
// chained-us) and chained and signed (signed-us); each the median of the loop's calls. added-us
// is chained minus unchained; added-mean-us the same of the means, which count the tail's
// stalls (likely the WAL's checkpoints and page splits: a chained call writes one page more, the
// run's head, and a longer row). The target (issue 39) is at most 50 µs.
//
//	go test -run '^$' -bench Chain -benchtime 5000x -count 6 ./journal/
func BenchmarkChain(b *testing.B) {
	ctx := context.Background()
	pos := journal.Position{RunID: "bench", NodeID: "n", Attempt: 1}
	unchained, chained := open(b, journal.Options{}), open(b, journal.Options{})
	journal.Unchained(unchained)
	signed := open(b, journal.Options{Key: []byte("0123456789abcdef0123456789abcdef")})
	js := []*journal.Journal{unchained, chained, signed}
	lat := make([][]time.Duration, len(js))
	for n := 0; b.Loop(); n++ {
		for k := range js {
			i := (n + k) % len(js) // each goes first in turn
			j := js[i]
			start := time.Now()
			seq, err := j.Begin(ctx, entry(pos, 0, "write"))
			if err != nil {
				b.Fatal(err)
			}
			if err := j.Finish(ctx, entry(pos, seq, "write")); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], time.Since(start))
		}
	}
	mean := func(d []time.Duration) float64 {
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		return float64(sum.Nanoseconds()) / float64(len(d)) / 1e3
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	mu, mc := mean(lat[0]), mean(lat[1]) // before the sort: the tail included
	u, c, s := median(lat[0]), median(lat[1]), median(lat[2])
	b.ReportMetric(u, "unchained-us")
	b.ReportMetric(c, "chained-us")
	b.ReportMetric(s, "signed-us")
	b.ReportMetric(c-u, "added-us")
	b.ReportMetric(mc-mu, "added-mean-us")
	v, err := chained.Verify(ctx, "")
	require.NoError(b, err)
	require.True(b, v.OK)
}
