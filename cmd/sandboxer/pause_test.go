package main_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPauseAndResume: `sandbox pause` and `resume` on docker and oci (runc, runsc): a paused
// sandbox takes no command, says it is paused, stays alive in `sandbox ls`, and works again after
// resume; the local adapter refuses. (adaptertest.CheckPause shows the processes stop and go on.)
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		need func(t *testing.T)
	}{
		{"docker", []string{"--adapter", "docker"}, requireDocker},
		{"runc", []string{"--adapter", "oci", "--runtime", "runc"}, func(t *testing.T) { requireRuntime(t, "runc") }},
		{"runsc", []string{"--adapter", "oci", "--runtime", "runsc"}, func(t *testing.T) { requireRuntime(t, "runsc") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.need(t)
			e := newEnv(t)
			shareGoCache(e)
			e.timeout = 5 * time.Minute
			r := e.run("", nil, append([]string{"sandbox", "create"}, c.args...)...)
			require.Equal(t, 0, r.code, r.stderr)
			m := idRe.FindStringSubmatch(r.stdout)
			require.NotNil(t, m, r.stdout)
			id := m[1]
			t.Cleanup(func() { e.run("", nil, "sandbox", "resume", id); e.run("", nil, "sandbox", "rm", id) })
			r = e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", "echo kept > f")
			require.Equal(t, 0, r.code, r.stderr)

			r = e.run("", nil, "sandbox", "pause", id)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, id+"\n", r.stdout)
			r = e.run("", nil, "sandbox", "pause", id)
			require.Equal(t, 0, r.code, "pausing a paused sandbox is a no-op: %s", r.stderr)
			r = e.run("", nil, "exec", "--sandbox", id, "--", "true")
			assert.NotEqual(t, 0, r.code, "a paused sandbox takes no command")
			assert.Contains(t, r.stderr, "paused")
			r = e.run("", nil, "sandbox", "ls", "--json")
			assert.Contains(t, r.stdout, `"alive":true`, "a paused sandbox is not gone (prune keeps it)")

			r = e.run("", nil, "sandbox", "resume", id)
			require.Equal(t, 0, r.code, r.stderr)
			r = e.run("", nil, "exec", "--sandbox", id, "--", "cat", "f")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "kept\n", r.stdout)
		})
	}
	t.Run("local", func(t *testing.T) {
		e := newEnv(t)
		r := e.run("", nil, "sandbox", "create")
		require.Equal(t, 0, r.code, r.stderr)
		id := idRe.FindStringSubmatch(r.stdout)[1]
		t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
		r = e.run("", nil, "sandbox", "pause", id)
		assert.Equal(t, 2, r.code, "the local adapter cannot pause: a usage error naming the adapters that can")
		assert.Contains(t, r.stderr, "docker and oci")
	})
}
