package oneshot

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []Request{
		{Dir: "/", Args: nil, Env: nil},
		{Key: "k3y", Dir: "/work/a b", Args: []string{"tool", "read", "--input", `{"path":"ä.txt"}`, ""}, Env: []string{"SANDBOXER_JOURNAL=off", "SANDBOXER_X="}},
		{Dir: "/w", Args: []string{string(make([]byte, 300))}},
	} {
		b := r.Append([]byte("junk before"))[len("junk before"):]
		n, err := BodyLen(b)
		require.NoError(t, err)
		require.Equal(t, len(b)-HeaderLen, n)
		got, err := Parse(b[HeaderLen:])
		require.NoError(t, err)
		assert.Equal(t, r.Dir, got.Dir)
		assert.Equal(t, r.Key, got.Key)
		assert.Equal(t, len(r.Args), len(got.Args))
		assert.Equal(t, len(r.Env), len(got.Env))
		for i := range r.Args {
			assert.Equal(t, r.Args[i], got.Args[i])
		}
		for i := range r.Env {
			assert.Equal(t, r.Env[i], got.Env[i])
		}
	}
}

func TestMalformedRequests(t *testing.T) {
	_, err := BodyLen([]byte("sbx0\x00\x00\x00\x01"))
	assert.Error(t, err, "another protocol")
	_, err = BodyLen([]byte("sbx1\x00\x00\x00\x01"))
	assert.Error(t, err, "the protocol that sent the descriptors with the request")
	_, err = BodyLen([]byte(Magic + "\x7f\x00\x00\x00"))
	assert.Error(t, err, "over MaxRequest")
	_, err = BodyLen([]byte("sbx"))
	assert.Error(t, err, "short header")

	good := Request{Dir: "/w", Args: []string{"tool", "read"}, Env: []string{"SANDBOXER_A=1"}}.Append(nil)[HeaderLen:]
	for i := range len(good) {
		_, err := Parse(good[:i])
		assert.Error(t, err, "truncated at %d", i)
	}
	_, err = Parse(append(append([]byte(nil), good...), 0))
	assert.Error(t, err, "trailing data")
	_, err = Parse(Request{Dir: "relative"}.Append(nil)[HeaderLen:])
	assert.Error(t, err, "a relative directory")
	_, err = Parse([]byte{0, 2, '/', 'w', 0xff, 0xff, 0xff, 0xff, 0x0f})
	assert.Error(t, err, "a count larger than the body")
}

func TestIsServed(t *testing.T) {
	for _, args := range [][]string{nil, {"tool", "read"}, {"exec", "true"}, {"--help"}, {"log"}, {"sandbox", "ls"}} {
		assert.True(t, IsServed(args), "%q", args)
	}
	for _, args := range [][]string{{"mcp"}, {"doctor"}, {"image", "build"}, {"port-forward"}, {"server"}, {"--adapter", "docker", "tool"}} {
		assert.False(t, IsServed(args), "%q", args)
	}
}

func TestServerName(t *testing.T) {
	env := ServerEnv([]string{"PATH=/bin", "SANDBOXER_JOURNAL=off", "PWD=/w", "OLDPWD=/", "_=/bin/x", "SHLVL=2", "HOME=/h",
		"HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET=17", "TOOL_CALL_ID=abc", "DOCKER_HOST=unix:///d", "XDG_STATE_HOME=/s", "GOCACHE=/c"})
	assert.Equal(t, []string{"DOCKER_HOST=unix:///d", "GOCACHE=/c", "HOME=/h", "PATH=/bin", "XDG_STATE_HOME=/s"}, env,
		"sorted, only what the engine reads, without the per-call variables")
	assert.Equal(t, []string{"HOME=/h", "PATH=/bin"}, ServerEnv([]string{"HOME=/h", "SANDBOXER_RUN_ID=r", "PATH=/bin", "OTHER=1"}))

	f := filepath.Join(t.TempDir(), "engine")
	require.NoError(t, os.WriteFile(f, []byte("a"), 0o755))
	fi, err := os.Stat(f)
	require.NoError(t, err)
	name := Name(f, fi, env, 0o22)
	assert.Equal(t, name, Name(f, fi, env, 0o22))
	assert.NotEqual(t, name, Name(f, fi, []string{"HOME=/h", "PATH=/usr/bin"}, 0o22), "another environment")
	assert.NotEqual(t, name, Name(f, fi, env, 0o77), "another umask")
	assert.NotEqual(t, name, Name(f+"2", fi, env, 0o22), "another engine")
	require.NoError(t, os.Chtimes(f, time.Now(), time.Now().Add(time.Hour)))
	fi2, err := os.Stat(f)
	require.NoError(t, err)
	assert.NotEqual(t, name, Name(f, fi2, env, 0o22), "a rebuilt engine")
}

func TestDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	assert.Equal(t, "/s", Dir(env(map[string]string{"SANDBOXER_SERVER_DIR": "/s", "XDG_RUNTIME_DIR": "/run/user/1"}), 1))
	assert.Equal(t, "/run/user/1/sandboxer", Dir(env(map[string]string{"SANDBOXER_SERVER_DIR": "rel", "XDG_RUNTIME_DIR": "/run/user/1"}), 1))
	assert.Equal(t, filepath.Join(os.TempDir(), "sandboxer-7"), Dir(env(nil), 7))
}
