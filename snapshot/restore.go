package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
)

// RestoreOptions configure Restore; the zero value restores into an empty workspace only.
type RestoreOptions struct {
	// Replace lets Restore write into a workspace that holds files: what the manifest does not
	// list (files, links, and directories left empty by their removal) is removed, and every
	// listed path is rewritten. Without it a workspace holding any file or link is
	// errs.Conflict and nothing is touched.
	Replace bool
}

// dirMarker is the file Restore writes and removes to make an empty directory through the
// Sandbox interface (which has no mkdir).
const dirMarker = ".sandboxer-snapshot-dir"

// maxNamed bounds the paths an error's message names (Details carry them all).
const maxNamed = 10

// Restore writes snapshot name into sb's workspace and verifies it: every file is read back and
// hashed, its executable bit, every link's target and every empty directory are checked, and
// no file or link the manifest does not list may remain. It returns nil only when the workspace
// matches the manifest.
//
// Errors: errs.NotFound (no such snapshot), errs.PathEscape (a manifest whose links lead
// outside the workspace: one Take would not have written), errs.Conflict (a workspace that holds files, without
// RestoreOptions.Replace; Details["paths"] lists some), errs.VerifyFailed when the workspace does
// not match (Details: "missing" for blobs gone from the catalog or files that did not arrive,
// "altered" for content or mode that differs, "corrupt" for blobs whose content no longer
// matches their hash, "unexpected" for paths the manifest does not list), an error wrapping
// errors.ErrUnsupported when the snapshot holds links or empty directories and the sandbox
// cannot make them, and the adapter's errors. After a failure the workspace holds an
// unspecified part of the snapshot: restore again, or discard the sandbox.
func (c *Catalog) Restore(ctx context.Context, name string, sb adapter.Sandbox, opts RestoreOptions) error {
	return c.RestoreMany(ctx, name, []adapter.Sandbox{sb}, opts)
}

// RestoreMany restores snapshot name into every sandbox of sbs at once, each independent and
// each verified as Restore verifies one: a blob is read from the catalog once for all of them.
// The error joins the failures of each sandbox (errs codes as Restore), each naming its index.
func (c *Catalog) RestoreMany(ctx context.Context, name string, sbs []adapter.Sandbox, opts RestoreOptions) error {
	if err := CheckName(name); err != nil {
		return err
	}
	unlock, err := c.lock(ctx, false)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := c.read(name)
	if err != nil {
		return err
	}
	if err := c.blobs.refresh(ctx); err != nil {
		return err
	}
	return c.restore(ctx, m, sbs, opts)
}

// ForkN makes n independent sandboxes holding snapshot name: create is called n times at once
// (i from 0 to n-1) to make empty sandboxes, and the snapshot is restored into all of them with
// RestoreMany. It is all or nothing: on any failure every sandbox made is stopped and the error
// returned.
func (c *Catalog) ForkN(ctx context.Context, name string, n int, create func(ctx context.Context, i int) (adapter.Sandbox, error)) ([]adapter.Sandbox, error) {
	if n < 1 {
		return nil, errs.New(errs.InvalidInput, "snapshot.fork", name, "n must be 1 or more")
	}
	sbs := make([]adapter.Sandbox, n)
	errl := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := create(ctx, i)
			if err != nil {
				sb = nil // a typed nil (a nil *docker.Sandbox) must not be stopped
			}
			sbs[i], errl[i] = sb, err
		}()
	}
	wg.Wait()
	err := errors.Join(errl...)
	if err == nil {
		err = c.RestoreMany(ctx, name, sbs, RestoreOptions{})
	}
	if err != nil {
		for _, sb := range sbs {
			if sb != nil {
				sb.Stop(context.WithoutCancel(ctx))
			}
		}
		return nil, err
	}
	return sbs, nil
}

// target is one sandbox being restored and what went wrong there.
type target struct {
	i        int
	sb       adapter.Sandbox
	before   map[string]adapter.FileInfo // files and links there before (Replace)
	err      error
	missing  []string
	writeErr error
	mu       sync.Mutex
}

func (t *target) fail(err error) {
	t.mu.Lock()
	if t.writeErr == nil {
		t.writeErr = err
	}
	t.mu.Unlock()
}

