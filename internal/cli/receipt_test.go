package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReceiptPaths: a bash call's receipt lists the workspace paths it created, changed and
// deleted, and --no-path-diff (SANDBOXER_NO_PATH_DIFF) leaves them out.
func TestReceiptPaths(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "old.txt"), []byte("old"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "gone.txt"), []byte("gone"), 0o600))
	bash := func(script string, extra ...string) map[string]any {
		t.Helper()
		var stdout, stderr strings.Builder
		args := append([]string{"tool", "bash", "--root", root, "--state-dir", state, "--journal", "off",
			"--input", `{"cmd":"sh","args":["-c",` + mustJSON(t, script) + `]}`}, extra...)
		code := run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
		require.Equal(t, 0, code, stdout.String()+stderr.String())
		var out struct {
			Receipt map[string]any `json:"receipt"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout.String()), &out), stdout.String())
		require.NotNil(t, out.Receipt, stdout.String())
		return out.Receipt
	}
	r := bash("echo new > new.txt; echo more >> old.txt; rm gone.txt")
	assert.Equal(t, map[string]any{"created": []any{"new.txt"}, "changed": []any{"old.txt"}, "deleted": []any{"gone.txt"}}, r["paths"])

	r = bash("echo again > again.txt", "--no-path-diff")
	assert.NotContains(t, r, "paths")
	assert.EqualValues(t, 0, r["stdoutBytes"])
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
