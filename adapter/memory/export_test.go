package memory

import (
	"context"

	"github.com/sandboxer/sandboxer/third_party/mvdansh/interp"
)

// testPanic is a command that panics, so that tests can check that a panic ends the call with
// errs.Internal instead of the process.
const testPanic = "__sandboxer_test_panic"

func init() {
	internal[testPanic] = func(context.Context, *call, interp.HandlerContext, []string) int {
		panic("a panic on purpose")
	}
}
