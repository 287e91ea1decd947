package errs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCodeMatchesThroughWrapping(t *testing.T) {
	t.Parallel()
	base := errs.Wrap(errs.NotFound, "read", "a.txt", fs.ErrNotExist)
	wrapped := fmt.Errorf("tool read: %w", base)

	assert.ErrorIs(t, wrapped, errs.NotFound)
	assert.NotErrorIs(t, wrapped, errs.PathEscape)
	assert.ErrorIs(t, wrapped, fs.ErrNotExist, "the cause stays reachable")
	assert.Equal(t, errs.NotFound, errs.CodeOf(wrapped))

	var e *errs.Error
	require.ErrorAs(t, wrapped, &e)
	assert.Equal(t, "read", e.Op)
	assert.Equal(t, "a.txt", e.Path)
}

func TestBareCodeIsAnError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("stopped: %w", errs.SandboxUnavailable)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err))
	assert.Equal(t, errs.SandboxUnavailable, errs.As(err).Code)
}

func TestAsAndCodeOfEdges(t *testing.T) {
	t.Parallel()
	assert.Equal(t, errs.Code(""), errs.CodeOf(nil))
	assert.Equal(t, errs.Code(""), errs.CodeOf(errors.New("plain")))
	assert.Nil(t, errs.As(nil))
	assert.Equal(t, errs.Internal, errs.As(errors.New("plain")).Code)
	assert.NoError(t, errs.Wrap(errs.Internal, "op", "", nil))
}

func TestMessageLeavesOutTheCode(t *testing.T) {
	t.Parallel()
	e := errs.New(errs.InvalidInput, "bash", "", "cmd is empty")
	assert.Equal(t, "cmd is empty", e.Message())
	assert.Contains(t, e.Error(), "INVALID_INPUT")
}