func (c *Catalog) restore(ctx context.Context, m Manifest, sbs []adapter.Sandbox, opts RestoreOptions) error {
	const op = "snapshot.restore"
	ts := make([]*target, len(sbs))
	for i, sb := range sbs {
		ts[i] = &target{i: i, sb: sb}
	}
	var links, dirs, files []Entry
	for _, e := range m.Entries {
		switch e.Type {
		case TypeSymlink:
			links = append(links, e)
		case TypeDir:
			dirs = append(dirs, e)
		default:
			files = append(files, e)
		}
	}
	// A link is made only where it stays inside the workspace, as Take recorded it: a manifest
	// is a file of the state directory, and whoever can write there could forge one.
	if err := checkLinks(m, links); err != nil {
		return err
	}
	// Prepare each workspace: refuse one that holds files, or clear what the manifest lacks.
	forEach(ts, func(t *target) {
		if len(links) > 0 || len(dirs) > 0 || opts.Replace {
			if _, ok := t.sb.(adapter.ModeWriter); !ok && len(links) > 0 {
				t.err = errs.Wrap(errs.InvalidInput, op, links[0].Path, fmt.Errorf("the sandbox cannot make symbolic links: %w", errors.ErrUnsupported))
				return
			}
			if _, ok := t.sb.(adapter.Remover); !ok {
				t.err = errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("the sandbox cannot remove files: %w", errors.ErrUnsupported))
				return
			}
		}
		t.err = prepare(ctx, t, m, opts)
	})
	live := func() []*target {
		var out []*target
		for _, t := range ts {
			if t.err == nil {
				out = append(out, t)
			}
		}
		return out
	}
	// Files: each blob is read once and written to every sandbox.
	if err := c.writeFiles(ctx, live(), files); err != nil {
		return err
	}
	forEach(live(), func(t *target) {
		if t.writeErr != nil {
			t.err = t.writeErr
			return
		}
		t.err = makeRest(ctx, t, files, links, dirs)
	})
	// Verify every sandbox that got this far.
	forEach(live(), func(t *target) { t.err = c.verify(ctx, t, m) })
	var all []error
	for _, t := range ts {
		if t.err != nil {
			if len(ts) > 1 {
				e := errs.As(t.err)
				all = append(all, &errs.Error{Code: e.Code, Op: op, Path: fmt.Sprintf("sandbox #%d", t.i), Details: e.Details, Err: t.err})
			} else {
				all = append(all, t.err)
			}
		}
	}
	return errors.Join(all...)
}

func checkLinks(m Manifest, links []Entry) error {
	all := make(map[string]string, len(links))
	for _, e := range links {
		all[e.Path] = e.Target
	}
	var bad []string
	for _, e := range links {
		if !filesync.LinkInside(e.Path, e.Target, all) || filesync.CheckLinkText("", e.Path, []byte(e.Target)) != nil {
			bad = append(bad, e.Path)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	e := errs.New(errs.PathEscape, "snapshot.restore", bad[0], "snapshot %s holds %d symbolic links that lead outside the workspace; nothing restored", m.Name, len(bad))
	e.Details = map[string]any{"paths": bad}
	return e
}

// forEach runs fn for every target at once.
func forEach(ts []*target, fn func(*target)) {
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(t)
		}()
	}
	wg.Wait()
}

// prepare checks the workspace is empty, or (Replace) removes what m does not list as it is.
func prepare(ctx context.Context, t *target, m Manifest, opts RestoreOptions) error {
	const op = "snapshot.restore"
	l, ok := t.sb.(adapter.Lister)
	if !ok {
		return errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("the sandbox cannot list its files: %w", errors.ErrUnsupported))
	}
	have, err := l.ListFiles(ctx, "")
	if err != nil {
		return err
	}
	if len(have) == 0 && !opts.Replace {
		return nil
	}
	if !opts.Replace {
		paths := make([]string, 0, min(len(have), 20))
		for _, f := range have[:min(len(have), 20)] {
			paths = append(paths, f.Path)
		}
		e := errs.New(errs.Conflict, op, have[0].Path, "the workspace holds %d files or links; restore into an empty one or pass Replace", len(have))
		e.Details = map[string]any{"paths": paths}
		return e
	}
	want := make(map[string]Entry, len(m.Entries))
	for _, e := range m.Entries {
		want[e.Path] = e
	}
	rm := t.sb.(adapter.Remover)
	t.before = make(map[string]adapter.FileInfo, len(have))
	for _, f := range have {
		e, ok := want[f.Path]
		keep := ok && (e.Type == TypeSymlink) == f.IsLink() && e.Type != TypeDir
		if keep {
			t.before[f.Path] = f
			continue
		}
		if err := rm.RemoveFile(ctx, f.Path); err != nil && errs.CodeOf(err) != errs.NotFound {
			return err
		}
	}
	// Directories the manifest does not need go before anything is written (one may stand
	// where the manifest has a file).
	return removeDirs(ctx, t.sb, m.Entries)
}

