package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// decoded checks status and decodes the answer into a T.
func decoded[T any](t *testing.T, want, status int, data []byte) T {
	t.Helper()
	require.Equal(t, want, status, "%s", data)
	var v T
	require.NoError(t, json.Unmarshal(data, &v), "%s", data)
	return v
}

// files reads the sandbox's files by name.
func (ta *testAPI) files(token, id string, names ...string) map[string]string {
	ta.t.Helper()
	out := map[string]string{}
	for _, n := range names {
		status, data := ta.do("GET", "/v1/sandboxes/"+id+"/files?path="+n, token, nil)
		if status == http.StatusOK {
			out[n] = string(data)
		}
	}
	return out
}

// TestAPISnapshots: take, restore (verified, in place with replace), create from a snapshot,
// list, get and delete over the API, each token with a catalog of its own; a blob altered in the
// catalog fails a restore with VERIFY_FAILED naming the path.
func TestAPISnapshots(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.json")
	alice, err := addToken(file, token{Name: "alice"})
	require.NoError(t, err)
	bob, err := addToken(file, token{Name: "bob"})
	require.NoError(t, err)
	tokens, err := openTokens(file, nil)
	require.NoError(t, err)
	ta := newTestAPI(t, []string{"--adapter", "local"}, func(o *apiOptions) { o.Tokens = tokens })

	sb := ta.create(alice, api.CreateRequest{})
	id := "/v1/sandboxes/" + sb.ID
	for name, content := range map[string]string{"a.txt": "alpha\n", "dir/b.txt": "bravo, only here\n"} {
		status, data := ta.do("PUT", id+"/files?path="+name, alice, content)
		require.Equal(t, http.StatusOK, status, "%s", data)
	}
	status, data := ta.do("POST", id+"/tools/bash", alice, `{"cmd":"mkdir","args":["-p","empty/nested"]}`)
	require.Equal(t, http.StatusOK, status, "%s", data)

	status, data = ta.do("POST", id+"/snapshots", alice, api.SnapshotRequest{Name: "s1"})
	snap := decoded[api.Snapshot](t, http.StatusCreated, status, data)
	assert.Equal(t, "s1", snap.Name)
	assert.Equal(t, sb.ID, snap.Source)
	assert.Equal(t, 2, snap.Files)
	assert.Equal(t, 2, snap.Stored)

	// Refusals: a name taken, a bad name, a sandbox of another token.
	status, data = ta.do("POST", id+"/snapshots", alice, api.SnapshotRequest{Name: "s1"})
	ta.refused(status, data, http.StatusConflict, "SYNC_CONFLICT")
	for _, bad := range []string{"", "../x", ".hidden", strings.Repeat("n", 129)} {
		status, data = ta.do("POST", id+"/snapshots", alice, api.SnapshotRequest{Name: bad})
		ta.refused(status, data, http.StatusBadRequest, "INVALID_INPUT")
	}
	status, data = ta.do("POST", id+"/snapshots", bob, api.SnapshotRequest{Name: "s2"})
	ta.refused(status, data, http.StatusNotFound, "SANDBOX_UNAVAILABLE")

	// Change the workspace, then roll it back: refused onto files without replace.
	ta.do("PUT", id+"/files?path=a.txt", alice, "changed\n")
	ta.do("PUT", id+"/files?path=new.txt", alice, "new\n")
	status, data = ta.do("POST", id+"/restore", alice, api.RestoreRequest{Snapshot: "s1"})
	ta.refused(status, data, http.StatusConflict, "SYNC_CONFLICT")
	status, data = ta.do("POST", id+"/restore", alice, api.RestoreRequest{Snapshot: "s1", Replace: true})
	restored := decoded[api.Restored](t, http.StatusOK, status, data)
	assert.Equal(t, api.Restored{Snapshot: "s1", Sandbox: sb.ID, Files: 2, Bytes: snap.Bytes}, restored)
	assert.Equal(t, map[string]string{"a.txt": "alpha\n", "dir/b.txt": "bravo, only here\n"}, ta.files(alice, sb.ID, "a.txt", "dir/b.txt", "new.txt"))
	status, data = ta.do("GET", id+"/files/stat?path=empty/nested", alice, nil)
	assert.Equal(t, "dir", decoded[api.File](t, http.StatusOK, status, data).Type, "empty directories come back too")

	// A new sandbox from the snapshot.
	from := ta.create(alice, api.CreateRequest{FromSnapshot: "s1"})
	assert.Equal(t, map[string]string{"a.txt": "alpha\n", "dir/b.txt": "bravo, only here\n"}, ta.files(alice, from.ID, "a.txt", "dir/b.txt"))
	status, data = ta.do("POST", "/v1/sandboxes", alice, api.CreateRequest{FromSnapshot: "nope"})
	ta.refused(status, data, http.StatusNotFound, "TOOL_NOT_FOUND")

	// List and get; bob sees none of it, and can neither restore nor delete it.
	status, data = ta.do("GET", "/v1/snapshots", alice, nil)
	list := decoded[api.SnapshotList](t, http.StatusOK, status, data)
	require.Len(t, list.Snapshots, 1)
	assert.Equal(t, "s1", list.Snapshots[0].Name)
	status, data = ta.do("GET", "/v1/snapshots?source=sbx-other", alice, nil)
	assert.Empty(t, decoded[api.SnapshotList](t, http.StatusOK, status, data).Snapshots)
	status, data = ta.do("GET", "/v1/snapshots/s1", alice, nil)
	assert.Equal(t, 2, decoded[api.Snapshot](t, http.StatusOK, status, data).Files)
	status, data = ta.do("GET", "/v1/snapshots", bob, nil)
	assert.Empty(t, decoded[api.SnapshotList](t, http.StatusOK, status, data).Snapshots)
	bobs := ta.create(bob, api.CreateRequest{})
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/snapshots/s1", nil},
		{"DELETE", "/v1/snapshots/s1", nil},
		{"POST", "/v1/sandboxes/" + bobs.ID + "/restore", api.RestoreRequest{Snapshot: "s1"}},
		{"POST", "/v1/sandboxes", api.CreateRequest{FromSnapshot: "s1"}},
	} {
		status, data = ta.do(req.method, req.path, bob, req.body)
		ta.refused(status, data, http.StatusNotFound, "TOOL_NOT_FOUND")
	}
	assert.Empty(t, ta.files(bob, bobs.ID, "a.txt"))

	// One byte of dir/b.txt altered in alice's catalog: the restore fails, naming it.
	packs, err := filepath.Glob(filepath.Join(ta.a.opt.Base.StateDir, "serve", "snapshots", "alice", "blobs", "*.pack"))
	require.NoError(t, err)
	require.Len(t, packs, 1)
	raw, err := os.ReadFile(packs[0])
	require.NoError(t, err)
	at := bytes.Index(raw, []byte("bravo, only here"))
	require.GreaterOrEqual(t, at, 0)
	raw[at] ^= 1
	require.NoError(t, os.WriteFile(packs[0], raw, 0o644))
	fresh := ta.create(alice, api.CreateRequest{})
	status, data = ta.do("POST", "/v1/sandboxes/"+fresh.ID+"/restore", alice, api.RestoreRequest{Snapshot: "s1"})
	ta.refused(status, data, http.StatusUnprocessableEntity, "VERIFY_FAILED")
	assert.Contains(t, string(data), "dir/b.txt")
	status, data = ta.do("POST", "/v1/sandboxes", alice, api.CreateRequest{FromSnapshot: "s1"})
	ta.refused(status, data, http.StatusUnprocessableEntity, "VERIFY_FAILED")

	// Delete.
	status, data = ta.do("DELETE", "/v1/snapshots/s1", alice, nil)
	require.Equal(t, http.StatusNoContent, status, "%s", data)
	status, data = ta.do("GET", "/v1/snapshots/s1", alice, nil)
	ta.refused(status, data, http.StatusNotFound, "TOOL_NOT_FOUND")
	status, data = ta.do("POST", id+"/restore", alice, api.RestoreRequest{Snapshot: "s1"})
	ta.refused(status, data, http.StatusNotFound, "TOOL_NOT_FOUND")

	// Pause is the containers': a local sandbox refuses it.
	status, data = ta.do("POST", id+"/pause", alice, nil)
	ta.refused(status, data, http.StatusBadRequest, "INVALID_INPUT")
}

