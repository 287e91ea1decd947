// Package testenv reads the test switches of the environment: SANDBOXER_TEST_REQUIRE lists, comma
// separated, the backends whose absence must fail the tests instead of skipping them (CI sets
// "docker,oci,isolation"; a single name works as before).
package testenv

import (
	"os"
	"strings"
)

// Required reports whether SANDBOXER_TEST_REQUIRE names name.
func Required(name string) bool {
	for _, n := range strings.Split(os.Getenv("SANDBOXER_TEST_REQUIRE"), ",") {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return false
}
