package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// invocation is what one run of the CLI takes from the process that asked for it: its SANDBOXER_*
// environment and its working directory. A process of its own takes them from itself; a call the
// resident server runs (sandboxer server) brings those of the front that sent it, and the
// server's warm journals and sandboxes. Every other variable (HOME, XDG_*, PATH, KUBECONFIG,
// DOCKER_HOST) is the server's own, which is the caller's: the front starts one server per
// environment (internal/oneshot.Name).
type invocation struct {
	env    map[string]string // SANDBOXER_* variables
	caller []string          // the front's whole environment, for secrets' env: sources; nil: this process's
	dir    string            // absolute working directory; "" is this process's
	warm   *warmth           // nil outside the server
}

type invocationKey struct{}

func withInvocation(ctx context.Context, inv invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// invocationOf is the invocation of ctx, or this process's.
func invocationOf(ctx context.Context) invocation {
	if inv, ok := ctx.Value(invocationKey{}).(invocation); ok {
		return inv
	}
	return processInvocation()
}

// processInvocation takes the SANDBOXER_* variables from this process's environment.
func processInvocation() invocation {
	return invocation{env: sandboxerEnv(os.Environ())}
}

// sandboxerEnv keeps the SANDBOXER_* entries of environ.
func sandboxerEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "SANDBOXER_") {
			env[k] = v
		}
	}
	return env
}

func (inv invocation) getenv(key string) string { return inv.env[key] }

// lookupEnv reads a variable of the caller's environment: only for the env: source of a secret
// (egress.SecretRef), whose value the caller's environment holds and a resident server's does not.
func (inv invocation) lookupEnv(key string) (string, bool) {
	if inv.caller == nil {
		return os.LookupEnv(key)
	}
	for _, kv := range inv.caller {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// abs makes p absolute against the invocation's working directory.
func (inv invocation) abs(p string) (string, error) {
	if inv.dir == "" || filepath.IsAbs(p) {
		return filepath.Abs(p)
	}
	return filepath.Join(inv.dir, p), nil
}

// envName is the variable of a setting: allow-network is SANDBOXER_ALLOW_NETWORK.
func envName(key string) string {
	return "SANDBOXER_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}
