package patch_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools/patch"
)

var update = flag.Bool("update", false, "rewrite the after/error sections of testdata/*.txtar from the current engine")

// Golden cases live in testdata/*.txtar: sections "before" and "patch", then either "after" (the
// expected file) or "error" (the expected error code). txtar cannot hold a section without a final
// newline, so a comment line "nonl before" / "nonl after" says that section's last newline is not
// part of the content.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			require.NoError(t, err)
			sec := map[string][]byte{}
			for _, f := range a.Files {
				sec[f.Name] = f.Data
			}
			nonl := func(name string) bool {
				for _, line := range strings.Split(string(a.Comment), "\n") {
					if line == "nonl "+name {
						return true
					}
				}
				return false
			}
			before := sec["before"]
			if nonl("before") {
				before = bytes.TrimSuffix(before, []byte("\n"))
			}
			orig := bytes.Clone(before)

			got, err := patch.Apply(before, string(sec["patch"]))
			assert.Equal(t, orig, before, "the source must never be modified")

			if *update {
				writeGolden(t, file, a, got, err)
				return
			}
			if want, ok := sec["error"]; ok {
				require.Error(t, err)
				assert.Equal(t, strings.TrimSpace(string(want)), string(errs.CodeOf(err)))
				assert.Nil(t, got)
				return
			}
			want, ok := sec["after"]
			require.True(t, ok, "case needs an after or error section")
			if nonl("after") {
				want = bytes.TrimSuffix(want, []byte("\n"))
			}
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		})
	}
}

func writeGolden(t *testing.T, file string, a *txtar.Archive, got []byte, err error) {
	t.Helper()
	var kept []txtar.File
	for _, f := range a.Files {
		if f.Name == "before" || f.Name == "patch" {
			kept = append(kept, f)
		}
	}
	var comment []string
	for _, line := range strings.Split(strings.TrimSuffix(string(a.Comment), "\n"), "\n") {
		if line != "nonl after" && line != "" {
			comment = append(comment, line)
		}
	}
	if err != nil {
		kept = append(kept, txtar.File{Name: "error", Data: []byte(string(errs.CodeOf(err)) + "\n")})
	} else {
		data := got
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			comment = append(comment, "nonl after")
			data = append(bytes.Clone(data), '\n')
		}
		kept = append(kept, txtar.File{Name: "after", Data: data})
	}
	a.Comment = nil
	if len(comment) > 0 {
		a.Comment = []byte(strings.Join(comment, "\n") + "\n")
	}
	a.Files = kept
	require.NoError(t, os.WriteFile(file, txtar.Format(a), 0o644))
}

func TestPatchFailedNamesHunk(t *testing.T) {
	t.Parallel()
	src := []byte("a\nb\nc\n")
	_, err := patch.Apply(src, "@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -3 +3 @@\n-zzz\n+c2\n")
	require.ErrorIs(t, err, errs.PatchFailed)
	e := errs.As(err)
	assert.Equal(t, 2, e.Details["hunk"])
	assert.Equal(t, "@@ -3,1 +3,1 @@", e.Details["header"])
	assert.Equal(t, "zzz", e.Details["expected"])
	assert.Equal(t, "c", e.Details["found"])
}

func TestParseCountsHunks(t *testing.T) {
	t.Parallel()
	p, err := patch.Parse("--- a\n+++ b\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5 @@\n-e\n+f\n")
	require.NoError(t, err)
	assert.Equal(t, 2, p.Hunks())
}

// FuzzApply: any input either applies or fails with one of the two documented codes; never a panic.
func FuzzApply(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
	f.Add([]byte("a\r\nb"), "@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+c\n")
	f.Add([]byte(""), "--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n")
	f.Fuzz(func(t *testing.T, src []byte, diff string) {
		_, err := patch.Apply(src, diff)
		if err != nil {
			c := errs.CodeOf(err)
			if c != errs.InvalidInput && c != errs.PatchFailed {
				t.Fatalf("unexpected code %q: %v", c, err)
			}
		}
	})
}
