package shellfs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// The scripts themselves run in a real sandbox (the docker adapter's conformance run); these tests
// cover what shellfs does around them with a fake transport.

// fake is an FS whose Run records each Exec and answers with do.
func fake(do func(e Exec) (int, error)) (FS, *[]Exec) {
	var seen []Exec
	return FS{
		Run: func(_ context.Context, _ string, e Exec) (int, error) {
			seen = append(seen, e)
			return do(e)
		},
		Env: []string{"PATH=/bin"},
	}, &seen
}

func TestScriptGetsArgvEnvAndStdin(t *testing.T) {
	t.Parallel()
	var stdin []byte
	f, seen := fake(func(e Exec) (int, error) {
		stdin, _ = io.ReadAll(e.Stdin)
		return 0, nil
	})
	require.NoError(t, f.WriteFile(context.Background(), "/workspace/a/b.txt", []byte("hi")))
	require.Len(t, *seen, 1)
	e := (*seen)[0]
	assert.Equal(t, []string{"/bin/sh", "-c", writeScript, "sandboxer", "a/b.txt"}, e.Args)
	assert.Equal(t, f.Env, e.Env)
	assert.Equal(t, "hi", string(stdin))
}

func TestPathsAreCheckedBeforeAnyExec(t *testing.T) {
	t.Parallel()
	f, seen := fake(func(Exec) (int, error) { return 0, nil })
	ctx := context.Background()
	_, err := f.ReadFile(ctx, "../etc/passwd")
	assert.ErrorIs(t, err, errs.PathEscape)
	assert.ErrorIs(t, f.WriteFile(ctx, "/workspace", nil), errs.InvalidInput)
	assert.ErrorIs(t, f.RemoveFile(ctx, "."), errs.InvalidInput)
	assert.ErrorIs(t, f.WriteFiles(ctx, []adapter.File{{Path: "ok"}, {Path: "/etc/x"}}), errs.PathEscape)
	assert.ErrorIs(t, f.Symlink(ctx, "l", ""), errs.InvalidInput)
	assert.Empty(t, *seen)
}

func TestExitCodesMapToErrorCodes(t *testing.T) {
	t.Parallel()
	for code, want := range map[int]errs.Code{
		exitEscape:   errs.PathEscape,
		exitNotFound: errs.NotFound,
		exitLoop:     errs.PathEscape,
		exitIsDir:    errs.InvalidInput,
		exitNotDir:   errs.InvalidInput,
		exitInvalid:  errs.InvalidInput,
		exitIO:       errs.Internal,
		1:            errs.Internal,
	} {
		f, _ := fake(func(Exec) (int, error) { return code, nil })
		_, err := f.ReadFile(context.Background(), "x")
		assert.Equal(t, want, errs.CodeOf(err), "exit %d", code)
		assert.Equal(t, "x", errs.As(err).Path, "exit %d", code)
	}
	assert.NoError(t, codeErr("read", "x", 0, nil))
}

func TestTransportErrorsPassThrough(t *testing.T) {
	t.Parallel()
	gone := errs.New(errs.SandboxUnavailable, "read", "", "gone")
	f, _ := fake(func(Exec) (int, error) { return 0, gone })
	_, err := f.ReadFile(context.Background(), "x")
	assert.Same(t, gone, err)
}

func TestReadFileStopsAtTheLimit(t *testing.T) {
	t.Parallel()
	f, _ := fake(func(e Exec) (int, error) {
		_, err := e.Stdout.Write(make([]byte, 11))
		if err != nil {
			return 0, err
		}
		return 0, nil
	})
	_, err := f.ReadFile(adapter.WithReadLimit(context.Background(), 10), "big")
	assert.ErrorIs(t, err, errs.FileTooLarge)
}

func TestStatFileParsesALink(t *testing.T) {
	t.Parallel()
	f, _ := fake(func(e Exec) (int, error) {
		io.WriteString(e.Stdout, "7 a1ff 42 2024-05-06 07:08:09.123456789 +0000\n../target\n")
		return 0, nil
	})
	fi, err := f.StatFile(context.Background(), "/workspace/d/l")
	require.NoError(t, err)
	assert.Equal(t, "d/l", fi.Path)
	assert.True(t, fi.IsLink())
	assert.Equal(t, "../target", fi.Link)
	assert.Equal(t, fs.FileMode(0o777)|fs.ModeSymlink, fi.Mode)
	assert.Equal(t, uint64(42), fi.Inode)
	assert.Equal(t, time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC), fi.ModTime.UTC())
}

