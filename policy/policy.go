// Package policy owns the network-policy decision of SPEC.md section 4, layer 1: command inspection
// before anything runs while the network is off.
//
// Check is a pure function over an argv (the bash tool runs argv directly, without a shell). Every
// shell script found in it (sh/bash/dash/zsh/ksh -c, eval, $(...), backticks, process
// substitution, here-documents fed to a shell, trap and alias bodies, ...) is parsed with
// mvdan.cc/sh/v3/syntax, wrappers (env, xargs, timeout, nice, nohup, sudo, command, exec, find
// -exec, ...) are unwrapped, and every command that would run is looked up by the basename of
// its name. Network clients, package managers, git remote subcommands and URL arguments with a
// non-loopback host are denied; so is anything that cannot be inspected statically (a command
// name held in a variable that was not assigned a constant earlier in the script, a script that
// does not parse, a shell reading its script from a pipe). Needed says where inspection applies:
// not in an adapter without any network.
//
// The decision is advisory text inspection: layer 2 (network namespace, container network mode
// none) is what enforces it. docs/policy.md lists what is inspected and the known gaps.
package policy

import (
	"mvdan.cc/sh/v3/syntax"

	"github.com/sandboxer/sandboxer/errs"
)

// Decision is the verdict of command inspection while the network is off.
type Decision struct {
	Allowed bool
	Code    errs.Code // errs.NetworkDisabled or errs.GitRemoteDisabled when denied; "" when allowed
	Reason  string    // human text, e.g. `curl is a network client`; not part of the contract
	Command string    // the offending command word or URL
	// Host is the host that is not allowed (CheckAllowlist only); "" otherwise.
	Host string
}

// Err returns nil when the decision allows the command, else an *errs.Error with the decision's
// code, op, Msg set to the reason and Details{"command": the offending word}.
func (d Decision) Err(op string) error {
	if d.Allowed {
		return nil
	}
	e := &errs.Error{
		Code:    d.Code,
		Op:      op,
		Msg:     d.Reason,
		Details: map[string]any{"command": d.Command},
	}
	if d.Host != "" {
		e.Details["host"] = d.Host
	}
	return e
}

// maxDepth bounds nested scripts (sh -c inside eval inside sh -c ...); deeper nesting is denied.
const maxDepth = 32

// Check inspects argv, the command the bash tool would run with the network off, and decides
// whether it may run. It never panics and never touches the system: the same argv always gives
// the same decision. An empty argv is allowed (there is nothing to run).
func Check(argv []string) Decision {
	return check(argv, checker{})
}

// CheckEnforced is Check for a sandbox whose network the kernel cuts off but for its own loopback
// (adapter.NetworkEnforcer): network clients may run, so that a command can test the server
// another one started; every URL and bash network path inspection can see must still name a
// loopback host, so that a command meant for the outside is refused with a clear reason rather
// than failing on an unreachable address. What inspection cannot see (a host without a scheme,
// --resolve) is the kernel's to stop.
func CheckEnforced(argv []string) Decision {
	return check(argv, checker{clientsOK: true})
}

// CheckAllowlist inspects argv for a sandbox whose only way out is the egress proxy, with
// allowed deciding which hosts the allowlist (allow-hosts) lets through. Network clients,
// package managers, git remote subcommands and what cannot be resolved statically pass: the
// proxy enforces what inspection cannot see. What inspection can see must be allowed: every URL's
// host is loopback or allowed, and neither a bash /dev/tcp or /dev/udp path nor a git ssh remote
// (git@host:path) names a host outside the sandbox, since neither goes through the proxy. A
// refusal is errs.NetworkDisabled with Decision.Host naming the host. allowed nil allows no host.
func CheckAllowlist(argv []string, allowed func(host string) bool) Decision {
	if allowed == nil {
		allowed = func(string) bool { return false }
	}
	return check(argv, checker{allowMode: true, allowed: allowed})
}

func check(argv []string, c checker) Decision {
	args := make([]arg, len(argv))
	for i, s := range argv {
		args[i] = lit(s)
		c.scanText(s)
	}
	if !c.denied {
		c.argv(args, ctx{lang: langSh})
	}
	if !c.denied && c.execStdin && c.inheritedShell != "" {
		c.denyNet(c.inheritedShell, "a shell reads its script from a stdin that exec redirected, which cannot be inspected")
	}
	if c.denied {
		return c.d
	}
	return Decision{Allowed: true}
}

// checker walks one argv and remembers the first denial.
type checker struct {
	d      Decision
	denied bool
	depth  int

	// allowMode: CheckAllowlist; only denyHost denies, for hosts allowed reports false.
	allowMode bool
	// clientsOK: CheckEnforced; network clients are not denied as such.
	clientsOK bool
	allowed   func(host string) bool

	// execStdin: a bare `exec <...` replaced a shell's stdin somewhere; inheritedShell: a
	// shell reads its script from the stdin it inherited. Together they deny.
	execStdin      bool
	inheritedShell string

	// consts: the constants of the variables of the script being inspected.
	consts *consts

	// walk state: the visitor is bound once; wx and wsrc are the context of the current walk.
	visitFn func(syntax.Node) bool
	wx      ctx
	wsrc    string
	argBuf  []arg
}

func (c *checker) deny(code errs.Code, command, reason string) {
	if c.denied || c.allowMode {
		return
	}
	c.denied = true
	c.d = Decision{Code: code, Reason: reason, Command: command}
}

// denyHost denies in both modes: host is outside the sandbox and not reachable (allowMode), or
// any non-loopback host (Check).
func (c *checker) denyHost(command, host, reason string) {
	if c.denied {
		return
	}
	c.denied = true
	c.d = Decision{Code: errs.NetworkDisabled, Reason: reason, Command: command, Host: host}
}

func (c *checker) denyNet(command, reason string) { c.deny(errs.NetworkDisabled, command, reason) }

func (c *checker) denyUnresolvable(src, what string) {
	c.denyNet(src, what+" "+quoteSrc(src)+" cannot be resolved statically")
}

func quoteSrc(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return "`" + s + "`"
}
