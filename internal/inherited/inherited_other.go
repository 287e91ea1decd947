//go:build !linux

package inherited

// Close does nothing outside Linux, where the resident server and the local adapter's helpers
// are not built.
func Close(keep ...int) error { return nil }