// needDockerImage skips t without a docker daemon and the sandbox image (fails where
// SANDBOXER_TEST_REQUIRE names docker).
func needDockerImage(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, err := image.Exists(ctx, "", image.DefaultTag)
	if err == nil && !ok {
		err = os.ErrNotExist
	}
	if err == nil {
		_, err = docker.List(ctx, docker.Config{})
	}
	if err != nil {
		if testenv.Required("docker") {
			t.Fatalf("docker daemon or image %s not usable: %v", image.DefaultTag, err)
		}
		t.Skipf("docker daemon or image %s not usable (SANDBOXER_TEST_REQUIRE=docker fails instead): %v", image.DefaultTag, err)
	}
}

// TestAPIPause: a paused docker or oci sandbox refuses commands and tool calls (409
// SANDBOX_UNAVAILABLE, details.paused), is shown paused, can be snapshotted (its files do not
// change meanwhile, and nothing runs in it), and after resume runs commands again, its
// background process going on from where it was.
func TestAPIPause(t *testing.T) {
	for _, ad := range []string{"docker", "oci"} {
		t.Run(ad, func(t *testing.T) {
			needDockerImage(t) // oci's image comes from the daemon too
			if ad == "oci" {
				testenv.NeedOCIRuntime(t, "runc")
			}
			checkPauseOverAPI(t, ad)
		})
	}
}

