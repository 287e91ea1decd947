//go:build unix && (!linux || sandboxer_portable)

package adapter

import (
	"context"
	"os"
)

// copyData copies the first size bytes of src into the empty file dst as one stream: holes are
// written as zeros (the bound on size is what keeps this in proportion).
func copyData(ctx context.Context, dst, src *os.File, size int64) error {
	return streamCopy(ctx, dst, src, 0, size)
}
