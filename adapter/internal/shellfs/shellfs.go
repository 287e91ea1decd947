// Package shellfs owns the file operations of the adapters whose sandboxes are reached only by
// running commands in them (docker, kubernetes): each operation is one exec of a fixed busybox sh
// script (resolving every path in a jail under adapter.DefaultWorkspace, then cat, stat, find,
// tar...) with the caller's data only in argv and stdin, its exit code mapped to an errs code. The
// adapter brings the transport (FS.Run); this package brings the scripts and their parsing.
package shellfs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Exec is one command in the sandbox: argv, environment, optional stdin, stdout and stderr writers (nil: discard).
type Exec struct {
	Args           []string
	Env            []string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// FS is a sandbox's file operations, done by shell scripts run in it (busybox sh, tar, stat...), workspace adapter.DefaultWorkspace.
// Its methods have the contracts of adapter.Sandbox's and adapter.ModeWriter's.
type FS struct {
	// Run runs e in the sandbox and returns its exit code; errors are the transport's (already errs-classified).
	Run func(ctx context.Context, op string, e Exec) (int, error)
	Env []string // the environment of every script (docker passes its baseEnv)
	// Agent, when set, is the sandbox agent's path in the sandbox: each operation then runs as
	// `AGENT -fs OP ARGS...` (agent.ServeFS, the same contract in Go) instead of its shell
	// script, so that the image needs no shell, find, stat or tar.
	Agent string
}

// opNames names each script's operation for the agent's -fs mode.
var opNames = map[string]string{
	readScript: "read", writeScript: "write", statScript: "stat", symlinkScript: "symlink",
	chmodScript: "chmod", removeScript: "remove", listScript: "list", readManyScript: "readmany",
	writeManyScript: "writemany", tarOutScript: "tarout", tarInScript: "tarin",
}

// argv is the command line of the file operation whose script is text.
func (f FS) argv(text string, args ...string) []string {
	if f.Agent != "" {
		return append([]string{f.Agent, "-fs", opNames[text]}, args...)
	}
	return append([]string{"/bin/sh", "-c", text, "sandboxer"}, args...)
}

// tmpPrefix names the temporary files and directories of writes; listings skip them.
const tmpPrefix = ".sandboxer-tmp-"

// maxArgBytes bounds the paths passed to one bulk exec (argv must stay well under ARG_MAX).
const maxArgBytes = 256 << 10

// maxStatBytes bounds a stat's answer: one line of numbers and a link's target (at most
// PATH_MAX, 4096 bytes). More is not the script's.
const maxStatBytes = 16 << 10

// maxListBytes bounds each of a listing's two streams (names, stats): some ten million files.
const maxListBytes = 1 << 30

// script runs one of the file scripts with args and maps its exit code to an error for the
// caller's path p.
func (f FS) script(ctx context.Context, op, p, text string, args []string, stdin io.Reader, stdout io.Writer) ([]byte, error) {
	return f.exec(ctx, op, p, f.argv(text, args...), stdin, stdout)
}

// exec runs argv, a file operation, and maps its exit code to an error for the caller's path p.
func (f FS) exec(ctx context.Context, op, p string, argv []string, stdin io.Reader, stdout io.Writer) ([]byte, error) {
	stderr := adapter.NewCappedBuffer(1 << 20)
	code, err := f.Run(ctx, op, Exec{Args: argv, Env: f.Env, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	msg, _, _ := stderr.Result()
	if err != nil {
		return msg, err
	}
	return msg, codeErr(op, p, code, msg)
}

// codeErr maps a file script's exit code to the error of op on p (nil for 0).
func codeErr(op, p string, code int, msg []byte) error {
	switch code {
	case 0:
		return nil
	case exitEscape:
		return errs.New(errs.PathEscape, op, p, "path leaves the workspace")
	case exitNotFound:
		return errs.New(errs.NotFound, op, p, "no such file")
	case exitLoop:
		return errs.New(errs.PathEscape, op, p, "too many levels of symbolic links")
	case exitIsDir:
		return errs.New(errs.InvalidInput, op, p, "is a directory")
	case exitNotDir:
		return errs.New(errs.InvalidInput, op, p, "a parent is not a directory")
	case exitInvalid:
		return errs.New(errs.InvalidInput, op, p, "not allowed on the workspace root")
	}
	return errs.New(errs.Internal, op, p, "exit %d: %s", code, strings.TrimSpace(string(msg)))
}

// rel is p relative to the workspace, checked lexically by adapter.Rel.
func rel(op, p string) (string, error) {
	return adapter.Rel(op, adapter.DefaultWorkspace, p)
}

// ReadFile returns a regular file's content (one exec: resolve in the jail, then cat).
func (f FS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	const op = "read"
	r, err := rel(op, p)
	if err != nil {
		return nil, err
	}
	// The file arrives as a stream: past the limit, the read is cancelled.
	var buf bytes.Buffer
	limit := adapter.ReadLimit(ctx)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &adapter.LimitedWriter{W: &buf, Limit: limit, OnExceed: cancel}
	_, err = f.script(rctx, op, p, readScript, []string{r}, nil, w)
	if w.Exceeded() {
		return nil, adapter.FileTooLarge(op, p, limit+1, limit)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteFile writes data through a temporary file renamed over the target (one exec, data on
// stdin), creating parent directories.
func (f FS) WriteFile(ctx context.Context, p string, data []byte) error {
	const op = "write"
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	if r == "." {
		return errs.New(errs.InvalidInput, op, p, "is the workspace root")
	}
	if f.Agent != "" {
		_, err = f.put(ctx, p, r, bytes.NewReader(data))
		return err
	}
	_, err = f.script(ctx, op, p, writeScript, []string{r}, bytes.NewReader(data), nil)
	return err
}

// StatFile reports one entry without following a final symlink.
func (f FS) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	const op = "stat"
	r, err := rel(op, p)
	if err != nil {
		return adapter.FileInfo{}, err
	}
	var buf bytes.Buffer
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &adapter.LimitedWriter{W: &buf, Limit: maxStatBytes, OnExceed: cancel}
	if _, err := f.script(sctx, op, p, statScript, []string{r}, nil, w); err != nil || w.Exceeded() {
		if w.Exceeded() {
			return adapter.FileInfo{}, errs.New(errs.SandboxUnavailable, op, p, "the sandbox broke the protocol: a stat of more than %d bytes", maxStatBytes)
		}
		return adapter.FileInfo{}, err
	}
	line, link, _ := strings.Cut(buf.String(), "\n")
	fi, err := parseStat(strings.TrimSpace(line))
	if err != nil {
		return adapter.FileInfo{}, errs.Wrap(errs.Internal, op, p, err)
	}
	fi.Path = r
	if fi.IsLink() {
		fi.Link = strings.TrimSuffix(link, "\n")
	}
	return fi, nil
}

// RemoveFile deletes a file, a symlink or an empty directory.
func (f FS) RemoveFile(ctx context.Context, p string) error {
	const op = "remove"
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	if r == "." {
		return errs.New(errs.InvalidInput, op, p, "cannot remove the workspace root")
	}
	_, err = f.script(ctx, op, p, removeScript, []string{r}, nil, nil)
	return err
}

// ListFiles walks dir in one exec (find plus batched stat) and returns its regular files and
// symbolic links (with their target text).
func (f FS) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	const op = "list"
	if dir == "" {
		dir = "."
	}
	r, err := rel(op, dir)
	if err != nil {
		return nil, err
	}
	var names, stats bytes.Buffer
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nw := &adapter.LimitedWriter{W: &names, Limit: maxListBytes, OnExceed: cancel}
	sw := &adapter.LimitedWriter{W: &stats, Limit: maxListBytes, OnExceed: cancel}
	argv := f.argv(listScript, r)
	code, err := f.Run(lctx, op, Exec{Args: argv, Env: f.Env, Stdout: nw, Stderr: sw})
	if nw.Exceeded() || sw.Exceeded() {
		return nil, errs.New(errs.LimitExceeded, op, dir, "a listing of more than %d bytes of names or stats", maxListBytes)
	}
	if err != nil {
		return nil, err
	}
	statText := stats.Bytes()
	if code != 0 {
		return nil, codeErr(op, dir, code, statText)
	}
	tokens := strings.Split(names.String(), "\x00")
	tokens = tokens[:len(tokens)-1]
	if len(tokens) == 0 {
		return []adapter.FileInfo{}, nil
	}
	lines := strings.Split(strings.TrimSuffix(string(statText), "\n"), "\n")
	out := make([]adapter.FileInfo, 0, len(lines))
	for _, line := range lines {
		if len(tokens) == 0 {
			return nil, errs.New(errs.Internal, op, dir, "walk changed under the listing (more stats than names)")
		}
		n := path.Clean(tokens[0])
		tokens = tokens[1:]
		fi, err := parseStat(line)
		if err != nil {
			return nil, errs.Wrap(errs.Internal, op, dir, err)
		}
		if fi.IsLink() {
			if len(tokens) == 0 {
				return nil, errs.New(errs.Internal, op, dir, "walk changed under the listing (a link without its target)")
			}
			fi.Link, tokens = tokens[0], tokens[1:]
		}
		if strings.HasPrefix(path.Base(n), tmpPrefix) || strings.Contains(n, "/"+tmpPrefix) || strings.HasPrefix(n, tmpPrefix) {
			continue
		}
		fi.Path = n
		out = append(out, fi)
	}
	if len(tokens) != 0 {
		return nil, errs.New(errs.Internal, op, dir, "walk changed under the listing (more names than stats)")
	}
	return out, nil
}

// parseStat reads "size rawmode(hex) inode YYYY-MM-DD hh:mm:ss.nnnnnnnnn +zzzz".
func parseStat(line string) (adapter.FileInfo, error) {
	f := strings.Fields(line)
	if len(f) != 6 {
		return adapter.FileInfo{}, fmt.Errorf("unexpected stat output %q", line)
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	raw, err2 := strconv.ParseUint(f[1], 16, 32)
	ino, err3 := strconv.ParseUint(f[2], 10, 64)
	mt, err4 := time.Parse("2006-01-02 15:04:05.999999999 -0700", f[3]+" "+f[4]+" "+f[5])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return adapter.FileInfo{}, fmt.Errorf("unexpected stat output %q: %w", line, err)
	}
	return adapter.FileInfo{Size: size, Mode: unixMode(uint32(raw)), Inode: ino, ModTime: mt}, nil
}

// unixMode converts st_mode to fs.FileMode.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// batches splits paths so that each batch's argv stays under maxArgBytes.
func batches(paths []string) [][]int {
	var out [][]int
	var cur []int
	size := 0
	for i, p := range paths {
		if len(cur) > 0 && size+len(p)+1 > maxArgBytes {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, i)
		size += len(p) + 1
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// indexOf reads the "index N" line a bulk script prints before failing on path N.
func indexOf(msg []byte) int {
	s := string(msg)
	if i := strings.LastIndex(s, "index "); i >= 0 {
		if n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(s[i+6:], "\n", 2)[0])); err == nil {
			return n
		}
	}
	return -1
}

// ReadFiles reads many files with one exec per batch of paths: the sandbox resolves each path
// in the jail and streams one tar of all of them, read as it arrives: a file over
// adapter.ReadLimit(ctx) stops the exec (errs.FileTooLarge) before its content is held.
func (f FS) ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte) error) error {
	const op = "read"
	limit := adapter.ReadLimit(ctx)
	rels := make([]string, len(paths))
	for i, p := range paths {
		r, err := rel(op, p)
		if err != nil {
			return err
		}
		rels[i] = r
	}
	for _, b := range batches(rels) {
		args := make([]string, len(b))
		for j, i := range b {
			args[j] = rels[i]
		}
		content := map[string][]byte{}
		pr, pw := io.Pipe()
		rctx, cancel := context.WithCancel(ctx)
		parsed := make(chan error, 1)
		go func() {
			br := &boundedReader{r: pr, n: tarBytes(len(b), limit)}
			err := readTar(br, limit, len(b), content)
			if err == nil {
				// The archive's padding, until the exec ends; past the bound, a violation.
				if _, cerr := io.Copy(io.Discard, br); errs.CodeOf(cerr) == errs.SandboxUnavailable {
					err = cerr
				}
			}
			if err != nil {
				cancel() // stop the exec; its writes fail from now on
				pr.CloseWithError(err)
			}
			parsed <- err
		}()
		stderr := adapter.NewCappedBuffer(64 << 20)
		argv := f.argv(readManyScript, args...)
		code, err := f.Run(rctx, op, Exec{Args: argv, Env: f.Env, Stdout: pw, Stderr: stderr})
		pw.Close()
		perr := <-parsed
		cancel()
		if c := errs.CodeOf(perr); c == errs.FileTooLarge || c == errs.SandboxUnavailable {
			return perr
		}
		if err != nil {
			return err
		}
		msg, _, _ := stderr.Result()
		if code != 0 {
			p := ""
			if k := indexOf(msg); k >= 0 && k < len(b) {
				p = paths[b[k]]
			}
			return codeErr(op, p, code, msg)
		}
		if perr != nil {
			return errs.Wrap(errs.Internal, op, "", perr)
		}
		reals := strings.Split(string(msg), "\x00")
		if len(reals) < len(b) {
			return errs.New(errs.Internal, op, "", "bulk read: %s", msg)
		}
		for j, i := range b {
			data, ok := content[path.Clean(reals[j])]
			if !ok {
				return errs.New(errs.NotFound, op, paths[i], "missing from the archive")
			}
			if err := fn(paths[i], data); err != nil {
				return err
			}
		}
	}
	return nil
}

// Bounds of a bulk read's archive (ReadFiles). The sandbox answers a batch with one tar entry per
// path asked for (a path given twice is a hard link): more entries than that is not busybox tar's
// answer. Its bytes are at most, per entry, the file (at most the read limit) and what tar puts
// around it: a header block, a GNU long name and a long link name (up to PATH_MAX, 4096 bytes,
// in blocks), and the data's padding, under tarEntryOverhead; then the archive's end, two zero
// blocks padded at most to GNU tar's record of 20 blocks. Past either bound the sandbox broke the
// protocol (SANDBOX_UNAVAILABLE): the host never holds more than it asked for.
const (
	tarEntryOverhead = 16 << 10
	tarEndBytes      = 20 * 512
)

// tarBytes bounds the archive of a batch of n paths read with limit (saturating).
func tarBytes(n int, limit int64) int64 {
	per := limit + tarEntryOverhead
	if per < limit || per > (math.MaxInt64-tarEndBytes)/int64(max(n, 1)) {
		return math.MaxInt64
	}
	return int64(n)*per + tarEndBytes
}

// tooMuch is the error of a bulk answer past its bound.
func tooMuch(format string, args ...any) error {
	return errs.New(errs.SandboxUnavailable, "read", "", "the sandbox broke the protocol: "+format, args...)
}

// boundedReader reads r up to n bytes; a byte more is tooMuch.
type boundedReader struct {
	r io.Reader
	n int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		var one [1]byte
		k, err := b.r.Read(one[:])
		if k == 0 && err != nil {
			return 0, err // the end came right at the bound
		}
		return 0, tooMuch("a bulk read's archive of more than its bound")
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	k, err := b.r.Read(p)
	b.n -= int64(k)
	return k, err
}

// readTar reads a tar stream of at most maxEntries entries into content (name to data). A
// regular file whose header says more than limit bytes is errs.FileTooLarge, before any of it is
// read; an entry past maxEntries is tooMuch, before its header is taken.
func readTar(r io.Reader, limit int64, maxEntries int, content map[string][]byte) error {
	tr := tar.NewReader(r)
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if entries == maxEntries {
			return tooMuch("a bulk read's archive of more than %d entries", maxEntries)
		}
		name := path.Clean(h.Name)
		switch h.Typeflag {
		case tar.TypeReg:
			if h.Size > limit {
				return adapter.FileTooLarge("read", name, h.Size, limit)
			}
			data := make([]byte, h.Size)
			if _, err := io.ReadFull(tr, data); err != nil {
				return err
			}
			content[name] = data
		case tar.TypeLink:
			content[name] = content[path.Clean(h.Linkname)]
		}
	}
}

// WriteFiles writes many files with one exec per batch: a tar on stdin is unpacked into a
// staging directory of the workspace and each file renamed into place after every path passed
// the jail.
func (f FS) WriteFiles(ctx context.Context, files []adapter.File) error {
	const op = "write"
	rels := make([]string, len(files))
	for i, file := range files {
		r, err := rel(op, file.Path)
		if err != nil {
			return err
		}
		if r == "." {
			return errs.New(errs.InvalidInput, op, file.Path, "is the workspace root")
		}
		rels[i] = r
	}
	for _, b := range batches(rels) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		now := time.Now()
		for j, i := range b {
			if err := tw.WriteHeader(&tar.Header{Name: strconv.Itoa(j), Mode: 0o644, Size: int64(len(files[i].Data)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
				return errs.Wrap(errs.Internal, op, "", err)
			}
			tw.Write(files[i].Data)
		}
		tw.Close()
		args := make([]string, len(b))
		for j, i := range b {
			args[j] = rels[i]
		}
		stderr := adapter.NewCappedBuffer(1 << 20)
		argv := f.argv(writeManyScript, args...)
		code, err := f.Run(ctx, op, Exec{Args: argv, Env: f.Env, Stdin: &buf, Stderr: stderr})
		if err != nil {
			return err
		}
		if code != 0 {
			msg, _, _ := stderr.Result()
			p := ""
			if k := indexOf(msg); k >= 0 && k < len(b) {
				p = files[b[k]].Path
			}
			return codeErr(op, p, code, msg)
		}
	}
	return nil
}

// CopyWorkspace copies src's workspace into dst's (tar out of src piped into tar in dst), for Fork.
func CopyWorkspace(ctx context.Context, src, dst FS) error {
	pr, pw := io.Pipe()
	inErr := make(chan error, 1)
	inStderr := adapter.NewCappedBuffer(1 << 16)
	go func() {
		code, err := dst.Run(ctx, "fork", Exec{Args: dst.argv(tarInScript), Env: dst.Env, Stdin: pr, Stderr: inStderr})
		pr.CloseWithError(io.ErrClosedPipe)
		if err == nil && code != 0 {
			msg, _, _ := inStderr.Result()
			err = errs.New(errs.Internal, "fork", "", "unpack workspace: exit %d: %s", code, msg)
		}
		inErr <- err
	}()
	outStderr := adapter.NewCappedBuffer(1 << 16)
	code, err := src.Run(ctx, "fork", Exec{Args: src.argv(tarOutScript), Env: src.Env, Stdout: pw, Stderr: outStderr})
	pw.Close()
	if err == nil && code != 0 {
		msg, _, _ := outStderr.Result()
		err = errs.New(errs.Internal, "fork", "", "pack workspace: exit %d: %s", code, msg)
	}
	return errors.Join(err, <-inErr)
}
