package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
	"github.com/sandboxer/sandboxer/sync/sqlitestore"
	"github.com/stretchr/testify/require"
)

func TestConformance(t *testing.T) {
	filesynctest.RunStore(t, func(t testing.TB, dir string) filesync.Store {
		st, err := sqlitestore.Open(filepath.Join(dir, "store.db"))
		require.NoError(t, err)
		return st
	})
}
