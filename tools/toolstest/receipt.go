package toolstest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/tools"
)

// receiptForks is how many processes the receipt case starts besides its shell.
const receiptForks = 5

// testReceipt: a command that writes known bytes to stdout, stderr and a file, starts
// receiptForks processes, and creates, changes and deletes workspace files gets a receipt with
// exactly those output counts and paths, and bounded process and disk counts where the adapter
// counts them (docs/receipts.md).
func (s suite) testReceipt(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "keep.txt", "content", "kept\n"))
	ok(t, tc, tools.Write, obj("path", "change.txt", "content", "before\n"))
	ok(t, tc, tools.Write, obj("path", "gone.txt", "content", "bye\n"))
	script := "printf '%0500d' 0; printf 'errbytes' >&2; printf '%03000d' 0 > made.txt; " +
		"mkdir -p sub && printf x > sub/new.txt; printf after >> change.txt; rm gone.txt; " +
		"for i in " + strings.TrimSpace(strings.Repeat("x ", receiptForks)) + "; do sleep 0.2 & done; wait"
	res := ok(t, tc, tools.Bash, sh(script))
	r := res.Value.(tools.BashResult).Receipt
	if b, err := json.Marshal(r); err == nil {
		t.Logf("receipt: %s", b)
	}

	assert.Equal(t, int64(500), r.StdoutBytes)
	assert.Equal(t, int64(8), r.StderrBytes)
	assert.GreaterOrEqual(t, r.WallUs, int64(200000), "the sleeps alone take 0.2 s")
	require.NotNil(t, r.Paths)
	assert.Empty(t, r.Paths.Skipped)
	assert.Equal(t, []string{"made.txt", "sub/new.txt"}, r.Paths.Created)
	assert.Equal(t, []string{"change.txt"}, r.Paths.Changed)
	assert.Equal(t, []string{"gone.txt"}, r.Paths.Deleted)
	if r.Processes != nil { // memory: every command; cgroup v2 pids.peak: the most at once
		assert.GreaterOrEqual(t, *r.Processes, int64(receiptForks), "processes")
		assert.LessOrEqual(t, *r.Processes, int64(receiptForks+40), "processes")
	}
	if r.DiskWriteBytes != nil { // memory counts exactly; block I/O may be written back later
		assert.GreaterOrEqual(t, *r.DiskWriteBytes, int64(0))
	}
	if r.CPUUs != nil {
		assert.GreaterOrEqual(t, *r.CPUUs, int64(0))
		assert.LessOrEqual(t, *r.CPUUs, 4*r.WallUs+1_000_000, "cpu")
	}
	if r.PeakMemoryBytes != nil {
		assert.Positive(t, *r.PeakMemoryBytes)
	}
	if c, isCapable := caps(tc.Sandbox); isCapable && c.Exec == adapter.ExecInterpreted {
		require.NotNil(t, r.Processes, "the interpreter counts its commands")
		require.NotNil(t, r.DiskWriteBytes, "the interpreter counts its file bytes")
		assert.Equal(t, int64(3000+1+5), *r.DiskWriteBytes)
	}

	// The journal's row is the JSON of the result: the receipt is in it.
	b, err := json.Marshal(res.Value)
	require.NoError(t, err)
	var m struct{ Receipt map[string]any }
	require.NoError(t, json.Unmarshal(b, &m))
	assert.EqualValues(t, 500, m.Receipt["stdoutBytes"])
	assert.NotNil(t, m.Receipt["paths"])

	// A failing command carries its receipt in the error's details.
	e := fails(t, tc, tools.Bash, sh("printf abc; exit 3"), "TOOL_COMMAND_FAILED")
	fr, isReceipt := e.Details["receipt"].(adapter.Receipt)
	require.True(t, isReceipt)
	assert.Equal(t, int64(3), fr.StdoutBytes)
}

// testReceiptNothingChanged: a call that changes nothing lists no paths; with NoPathDiff the
// receipt has no path diff at all.
func (s suite) testReceiptNothingChanged(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "a/b.txt", "content", "x\n"))
	ok(t, tc, tools.Write, obj("path", "c.txt", "content", "y\n"))
	r := ok(t, tc, tools.Bash, sh("cat c.txt a/b.txt >/dev/null")).Value.(tools.BashResult).Receipt
	require.NotNil(t, r.Paths)
	assert.Equal(t, adapter.PathChanges{}, *r.Paths)
	assert.Equal(t, int64(0), r.StdoutBytes)

	tc.NoPathDiff = true
	r = ok(t, tc, tools.Bash, sh("printf z > d.txt")).Value.(tools.BashResult).Receipt
	assert.Nil(t, r.Paths)
}
