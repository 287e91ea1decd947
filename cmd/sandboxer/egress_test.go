package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/local"
)

// --allow-host through the CLI: the memory adapter refuses it, --allow-network excludes it,
// inspection names a host it can see, and what it cannot see is refused by the proxy, which
// the tool error's details and the journal row record. (Allowed hosts reached through the proxy
// are tested where a resolver can map names to test servers: egress/egresstest on each adapter.)
func TestAllowHosts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bash := func(input string, extra ...string) result {
		return e.run("", nil, append([]string{"tool", "bash", "--allow-host", "allowed.example", "--input", input}, extra...)...)
	}

	r := bash(`{"cmd":"true"}`, "--adapter", "memory")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Equal(t, "SANDBOX_UNAVAILABLE", code(decodeReply(t, r)))

	r = bash(`{"cmd":"true"}`, "--allow-network")
	assert.Equal(t, 2, r.code, "--allow-network with --allow-host is a usage error")
	r = e.run("", nil, "tool", "bash", "--allow-host", "*", "--input", `{"cmd":"true"}`)
	assert.Equal(t, 2, r.code, "a bad pattern is a usage error")

	r = bash(`{"cmd":"busybox","args":["wget","-q","-O","-","http://evil.example/"]}`)
	w := decodeReply(t, r)
	require.Equal(t, "TOOL_NETWORK_DISABLED", code(w), r.stdout)
	assert.Equal(t, "evil.example", w.Error.Details["host"])

	if !local.Probe().Network {
		t.Skip("no network namespace here: the proxy is not attached (covered by adapter/local where it is)")
	}
	r = e.run("", nil, "exec", "--allow-host", "allowed.example", "--", "sh", "-c", "echo $HTTPS_PROXY $no_proxy")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "http://127.0.0.1:3128 localhost,127.0.0.1,::1\n", r.stdout)

	e.write("url.txt", "http://evil.example/")
	r = bash(`{"cmd":"sh","args":["-c","busybox wget -q -O - \"$(cat url.txt)\""]}`, "--run-id", "egress")
	w = decodeReply(t, r)
	require.Equal(t, "TOOL_COMMAND_FAILED", code(w), r.stdout)
	net, _ := w.Error.Details["network"].([]any)
	require.Len(t, net, 1, r.stdout)
	d := net[0].(map[string]any)
	assert.Equal(t, "evil.example", d["host"])
	assert.Equal(t, false, d["allowed"])
	assert.EqualValues(t, 80, d["port"])

	rows := e.log(t, "--run-id", "egress")
	require.Len(t, rows, 1)
	b, err := json.Marshal(rows[0])
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(b), "evil.example"), "the journal row records the decision: %s", b)
}
