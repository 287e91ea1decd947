package snapshot

// SetTestHook installs fn as the crash hook and returns a func that removes it.
func SetTestHook(fn func(point string) error) func() {
	old := testHook
	testHook = fn
	return func() { testHook = old }
}
