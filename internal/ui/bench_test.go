package ui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/journal"
)

// benchRows is the size of the benchmark's journal (the figure: the UI lists 100,000 calls and
// opens any one in under 200 ms).
const benchRows = 100_000

// benchJournal writes benchRows calls through the journal package: a small run of 40 calls
// first, then run "big" (20 nodes, each 3 iterations, 2 attempts), with every 50th call an
// error and about 600 bytes of output per call.
func benchJournal(b *testing.B) string {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "journal.db")
	j, err := journal.Open(ctx, path, journal.Options{})
	require.NoError(b, err)
	defer j.Close()
	out := `{"output":"` + strings.Repeat("line of output\\n", 36) + `","exitCode":0}`
	batch := make([]journal.Entry, 0, 1000)
	flush := func() {
		require.NoError(b, j.RecordBatch(ctx, batch))
		batch = batch[:0]
	}
	seqs := map[journal.Position]int{}
	for i := range benchRows {
		pos := journal.Position{RunID: "small", NodeID: "n0", Attempt: 1}
		if i >= 40 {
			k := i - 40
			pos = journal.Position{RunID: "big", NodeID: fmt.Sprintf("node-%02d", k%20), Iteration: k / 20 % 3, Attempt: 1 + k/60%2}
		}
		seqs[pos]++
		e := journal.Entry{RunID: pos.RunID, NodeID: pos.NodeID, Iteration: pos.Iteration, Attempt: pos.Attempt,
			Seq: seqs[pos], ToolName: "bash", InputJSON: fmt.Sprintf(`{"cmd":"make","args":["step-%d"]}`, i),
			OutputJSON: out, Status: journal.StatusSuccess, StartedAtMs: int64(1e12) + int64(i)*10,
			FinishedAtMs: int64(1e12) + int64(i)*10 + 7, IdempotencyKey: fmt.Sprint("k", i), SideEffect: true}
		if i%50 == 49 {
			e.Status, e.OutputJSON, e.ErrorJSON = journal.StatusError, "", `{"code":"TOOL_COMMAND_FAILED","message":"exit status 2"}`
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	return path
}

// BenchmarkUI times the page's requests over a journal of 100,000 calls, through the HTTP
// handler (query, JSON encoding, token check). Baseline in the same run: a bare primary-key
// SELECT of one row's columns through database/sql on the same read-only connection.
//
//	go test -run '^$' -bench BenchmarkUI -benchtime 200x ./internal/ui/
func BenchmarkUI(b *testing.B) {
	path := benchJournal(b)
	start := time.Now()
	s, err := New(context.Background(), path) // counts every row once: the run and task totals
	require.NoError(b, err)
	b.Logf("New (read-only open, totals of %d rows): %v", benchRows, time.Since(start).Round(time.Millisecond))
	defer s.Close()
	hs := httptest.NewServer(s)
	defer hs.Close()
	fetch := func(b *testing.B, p string) {
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		resp, err := http.Get(hs.URL + p + sep + "token=" + s.Token())
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n == 0 {
			b.Fatalf("%s: %s", p, resp.Status)
		}
	}
	b.Run("baseline-select-by-id", func(b *testing.B) {
		var in, out string
		for i := range b.N {
			if err := s.store.db.QueryRow(`SELECT input_json, output_json FROM tool_calls WHERE id = ?`, 1+i*7919%benchRows).Scan(&in, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	for name, p := range map[string]string{
		"calls-big-run-first-page": "/api/calls?run=big&limit=100",
		"calls-big-run-last-page":  fmt.Sprintf("/api/calls?run=big&limit=100&after=%d", benchRows-100),
		"calls-small-run":          "/api/calls?run=small&limit=100",
		"calls-small-run-poll":     "/api/calls?run=small&limit=100&after=40",
		"calls-big-run-poll":       fmt.Sprintf("/api/calls?run=big&limit=100&after=%d", benchRows),
		"calls-search-last-row":    fmt.Sprintf("/api/calls?q=step-%d&limit=100", benchRows-1),
		"calls-status-error":       "/api/calls?run=big&status=error&limit=100",
		"runs":                     "/api/runs",
		"tasks-big-run":            "/api/tasks?run=big",
	} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				fetch(b, p)
			}
		})
	}
	b.Run("call-by-id", func(b *testing.B) {
		for i := range b.N {
			fetch(b, fmt.Sprintf("/api/calls/%d", 1+i*7919%benchRows))
		}
	})
}
