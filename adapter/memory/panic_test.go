package memory_test

import (
	"context"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPanicIsInternal: a panic inside a call (here a test-only command that panics, on the call's
// goroutine, in a pipeline element's goroutine and in a background job) ends that call with
// errs.Internal and the panic's message; the sandbox goes on serving.
func TestPanicIsInternal(t *testing.T) {
	t.Parallel()
	sb, err := memory.New(memory.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	ctx := context.Background()
	for _, script := range []string{
		"echo before; __sandboxer_test_panic",
		"echo x | __sandboxer_test_panic | cat",
		"__sandboxer_test_panic & wait",
		"f() { __sandboxer_test_panic; }; x=$(f)",
	} {
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", script}})
		require.Error(t, err, script)
		assert.Equal(t, errs.Internal, errs.CodeOf(err), script)
		assert.Contains(t, err.Error(), "a panic on purpose", script)
		var pe *memory.PanicError
		assert.ErrorAs(t, err, &pe, script)
		assert.NotEmpty(t, pe.Stack, script)
	}
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "echo still serving"}})
	require.NoError(t, err)
	assert.Equal(t, "still serving\n", string(res.Stdout))
}
