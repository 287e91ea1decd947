package tools

import (
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sandboxer/sandboxer/adapter"
)

// The stat diff: each member of the stat that differs makes a path changed; equal stats list
// nothing.
func TestDiffStats(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1700000000, 5)
	base := adapter.FileInfo{Path: "a", Size: 3, Mode: 0o644, ModTime: t0, Inode: 7}
	link := adapter.FileInfo{Path: "l", Mode: fs.ModeSymlink | 0o777, ModTime: t0, Inode: 8, Link: "a"}
	before := map[string]adapter.FileInfo{"a": base, "l": link, "gone": {Path: "gone"}}
	assert.Equal(t, &adapter.PathChanges{}, diffStats(before, before))

	for name, f := range map[string]func(*adapter.FileInfo){
		"size":  func(f *adapter.FileInfo) { f.Size++ },
		"mtime": func(f *adapter.FileInfo) { f.ModTime = f.ModTime.Add(time.Nanosecond) },
		"mode":  func(f *adapter.FileInfo) { f.Mode = 0o755 },
		"inode": func(f *adapter.FileInfo) { f.Inode++ },
	} {
		a := base
		f(&a)
		after := map[string]adapter.FileInfo{"a": a, "l": link, "new": {Path: "new"}}
		assert.Equal(t, &adapter.PathChanges{Created: []string{"new"}, Changed: []string{"a"}, Deleted: []string{"gone"}},
			diffStats(before, after), name)
	}
	l := link
	l.Link = "b"
	assert.Equal(t, []string{"l"}, diffStats(before, map[string]adapter.FileInfo{"a": base, "l": l, "gone": {Path: "gone"}}).Changed)
}
