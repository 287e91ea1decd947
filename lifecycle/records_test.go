package lifecycle

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/errs"
)

func TestRecordsRoundTrip(t *testing.T) {
	t.Parallel()
	d := records{root: t.TempDir()}
	recs, err := d.list()
	require.NoError(t, err)
	assert.Empty(t, recs, "a missing state directory lists nothing")

	a := Record{ID: NewID(), Adapter: "local", Workspace: "/w", CreatedAt: time.Unix(1, 0).UTC()}
	b := Record{ID: NewID(), Adapter: "docker", Backend: "x", CreatedAt: time.Unix(2, 0).UTC()}
	require.NotEqual(t, a.ID, b.ID)
	require.NoError(t, d.save(b))
	require.NoError(t, d.save(a))
	got, err := d.get(a.ID)
	require.NoError(t, err)
	assert.Equal(t, a, got)
	recs, err = d.list()
	require.NoError(t, err)
	assert.Equal(t, []Record{a, b}, recs, "oldest first")

	require.NoError(t, d.delete(a.ID))
	_, err = d.get(a.ID)
	assert.True(t, errors.Is(err, errs.NotFound))
	assert.True(t, errors.Is(d.delete(a.ID), errs.NotFound))
}

func TestHostileIDs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := records{root: filepath.Join(root, "state")}
	victim := filepath.Join(root, "victim")
	require.NoError(t, os.MkdirAll(victim, 0o755))
	for _, id := range []string{"", "..", "../victim", "../../etc", "a/b", "/abs", "UPPER", "sp ace", "x\x00y", ".hidden",
		"a-very-long-id-that-goes-on-and-on-and-on-and-on-and-on-and-on-and-on"} {
		assert.True(t, errors.Is(CheckID(id), errs.InvalidInput), "id %q", id)
		_, err := d.get(id)
		assert.True(t, errors.Is(err, errs.InvalidInput), "Get %q", id)
		assert.True(t, errors.Is(d.delete(id), errs.InvalidInput), "Delete %q", id)
		assert.True(t, errors.Is(d.save(Record{ID: id}), errs.InvalidInput), "Save %q", id)
	}
	_, err := os.Stat(victim)
	require.NoError(t, err, "nothing outside the state directory was removed")

	// A record whose file names another id is refused.
	id := NewID()
	require.NoError(t, d.save(Record{ID: id, Adapter: "local"}))
	require.NoError(t, os.WriteFile(filepath.Join(d.sandboxDir(id), "sandbox.json"), []byte(`{"id":"sbx-000000000000"}`), 0o644))
	_, err = d.get(id)
	assert.Error(t, err)
}

// TestCheckIDAgreesWithPattern checks the hand-written id check against the documented pattern,
// on the edges and on random strings over the alphabet around it.
func TestCheckIDAgreesWithPattern(t *testing.T) {
	t.Parallel()
	pattern := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	cases := []string{"", "a", "0", "-", "-a", "a-", "sbx-0123456789ab", "é", "a\n", "A", "a_b", "a.b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "z" + strings.Repeat("-", 62), "z" + strings.Repeat("-", 63)}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "az09-_A/.\x00é"
	for range 5000 {
		b := make([]byte, rng.IntN(70))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, id := range cases {
		want := pattern.MatchString(id)
		err := CheckID(id)
		if want {
			assert.NoError(t, err, "id %q", id)
		} else {
			assert.True(t, errors.Is(err, errs.InvalidInput), "id %q", id)
		}
	}
}
