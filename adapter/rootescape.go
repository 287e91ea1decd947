package adapter

import (
	"errors"
	"os"
	"sync"
)

// IsRootEscape reports whether err is the error an os.Root call returns for a path that leaves
// the root ("path escapes from parent"). The standard library does not export that error, so it
// is captured once from a path that must escape.
func IsRootEscape(err error) bool {
	e := rootEscapeErr()
	return e != nil && errors.Is(err, e)
}

var rootEscapeErr = sync.OnceValue(func() error {
	r, err := os.OpenRoot(os.TempDir())
	if err != nil {
		return nil
	}
	defer r.Close()
	_, err = r.Open("../")
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return nil
})