func TestListFilesPairsNamesWithStats(t *testing.T) {
	t.Parallel()
	const stamp = " 2024-05-06 07:08:09.5 +0000\n"
	f, _ := fake(func(e Exec) (int, error) {
		io.WriteString(e.Stdout, "./a\x00./d/l\x00x\x00./d/.sandboxer-tmp-12\x00")
		io.WriteString(e.Stderr, "3 81a4 1"+stamp+"1 a1ff 2"+stamp+"0 81a4 3"+stamp)
		return 0, nil
	})
	out, err := f.ListFiles(context.Background(), "")
	require.NoError(t, err)
	require.Len(t, out, 2)
	assert.Equal(t, "a", out[0].Path)
	assert.Equal(t, int64(3), out[0].Size)
	assert.Equal(t, fs.FileMode(0o644), out[0].Mode)
	assert.Equal(t, "d/l", out[1].Path)
	assert.Equal(t, "x", out[1].Link)

	f, _ = fake(func(e Exec) (int, error) {
		io.WriteString(e.Stdout, "./a\x00./b\x00")
		io.WriteString(e.Stderr, "3 81a4 1"+stamp)
		return 0, nil
	})
	_, err = f.ListFiles(context.Background(), ".")
	assert.ErrorIs(t, err, errs.Internal, "more names than stats")
}

func TestReadFilesMapsTheArchiveBackToPaths(t *testing.T) {
	t.Parallel()
	f, _ := fake(func(e Exec) (int, error) {
		tw := tar.NewWriter(e.Stdout)
		tw.WriteHeader(&tar.Header{Name: "real/a", Size: 2, Mode: 0o644, Typeflag: tar.TypeReg})
		tw.Write([]byte("AA"))
		tw.WriteHeader(&tar.Header{Name: "real/b", Linkname: "real/a", Typeflag: tar.TypeLink})
		tw.Close()
		io.WriteString(e.Stderr, "real/a\x00real/b\x00")
		return 0, nil
	})
	got := map[string]string{}
	err := f.ReadFiles(context.Background(), []string{"link-to-a", "/workspace/b"}, func(p string, data []byte) error {
		got[p] = string(data)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"link-to-a": "AA", "/workspace/b": "AA"}, got)

	f, _ = fake(func(e Exec) (int, error) {
		io.WriteString(e.Stderr, "index 1\n")
		return exitNotFound, nil
	})
	err = f.ReadFiles(context.Background(), []string{"a", "gone"}, func(string, []byte) error { return nil })
	assert.ErrorIs(t, err, errs.NotFound)
	assert.Equal(t, "gone", errs.As(err).Path)
}

func TestReadTarRefusesAnOversizedHeader(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "big", Size: 11, Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Write(make([]byte, 11))
	tw.Close()
	err := readTar(&buf, 10, 1, map[string][]byte{})
	assert.ErrorIs(t, err, errs.FileTooLarge)
}

// A hostile sandbox's bulk read: ten million empty entries (made as they are read, never held)
// for one path asked for. The archive is refused at its second entry; the exec is stopped.
func TestReadFilesRefusesMoreEntriesThanPaths(t *testing.T) {
	entries := 0
	f, _ := fake(func(e Exec) (int, error) {
		tw := tar.NewWriter(e.Stdout)
		for ; entries < 10_000_000; entries++ {
			if tw.WriteHeader(&tar.Header{Name: "f" + strconv.Itoa(entries), Mode: 0o644, Typeflag: tar.TypeReg}) != nil {
				break
			}
		}
		io.WriteString(e.Stderr, "a\x00")
		return 0, nil
	})
	var err error
	alloc := allocated(func() {
		err = f.ReadFiles(context.Background(), []string{"a"}, func(string, []byte) error { return nil })
	})
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
	assert.Less(t, entries, 100, "the archive was read past its bound")
	assert.Less(t, alloc, uint64(64<<20))
}

// An archive whose end never comes (zero blocks after its last entry, up to 2 GiB) is refused
// past its bound: the files' limit and their headers, and one tar record.
func TestReadFilesRefusesAnEndlessArchive(t *testing.T) {
	t.Parallel()
	var sent int64
	f, _ := fake(func(e Exec) (int, error) {
		tw := tar.NewWriter(e.Stdout)
		tw.WriteHeader(&tar.Header{Name: "a", Size: 2, Mode: 0o644, Typeflag: tar.TypeReg})
		tw.Write([]byte("AA"))
		tw.Close()
		zeros := make([]byte, 32<<10)
		for sent < 2<<30 {
			n, err := e.Stdout.Write(zeros)
			sent += int64(n)
			if err != nil {
				break
			}
		}
		io.WriteString(e.Stderr, "a\x00")
		return 0, nil
	})
	ctx := adapter.WithReadLimit(context.Background(), 1<<10)
	err := f.ReadFiles(ctx, []string{"a"}, func(string, []byte) error { return nil })
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
	assert.Less(t, sent, int64(1<<20))
}

