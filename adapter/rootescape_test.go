package adapter_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
)

func TestIsRootEscape(t *testing.T) {
	r, err := os.OpenRoot(t.TempDir())
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Open("../outside")
	require.Error(t, err)
	assert.True(t, adapter.IsRootEscape(err), "%v", err)
	_, err = r.Open("missing")
	require.Error(t, err)
	assert.False(t, adapter.IsRootEscape(err), "%v", err)
	assert.False(t, adapter.IsRootEscape(nil))
}
