package local

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// withoutRing runs the test body with io_uring off (the plain system call path).
func withoutRing(t *testing.T) {
	was := uringOff.Swap(true)
	t.Cleanup(func() { uringOff.Store(was) })
}

// treeFixture writes a workspace that exercises ReadTree: batches of every size, empty, binary
// and large files, more directories than the queue holds, and entries that must not be read.
func treeFixture(t *testing.T) (*Sandbox, map[string][]byte) {
	dir := t.TempDir()
	sb, err := New(Config{Root: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	rng := rand.New(rand.NewChaCha8([32]byte{7}))
	files := map[string][]byte{"top": []byte("t"), "empty": {}, "many/empty": {}, "bin": {0, 0xff, 0, '\n', 0x80}}
	for i := range 3*treeBatch + 5 { // full batches and a partial one, sizes around a page
		data := make([]byte, rng.IntN(9000))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		files["many/f"+strconv.Itoa(i)] = data
	}
	for _, n := range []int{treeReadMax - 1, treeReadMax, 3*treeReadMax + 7} { // both sides of the ring's limit
		data := bytes.Repeat([]byte{byte(n)}, n)
		files["big/"+strconv.Itoa(n)] = data
	}
	for i := range treeQueueMax + 40 { // past the queue: some directories are walked depth first
		files["deep/d"+strconv.Itoa(i)+"/e/f"] = []byte(strconv.Itoa(i))
	}
	for p, data := range files {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, data, 0o644))
	}
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "linkdir")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "many", "linkfile")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "many", "fifo"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "many", "skipped"), []byte("x"), 0o644))
	return sb, files
}

// replace atomically replaces full with what make creates at a temporary path beside it.
func replace(full string, make func(tmp string) error) error {
	tmp := full + ".new"
	if err := make(tmp); err != nil {
		return err
	}
	if fi, err := os.Lstat(tmp); err == nil && fi.IsDir() {
		if err := os.Remove(full); err != nil { // rename cannot put a directory over a file
			return err
		}
	}
	return os.Rename(tmp, full)
}

func readTree(t *testing.T, sb *Sandbox, workers int) map[string][]byte {
	var mu sync.Mutex
	got := map[string][]byte{}
	err := sb.ReadTree(context.Background(), "", workers, func(p string) bool { return p != "many/skipped" },
		func(fi adapter.FileInfo, data []byte) error {
			mu.Lock()
			defer mu.Unlock()
			_, seen := got[fi.Path]
			assert.False(t, seen, "each file once: %s", fi.Path)
			got[fi.Path] = bytes.Clone(data)
			st, err := os.Lstat(filepath.Join(sb.root.Name(), fi.Path))
			if assert.NoError(t, err, fi.Path) {
				assert.Equal(t, st.Size(), fi.Size, fi.Path)
				assert.Equal(t, st.ModTime().UnixNano(), fi.ModTime.UnixNano(), fi.Path)
				assert.Equal(t, st.Sys().(*syscall.Stat_t).Ino, fi.Inode, fi.Path)
				assert.Equal(t, st.Mode().Perm(), fi.Mode.Perm(), fi.Path)
			}
			return nil
		})
	require.NoError(t, err)
	return got
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

func TestReadTree(t *testing.T) {
	for _, mode := range []string{"ring", "plain"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "plain" {
				withoutRing(t)
			} else if r := newRing(treeRingEntries); r != nil {
				r.close()
			} else {
				t.Log("io_uring is unusable here: the plain path runs twice")
			}
			sb, files := treeFixture(t)
			fds := openFDs(t)
			for _, workers := range []int{1, 2, 5} {
				got := readTree(t, sb, workers)
				assert.Equal(t, len(files)+2, len(got), "workers=%d: the files and the two links", workers)
				for _, p := range []string{"linkdir", "many/linkfile"} {
					data, ok := got[p]
					assert.True(t, ok && data == nil, "workers=%d: %s passed without content, not followed", workers, p)
				}
				for p, data := range files {
					assert.True(t, bytes.Equal(data, got[p]), "workers=%d %s", workers, p)
				}
			}

			// An error from fn stops the walk and is returned, with every descriptor closed.
			stop := errors.New("stop")
			calls := 0
			err := sb.ReadTree(context.Background(), "", 1, nil, func(adapter.FileInfo, []byte) error {
				calls++
				if calls == treeBatch+3 { // in the middle of a batch
					return stop
				}
				return nil
			})
			assert.ErrorIs(t, err, stop)
			assert.Equal(t, treeBatch+3, calls)

			// A cancelled context stops it too.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err = sb.ReadTree(ctx, "", 2, nil, func(adapter.FileInfo, []byte) error { return nil })
			assert.ErrorIs(t, err, context.Canceled)

			// A subtree, and a start outside the workspace.
			got := map[string]bool{}
			require.NoError(t, sb.ReadTree(context.Background(), "deep/d3", 2, nil, func(fi adapter.FileInfo, _ []byte) error {
				got[fi.Path] = true
				return nil
			}))
			assert.Equal(t, map[string]bool{"deep/d3/e/f": true}, got)
			err = sb.ReadTree(context.Background(), "../", 1, nil, func(adapter.FileInfo, []byte) error { return nil })
			assert.Equal(t, errs.PathEscape, errs.CodeOf(err))

			assert.LessOrEqual(t, openFDs(t), fds, "no descriptor left open")
		})
	}
}