func checkPauseOverAPI(t *testing.T, ad string) {
	ta := newTestAPI(t, []string{"--adapter", ad})
	sb := ta.create("", api.CreateRequest{})
	id := "/v1/sandboxes/" + sb.ID
	assert.False(t, sb.Paused)

	status, data := ta.do("POST", id+"/processes", "", api.ExecRequest{Args: []string{"sh", "-c",
		"i=0; while :; do i=$((i+1)); echo $i > n.tmp && mv n.tmp n; sleep 0.05; done"}})
	require.Equal(t, http.StatusCreated, status, "%s", data)
	count := func() int {
		t.Helper()
		n, _ := strconv.Atoi(strings.TrimSpace(ta.files("", sb.ID, "n")["n"]))
		return n
	}
	require.Eventually(t, func() bool { return count() > 3 }, time.Minute, 50*time.Millisecond, "the counter runs")

	status, data = ta.do("POST", id+"/pause", "", nil)
	assert.True(t, decoded[api.Sandbox](t, http.StatusOK, status, data).Paused)
	status, data = ta.do("POST", id+"/pause", "", nil)
	require.Equal(t, http.StatusOK, status, "pausing a paused sandbox is a no-op: %s", data)
	frozen := count()
	for _, req := range []struct {
		path string
		body any
	}{
		{"/exec", api.ExecRequest{Args: []string{"true"}}},
		{"/tools/bash", map[string]any{"cmd": "true"}},
		{"/tools/read", map[string]any{"path": "n"}},
		{"/processes", api.ExecRequest{Args: []string{"true"}}},
	} {
		status, data = ta.do("POST", id+req.path, "", req.body)
		ta.refused(status, data, http.StatusConflict, "SANDBOX_UNAVAILABLE")
		var ref api.Refusal
		require.NoError(t, json.Unmarshal(data, &ref))
		assert.Equal(t, true, ref.Error.Details["paused"], "%s", data)
		assert.Contains(t, ref.Error.Message, "sandbox "+sb.ID+" is paused; resume it first")
	}
	status, data = ta.do("GET", id, "", nil)
	assert.True(t, decoded[api.Sandbox](t, http.StatusOK, status, data).Paused)

	// Snapshotted while paused: nothing runs in it, and the counter's file is as it stands.
	status, data = ta.do("POST", id+"/snapshots", "", api.SnapshotRequest{Name: "paused"})
	snap := decoded[api.Snapshot](t, http.StatusCreated, status, data)
	assert.GreaterOrEqual(t, snap.Files, 1, "%+v", snap) // n, and n.tmp if frozen between echo and mv
	status, data = ta.do("POST", id+"/restore", "", api.RestoreRequest{Snapshot: "paused", Replace: true})
	ta.refused(status, data, http.StatusConflict, "SANDBOX_UNAVAILABLE")
	assert.Equal(t, frozen, count(), "nothing ran while paused")

	status, data = ta.do("POST", id+"/resume", "", nil)
	assert.False(t, decoded[api.Sandbox](t, http.StatusOK, status, data).Paused)
	status, data = ta.do("POST", id+"/exec", "", api.ExecRequest{Args: []string{"echo", "back"}})
	assert.Equal(t, "back\n", decoded[api.ExecResult](t, http.StatusOK, status, data).Stdout)
	require.Eventually(t, func() bool { return count() > frozen }, 30*time.Second, 50*time.Millisecond, "the counter goes on")
	assert.Less(t, count(), frozen+200, "from where it was, not from the start")

	// The snapshot holds the counter as it was while paused.
	from := ta.create("", api.CreateRequest{FromSnapshot: "paused", Adapter: "local"})
	assert.Equal(t, strconv.Itoa(frozen)+"\n", ta.files("", from.ID, "n")["n"])

	// A sandbox deleted while paused goes, with nothing left.
	status, data = ta.do("POST", id+"/pause", "", nil)
	require.Equal(t, http.StatusOK, status, "%s", data)
	status, data = ta.do("DELETE", id, "", nil)
	require.Equal(t, http.StatusNoContent, status, "%s", data)
}
