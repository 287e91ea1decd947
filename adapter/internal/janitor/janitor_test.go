package janitor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLeft(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"nothing", "", nil},
		{"released", "+a\n+b\n-a\n", []string{"b"}},
		{"in the order registered", "+c\n+a\n+b\n", []string{"c", "a", "b"}},
		{"registered again after release: its last place", "+a\n+b\n-a\n+a\n", []string{"b", "a"}},
		{"released once for all registrations", "+a\n+a\n-a\n", nil},
		{"release of what was never registered", "-x\n+a\n", []string{"a"}},
		{"entries with spaces", "+dir /tmp/x y\n+pg 12\n-pg 12\n", []string{"dir /tmp/x y"}},
		{"junk lines", "\n+\nz\n+a\n*b\n", []string{"a"}},
		{"a last line without its break", "+a\n+b", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Left(strings.NewReader(tc.in)))
		})
	}
}