// writeFiles writes every file entry into every target: small files in batches (one
// BulkWriter call each where the sandbox has it), large ones streamed from the blob
// (adapter.FileStreamer). A blob the catalog lacks is recorded as missing in every target.
func (c *Catalog) writeFiles(ctx context.Context, ts []*target, files []Entry) error {
	if len(ts) == 0 {
		return nil
	}
	jobs := batches(files, func(e Entry) int64 { return e.Size })
	return runJobs(ctx, c.opts.Workers, jobs, func(ctx context.Context, job []Entry) error {
		return c.writeJob(ctx, ts, job)
	})
}

// writeJob writes one batch into every target. Its error is the catalog's (blob I/O) or the
// context's; a sandbox's error is recorded in its target.
func (c *Catalog) writeJob(ctx context.Context, ts []*target, job []Entry) error {
	if len(job) == 1 && job[0].Size > streamOver {
		e := job[0]
		for _, t := range ts {
			if fs, ok := t.sb.(adapter.FileStreamer); ok {
				rc, err := c.blobs.open(ctx, e.Hash)
				if errs.CodeOf(err) == errs.NotFound {
					t.addMissing(e.Path)
					continue
				}
				if err != nil {
					return err
				}
				_, err = fs.WriteFileFrom(ctx, e.Path, adapter.ContextReader(ctx, rc))
				rc.Close()
				if err != nil {
					t.fail(err)
				}
				continue
			}
			data, err := c.readBlob(ctx, e.Hash, e.Size)
			if errs.CodeOf(err) == errs.NotFound {
				t.addMissing(e.Path)
				continue
			}
			if err != nil {
				return err
			}
			if err := t.sb.WriteFile(ctx, e.Path, data); err != nil {
				t.fail(err)
			}
		}
		return nil
	}
	batch := make([]adapter.File, 0, len(job))
	var missing []string
	for _, e := range job {
		data, err := c.readBlob(ctx, e.Hash, e.Size)
		if errs.CodeOf(err) == errs.NotFound {
			missing = append(missing, e.Path)
			continue
		}
		if err != nil {
			return err
		}
		batch = append(batch, adapter.File{Path: e.Path, Data: data})
	}
	for _, t := range ts {
		for _, p := range missing {
			t.addMissing(p)
		}
		if bw, ok := t.sb.(adapter.BulkWriter); ok {
			if err := bw.WriteFiles(ctx, batch); err != nil {
				t.fail(err)
			}
			continue
		}
		for _, f := range batch {
			if err := t.sb.WriteFile(ctx, f.Path, f.Data); err != nil {
				t.fail(err)
				break
			}
		}
	}
	return nil
}

func (t *target) addMissing(p string) {
	t.mu.Lock()
	t.missing = append(t.missing, p)
	t.mu.Unlock()
}

// readBlob reads blob h, which the manifest says holds size bytes: one read of that size (a
// shorter blob reads short, a longer one is cut; the verification names the file either way).
func (c *Catalog) readBlob(ctx context.Context, h string, size int64) ([]byte, error) {
	rc, err := c.blobs.open(ctx, h)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data := make([]byte, size)
	n, err := io.ReadFull(rc, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, errs.Wrap(errs.Internal, "snapshot.restore", h, err)
	}
	return data[:n], nil
}

