package snapshot

import "context"

// SetTestHook installs fn as the crash hook and returns a func that removes it.
func SetTestHook(fn func(point string) error) func() {
	old := testHook
	testHook = fn
	return func() { testHook = old }
}

// BlobCount is the number of blobs the catalog's store holds.
func BlobCount(c *Catalog) int {
	if err := c.blobs.refresh(context.Background()); err != nil {
		panic(err)
	}
	hs, err := c.blobs.list(context.Background())
	if err != nil {
		panic(err)
	}
	return len(hs)
}

// BlobPack says where the default store keeps blob h: its pack file, offset and size.
func BlobPack(c *Catalog, h string) (string, int64, int64) {
	b := c.blobs.(*packBlobs)
	b.refresh(context.Background())
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.index[h]
	return b.path(l.pack, ".pack"), l.off, l.size
}
