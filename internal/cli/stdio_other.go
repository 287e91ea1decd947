//go:build !unix

package cli

import (
	"io"
	"os"
)

// pollable is nil: the SDK's transport reads the input.
func pollable(io.Reader) *os.File { return nil }

// readerGone is false: the client's end cannot be polled here.
func readerGone(io.Writer) bool { return false }
