package tools

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
)

// MaxPathDiffFiles bounds the workspace a call's path diff walks: above it the receipt says the
// diff was skipped ("too many files") rather than list every file twice per call.
const MaxPathDiffFiles = 5000

// Reasons a receipt's path diff was not taken (adapter.PathChanges.Skipped).
const (
	PathDiffTooMany     = "too many files"
	PathDiffUnsupported = "unsupported"
	PathDiffError       = "error"
)

// pathDiff is a stat listing of the workspace taken before a call, compared with one taken after
// it: path, size, modification time, mode, inode and link target, never the content (the same
// stat cache FileSync's diff mode trusts).
type pathDiff struct {
	lister  adapter.Lister
	before  map[string]adapter.FileInfo
	skipped string
}

// beginPathDiff lists the workspace of tc's sandbox, or returns nil when tc turns the diff off.
func beginPathDiff(ctx context.Context, tc *Context) *pathDiff {
	if tc.NoPathDiff {
		return nil
	}
	l, ok := tc.Sandbox.(adapter.Lister)
	if !ok {
		return &pathDiff{skipped: PathDiffUnsupported}
	}
	d := &pathDiff{lister: l}
	d.before, d.skipped = listStats(ctx, l)
	return d
}

// listStats lists the whole workspace by path, or says why it did not.
func listStats(ctx context.Context, l adapter.Lister) (map[string]adapter.FileInfo, string) {
	files, err := l.ListFiles(ctx, "")
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return nil, PathDiffUnsupported
	case err != nil:
		return nil, PathDiffError
	case len(files) > MaxPathDiffFiles:
		return nil, PathDiffTooMany
	}
	m := make(map[string]adapter.FileInfo, len(files))
	for _, f := range files {
		m[f.Path] = f
	}
	return m, ""
}

// end lists the workspace again and returns what changed; nil for a nil diff (turned off).
// The context may have ended with the command (a timeout): the listing after it gets a short
// one of its own.
func (d *pathDiff) end(ctx context.Context) *adapter.PathChanges {
	if d == nil {
		return nil
	}
	if d.skipped != "" {
		return &adapter.PathChanges{Skipped: d.skipped}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	after, skipped := listStats(ctx, d.lister)
	if skipped != "" {
		return &adapter.PathChanges{Skipped: skipped}
	}
	return diffStats(d.before, after)
}

// diffStats compares two listings.
func diffStats(before, after map[string]adapter.FileInfo) *adapter.PathChanges {
	var p adapter.PathChanges
	for path, a := range after {
		b, ok := before[path]
		switch {
		case !ok:
			p.Created = append(p.Created, path)
		case a.Size != b.Size || !a.ModTime.Equal(b.ModTime) || a.Mode != b.Mode || a.Inode != b.Inode || a.Link != b.Link:
			p.Changed = append(p.Changed, path)
		}
	}
	for path := range before {
		if _, ok := after[path]; !ok {
			p.Deleted = append(p.Deleted, path)
		}
	}
	slices.Sort(p.Created)
	slices.Sort(p.Changed)
	slices.Sort(p.Deleted)
	return &p
}

// addNetwork adds the bytes of the proxy's decisions during a call to its receipt.
func addNetwork(r *adapter.Receipt, ds []egress.Decision) {
	var in, out int64
	for _, d := range ds {
		in += d.BytesIn
		out += d.BytesOut
	}
	r.NetReceivedBytes, r.NetSentBytes = adapter.Int64(in), adapter.Int64(out)
}