// TestReadTreeChangedDuringBatch covers files that change while a batch handles them (in many/,
// whose batches are large enough for the ring). Replaced before the ring's open: by nothing, a
// symlink or a FIFO, they are not read; by a directory, it is walked. Resized after the fstat: one
// that shrank is read again, to its end, with its new stat; one that grew is read as far as fstat
// said, with that stat (its mtime tells FileSync to hash it again next time).
func TestReadTreeChangedDuringBatch(t *testing.T) {
	if r := newRing(treeRingEntries); r == nil {
		t.Skip("io_uring is unusable here: no batches")
	} else {
		r.close()
	}
	sb, files := treeFixture(t)
	root := sb.root.Name()
	grown := append(bytes.Clone(files["many/f1"]), "grown"...)
	big := bytes.Repeat([]byte("g"), 2*treeReadMax)
	shrunk := files["many/f2"][:len(files["many/f2"])/2]
	filled := []byte("no longer empty")
	changed := map[string][]byte{"many/f1": grown, "many/f2": shrunk, "many/f3": big, "many/empty": filled}
	// Replaced between getdents and the ring's open: by nothing, a symlink, a FIFO, a directory.
	outside := t.TempDir()
	replaced := map[string]func(full string) error{
		"many/f5": os.Remove,
		"many/f6": func(full string) error {
			return replace(full, func(tmp string) error { return os.Symlink(outside, tmp) })
		},
		"many/f7": func(full string) error {
			return replace(full, func(tmp string) error { return syscall.Mkfifo(tmp, 0o644) })
		},
		"many/f8": func(full string) error {
			return replace(full, func(tmp string) error {
				if err := os.Mkdir(tmp, 0o755); err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(tmp, "inner"), []byte("inner"), 0o644)
			})
		},
	}
	var once sync.Map
	testHookBatch = func(stage, p string) {
		if _, done := once.LoadOrStore(stage+p, true); done {
			return
		}
		if fn, ok := replaced[p]; ok && stage == "open" {
			require.NoError(t, fn(filepath.Join(root, p)))
		}
		if data, ok := changed[p]; ok && stage == "stat" {
			require.NoError(t, os.WriteFile(filepath.Join(root, p), data, 0o644))
		}
	}
	t.Cleanup(func() { testHookBatch = nil })
	var mu sync.Mutex
	got := map[string][]byte{}
	sizes := map[string]int64{}
	require.NoError(t, sb.ReadTree(context.Background(), "", 2, nil, func(fi adapter.FileInfo, data []byte) error {
		mu.Lock()
		defer mu.Unlock()
		got[fi.Path] = bytes.Clone(data)
		sizes[fi.Path] = fi.Size
		return nil
	}))
	// Every file, many/skipped too (no want here), and the fixture's two links, but not those
	// replaced by nothing, a symlink (after getdents said a file: seen by the next walk) or a
	// FIFO; the one replaced by a directory is walked.
	assert.Equal(t, len(files)+1-3+2, len(got))
	for _, p := range []string{"many/f5", "many/f6", "many/f7", "many/f8"} {
		_, ok := got[p]
		assert.False(t, ok, p)
	}
	assert.Equal(t, []byte("inner"), got["many/f8/inner"])
	want := map[string][]byte{
		"many/f1":    files["many/f1"],
		"many/f2":    shrunk,
		"many/f3":    big[:len(files["many/f3"])],
		"many/empty": filled,
	}
	for p, data := range want {
		assert.True(t, bytes.Equal(data, got[p]), p)
		assert.EqualValues(t, len(data), sizes[p], p)
	}
}
