package egress

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The record keeps the last maxRecords decisions, says how many a mark missed, bounds each
// host, and Since waits (up to its grace) for requests under way.
func TestRecordBounded(t *testing.T) {
	t.Parallel()
	p, err := New(Config{AllowHosts: []string{"a.example"}})
	require.NoError(t, err)
	defer p.Close()
	m := p.Mark()
	for i := range maxRecords + 10 {
		p.rec.add("h"+strings.Repeat("x", i%3), 1, false, "no")
	}
	ds, dropped := p.Since(context.Background(), m, 0)
	assert.Len(t, ds, maxRecords)
	assert.Equal(t, 10, dropped)
	ds, dropped = p.Since(context.Background(), p.Mark(), 0)
	assert.Empty(t, ds)
	assert.Zero(t, dropped)

	m = p.Mark()
	p.rec.add(strings.Repeat("y", 1<<20), 1, false, "no")
	ds, _ = p.Since(context.Background(), m, 0)
	require.Len(t, ds, 1)
	assert.Len(t, ds[0].Host, maxRecordedHost+3)

	// An allowed request under way: Since waits for it to finish, up to the grace.
	m = p.Mark()
	e := p.rec.add("a.example", 443, true, "")
	go func() {
		e.bytesIn.Add(5)
		e.finish()
	}()
	ds, _ = p.Since(context.Background(), m, time.Minute)
	require.Len(t, ds, 1)
	assert.EqualValues(t, 5, ds[0].BytesIn, "Since waited for the request to end")
	e2 := p.rec.add("a.example", 443, true, "") // never finishes
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ds, _ = p.Since(ctx, Mark(e2.seq), time.Minute)
	require.Len(t, ds, 1, "a cancelled context ends the wait")
}