// makeRest sets executable bits, makes links and empty directories.
func makeRest(ctx context.Context, t *target, files, links, dirs []Entry) error {
	mw, _ := t.sb.(adapter.ModeWriter)
	for _, e := range files {
		was, existed := t.before[e.Path]
		if !e.Executable() && (!existed || !was.Executable()) {
			continue // written 0644 (a new file), or kept non-executable
		}
		if mw == nil {
			return errs.Wrap(errs.InvalidInput, "snapshot.restore", e.Path, fmt.Errorf("the sandbox cannot set the executable bit: %w", errors.ErrUnsupported))
		}
		if err := mw.SetExecutable(ctx, e.Path, e.Executable()); err != nil && errs.CodeOf(err) != errs.NotFound {
			return err
		}
	}
	for _, e := range links {
		if err := mw.Symlink(ctx, e.Path, e.Target); err != nil {
			return err
		}
	}
	for _, e := range dirs {
		p := e.Path + "/" + dirMarker
		if err := t.sb.WriteFile(ctx, p, nil); err != nil {
			return err
		}
		if err := t.sb.(adapter.Remover).RemoveFile(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// removeDirs removes the directories of the workspace that the manifest neither lists nor needs
// as a parent, deepest first (prepare removed the files in them: they are empty).
func removeDirs(ctx context.Context, sb adapter.Sandbox, entries []Entry) error {
	need := map[string]bool{}
	for _, e := range entries {
		if e.Type == TypeDir {
			need[e.Path] = true
		}
		parents(e.Path, func(d string) { need[d] = true })
	}
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"find", ".", "-mindepth", "1", "-type", "d", "-print0"}, MaxOutputBytes: 64 << 20})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 || res.StdoutTruncated {
		return errs.New(errs.Internal, "snapshot.restore", "", "find of directories exited with %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	rm := sb.(adapter.Remover)
	found := bytes.Split(res.Stdout, []byte{0})
	// Deepest first: a directory sorts after its parent, so descending order puts children first.
	slices.SortFunc(found, func(a, b []byte) int { return bytes.Compare(b, a) })
	for _, p := range found {
		d := strings.TrimPrefix(string(p), "./")
		if d == "" || need[d] {
			continue
		}
		if err := rm.RemoveFile(ctx, d); err != nil && errs.CodeOf(err) != errs.NotFound {
			return err
		}
	}
	return nil
}

// verify checks t's workspace against m; the error is errs.VerifyFailed naming every path that
// differs.
func (c *Catalog) verify(ctx context.Context, t *target, m Manifest) error {
	const op = "snapshot.verify"
	have, err := t.sb.(adapter.Lister).ListFiles(ctx, "")
	if err != nil {
		return err
	}
	byPath := make(map[string]adapter.FileInfo, len(have))
	for _, f := range have {
		byPath[f.Path] = f
	}
	missing := map[string]bool{}
	for _, p := range t.missing {
		missing[p] = true
	}
	var altered, unexpected, corrupt []string
	var toHash []adapter.FileInfo
	want := map[string]string{} // path -> hash, files to read back
	st, _ := t.sb.(adapter.Statter)
	for _, e := range m.Entries {
		if missing[e.Path] {
			continue
		}
		f, ok := byPath[e.Path]
		delete(byPath, e.Path)
		switch {
		case e.Type == TypeDir:
			if st == nil {
				continue // checked by removeDirs' absence of errors only; no Statter
			}
			fi, err := st.StatFile(ctx, e.Path)
			if errs.CodeOf(err) == errs.NotFound {
				missing[e.Path] = true
			} else if err != nil {
				return err
			} else if !fi.Mode.IsDir() {
				altered = append(altered, e.Path)
			}
		case !ok:
			missing[e.Path] = true
		case e.Type == TypeSymlink:
			if !f.IsLink() || f.Link != e.Target {
				altered = append(altered, e.Path)
			}
		case !f.Mode.IsRegular() || f.Executable() != e.Executable() || f.Size != e.Size:
			altered = append(altered, e.Path)
			if f.Size != e.Size && c.blobCorrupt(ctx, e.Hash) {
				corrupt = append(corrupt, e.Path)
			}
		default:
			toHash = append(toHash, f)
			want[e.Path] = e.Hash
		}
	}
	for p := range byPath {
		unexpected = append(unexpected, p)
	}
	got, err := c.readFiles(ctx, t.sb, toHash, nil)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(got))
	for _, r := range got {
		seen[r.f.Path] = true
		if r.hash != want[r.f.Path] {
			altered = append(altered, r.f.Path)
			if c.blobCorrupt(ctx, want[r.f.Path]) {
				corrupt = append(corrupt, r.f.Path)
			}
		}
	}
	for _, f := range toHash {
		if !seen[f.Path] {
			missing[f.Path] = true // vanished while it was read back
		}
	}
	var miss []string
	for p := range missing {
		miss = append(miss, p)
	}
	if len(miss)+len(altered)+len(unexpected) == 0 {
		return nil
	}
	slices.Sort(miss)
	slices.Sort(altered)
	slices.Sort(unexpected)
	slices.Sort(corrupt)
	named := slices.Concat(miss, altered, unexpected)
	e := errs.New(errs.VerifyFailed, op, named[0], "restored workspace does not match snapshot %s: %d missing, %d altered (%d from corrupt blobs), %d unexpected: %s",
		m.Name, len(miss), len(altered), len(corrupt), len(unexpected), strings.Join(named[:min(len(named), maxNamed)], ", "))
	e.Details = map[string]any{"snapshot": m.Name, "missing": miss, "altered": altered, "corrupt": corrupt, "unexpected": unexpected}
	return e
}

// blobCorrupt reports whether the stored blob h no longer hashes to h (said in a failed
// verification's details, to tell a damaged catalog from a sandbox that wrote wrong).
func (c *Catalog) blobCorrupt(ctx context.Context, h string) bool {
	rc, err := c.blobs.open(ctx, h)
	if err != nil {
		return errs.CodeOf(err) == errs.NotFound
	}
	defer rc.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, rc); err != nil {
		return true
	}
	return hex.EncodeToString(sum.Sum(nil)) != h
}
