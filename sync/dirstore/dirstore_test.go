package dirstore_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/sync/dirstore"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
	"github.com/stretchr/testify/require"
)

func TestConformance(t *testing.T) {
	filesynctest.RunStore(t, func(t testing.TB, dir string) filesync.Store {
		st, err := dirstore.Open(dir)
		require.NoError(t, err)
		return st
	})
}
