package testenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRequired(t *testing.T) {
	for env, want := range map[string]map[string]bool{
		"":                          {"docker": false, "oci": false},
		"docker":                    {"docker": true, "oci": false},
		"docker,oci":                {"docker": true, "oci": true, "isolation": false},
		" oci , isolation":          {"oci": true, "isolation": true, "docker": false},
		"dockers,oci-runtime,other": {"docker": false, "oci": false},
	} {
		t.Setenv("SANDBOXER_TEST_REQUIRE", env)
		for name, w := range want {
			assert.Equal(t, w, Required(name), "%q in %q", name, env)
		}
	}
}