// The largest honest archive passes: every file at the limit, each with a path of PATH_MAX (a
// long-name header of its own), the end padded to a whole record as GNU tar pads it.
func TestReadFilesTakesTheLargestHonestArchive(t *testing.T) {
	t.Parallel()
	const limit = 4 << 10
	long := func(c string) string { return strings.Repeat(c+"/", 2047) + c }
	f, _ := fake(func(e Exec) (int, error) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, n := range []string{long("a"), long("b")} {
			tw.WriteHeader(&tar.Header{Name: n, Size: limit, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatGNU})
			tw.Write(bytes.Repeat([]byte("x"), limit))
		}
		tw.WriteHeader(&tar.Header{Name: long("c"), Linkname: long("a"), Typeflag: tar.TypeLink, Format: tar.FormatGNU})
		tw.Close()
		buf.Write(make([]byte, 20*512-buf.Len()%(20*512)))
		e.Stdout.Write(buf.Bytes())
		io.WriteString(e.Stderr, long("a")+"\x00"+long("b")+"\x00"+long("c")+"\x00")
		return 0, nil
	})
	ctx := adapter.WithReadLimit(context.Background(), limit)
	n := 0
	err := f.ReadFiles(ctx, []string{"x", "y", "z"}, func(_ string, data []byte) error {
		assert.Len(t, data, limit)
		n++
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

// A stat answered with 2 GiB is refused after maxStatBytes. (A listing's bound, 1 GiB a stream,
// is not tested here: reaching it takes that much memory.)
func TestStatAnswerIsBounded(t *testing.T) {
	t.Parallel()
	var sent int64
	f, _ := fake(func(e Exec) (int, error) {
		b := make([]byte, 32<<10)
		for sent < 2<<30 {
			n, err := e.Stdout.Write(b)
			sent += int64(n)
			if err != nil {
				break
			}
		}
		return 0, nil
	})
	_, err := f.StatFile(context.Background(), "a")
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
	assert.LessOrEqual(t, sent, int64(maxStatBytes))
}

// allocated runs f and returns the bytes the process allocated meanwhile.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestWriteFilesSendsOneTarPerBatch(t *testing.T) {
	t.Parallel()
	var names []string
	f, seen := fake(func(e Exec) (int, error) {
		tr := tar.NewReader(e.Stdin)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return 0, nil
			}
			if err != nil {
				return 0, err
			}
			data, _ := io.ReadAll(tr)
			names = append(names, h.Name+"="+string(data))
		}
	})
	long := strings.Repeat("d/", maxArgBytes/4)
	err := f.WriteFiles(context.Background(), []adapter.File{{Path: long + "a", Data: []byte("1")}, {Path: long + "b", Data: []byte("2")}, {Path: "c", Data: []byte("3")}})
	require.NoError(t, err)
	require.Len(t, *seen, 2)
	assert.Equal(t, []string{"/bin/sh", "-c", writeManyScript, "sandboxer", long + "a"}, (*seen)[0].Args)
	assert.Equal(t, []string{"/bin/sh", "-c", writeManyScript, "sandboxer", long + "b", "c"}, (*seen)[1].Args)
	assert.Equal(t, []string{"0=1", "0=2", "1=3"}, names)
}

func TestBatchesStayUnderTheArgvBound(t *testing.T) {
	t.Parallel()
	assert.Nil(t, batches(nil))
	half := strings.Repeat("x", maxArgBytes/2)
	assert.Equal(t, [][]int{{0}, {1, 2}, {3}}, batches([]string{half, half, "a", half}))
}

func TestCopyWorkspacePipesSourceIntoDestination(t *testing.T) {
	t.Parallel()
	src, _ := fake(func(e Exec) (int, error) {
		assert.Equal(t, []string{"/bin/sh", "-c", tarOutScript, "sandboxer"}, e.Args)
		io.WriteString(e.Stdout, "archive")
		return 0, nil
	})
	var got []byte
	dst, _ := fake(func(e Exec) (int, error) {
		assert.Equal(t, []string{"/bin/sh", "-c", tarInScript, "sandboxer"}, e.Args)
		got, _ = io.ReadAll(e.Stdin)
		return 0, nil
	})
	require.NoError(t, CopyWorkspace(context.Background(), src, dst))
	assert.Equal(t, "archive", string(got))

	bad, _ := fake(func(e Exec) (int, error) {
		io.Copy(io.Discard, e.Stdin)
		io.WriteString(e.Stderr, "disk full")
		return 2, nil
	})
	err := CopyWorkspace(context.Background(), src, bad)
	assert.ErrorIs(t, err, errs.Internal)
	assert.Equal(t, "fork", errs.As(err).Op)
}
