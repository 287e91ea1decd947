package policy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// networkClients talk to other hosts by design; they are denied whatever their arguments (a
// loopback-only exception would have to understand --resolve, --connect-to, proxies, -K config
// files, -i URL lists, ...: see docs/policy.md).
var networkClients = set(
	"curl", "wget", "wget2", "nc", "ncat", "netcat", "nc.openbsd", "nc.traditional", "socat",
	"ssh", "scp", "sftp", "rsync", "telnet", "ftp", "lftp", "tftp", "aria2c", "axel",
	"http", "https", "xh", "httpie", "links", "lynx", "w3m", "elinks",
	"ssh-keyscan", "ssh-copy-id", "sshpass", "mosh", "torsocks", "proxychains", "proxychains4",
	"dig", "nslookup", "host", "ping", "ping6", "traceroute", "tracepath", "mtr", "nmap", "whois",
	"gh", "glab", "hub", "docker", "podman", "nerdctl", "kubectl", "helm", "aws", "gcloud", "gsutil", "az",
)

// packageManagers download packages; go, python -m pip and versioned pip names are handled
// in their own functions.
var packageManagers = set(
	"npm", "npx", "pnpm", "pnpx", "yarn", "yarnpkg", "bun", "bunx", "corepack",
	"pip", "pip3", "pipx", "uv", "uvx", "poetry", "conda", "mamba", "micromamba", "easy_install",
	"gem", "cargo", "rustup", "composer",
	"apt", "apt-get", "apk", "dnf", "yum", "zypper", "pacman", "brew", "snap",
)

// pythonPackageModules are the modules `python -m` denies.
var pythonPackageModules = set("pip", "pip3", "pipx", "uv", "poetry", "conda", "easy_install")

// commandEnvVars hold a command line that a program runs through a shell (git's pager and
// editor, ssh command, ...): their values are inspected as scripts.
var commandEnvVars = set(
	"PAGER", "GIT_PAGER", "MANPAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
	"GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS",
	"SSH_ASKPASS", "PROMPT_COMMAND", "LESSOPEN", "LESSCLOSE",
)

type handler func(c *checker, a []arg, x ctx)

var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"git":      (*checker).git,
		"go":       (*checker).golang,
		"eval":     (*checker).eval,
		"source":   (*checker).source,
		".":        (*checker).source,
		"trap":     (*checker).trap,
		"alias":    (*checker).alias,
		"builtin":  func(c *checker, a []arg, x ctx) { c.argv(a[1:], x) },
		"command":  (*checker).command,
		"env":      (*checker).env,
		"xargs":    (*checker).xargs,
		"find":     (*checker).find,
		"watch":    (*checker).watch,
		"flock":    (*checker).flock,
		"su":       (*checker).su,
		"runuser":  (*checker).su,
		"script":   (*checker).scriptCmd,
		"rg":       (*checker).rg,
		"busybox":  (*checker).busybox,
		"toybox":   (*checker).busybox,
		"openssl":  (*checker).openssl,
		"parallel": (*checker).parallel,
		"hash":     (*checker).hash,
		"tar":      (*checker).tar,
		"gtar":     (*checker).tar,
		"exec":     wrapper(&opts{arg: "a"}, 0, false),
		"nohup":    wrapper(&opts{}, 0, false),
		"time":     wrapper(&opts{arg: "fo", longArg: set("format", "output")}, 0, false),
		"timeout":  wrapper(&opts{arg: "ks", longArg: set("kill-after", "signal")}, 1, false),
		"nice":     wrapper(&opts{arg: "n", longArg: set("adjustment")}, 0, false),
		"stdbuf":   wrapper(&opts{arg: "ioe", longArg: set("input", "output", "error")}, 0, false),
		"setsid":   wrapper(&opts{}, 0, false),
		"strace":   wrapper(&opts{arg: "abeEIoOpPsSuUX"}, 0, false),
		"ltrace":   wrapper(&opts{arg: "aAeEFlnopsuwxD"}, 0, false),
		"unshare": wrapper(&opts{arg: "SGRw", longArg: set("setuid", "setgid", "root", "wd",
			"map-user", "map-group", "map-users", "map-groups")}, 0, false),
		"chroot": wrapper(&opts{longArg: set("userspec", "groups")}, 1, false),
		"sudo": wrapper(&opts{arg: "CDgpRrtTUu", longArg: set("chdir", "close-from", "group", "host",
			"prompt", "role", "type", "command-timeout", "other-user", "user", "chroot")}, 0, true),
		"doas":    wrapper(&opts{arg: "uC"}, 0, false),
		"ionice":  pidModeWrapper(&opts{arg: "cnp", longArg: set("class", "classdata", "pid", "pgid", "uid")}, 0, "p", "P", "u", "pid", "pgid", "uid"),
		"chrt":    pidModeWrapper(&opts{arg: "TPD"}, 1, "p", "m", "pid", "max"),
		"taskset": pidModeWrapper(&opts{}, 1, "p", "pid"),
	}
	for name, l := range map[string]lang{
		"sh": langSh, "bash": langSh, "rbash": langSh, "dash": langSh, "ash": langSh,
		"yash": langSh, "posh": langSh, "fish": langSh, "csh": langSh, "tcsh": langSh,
		"zsh": langZsh, "ksh": langKsh, "mksh": langKsh, "lksh": langKsh, "pdksh": langKsh,
		"oksh": langKsh, "ksh93": langKsh,
	} {
		handlers[name] = func(c *checker, a []arg, x ctx) { c.shell(a, x, l) }
	}
}

// argv inspects one command about to run: a[0] is its name.
func (c *checker) argv(a []arg, x ctx) {
	if c.denied || len(a) == 0 {
		return
	}
	name := a[0]
	// Lower case: macOS file systems find CURL as curl. A leading = is zsh's =cmd (path of cmd).
	base := strings.ToLower(strings.TrimLeft(name.base, "="))
	if base == "" {
		if name.k != static {
			c.denyUnresolvable(name.src, "command name")
		}
		return // "" or "/": nothing runs
	}
	word := name.src
	if word == "" {
		word = name.s
	}
	switch {
	case networkClients[base]:
		if !c.clientsOK || !toLoopbackOnly(a[1:]) {
			c.denyNet(word, base+" is a network client")
		}
	case packageManagers[base] || versioned(base, "pip") || versioned(base, "easy_install-"):
		c.denyNet(word, base+" is a package manager")
	case base == "python" || base == "pypy" || versioned(base, "python") || versioned(base, "pypy"):
		c.python(a, x)
	case versioned(base, "go1"):
		c.golang(a, x)
	default:
		if h := handlers[base]; h != nil {
			h(c, a, x)
		}
	}
}

// versioned reports whether name is prefix followed by a version (digits and dots) only.
func versioned(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return false
	}
	return strings.Trim(rest, "0123456789.") == ""
}

// wrapper returns a handler for a command that runs another command after its options and
// fixed operands (timeout's duration, chroot's directory); assigns reads NAME=VALUE words first.
func wrapper(o *opts, fixed int, assigns bool) handler {
	return func(c *checker, a []arg, x ctx) {
		i, bad := o.parse(a, 1, nil)
		c.wrapped(a, i, bad, fixed, assigns, x)
	}
}

// pidModeWrapper is wrapper for commands that, given one of the pid options, act on running
// processes instead of running a command.
func pidModeWrapper(o *opts, fixed int, pidOpts ...string) handler {
	pid := set(pidOpts...)
	return func(c *checker, a []arg, x ctx) {
		noCommand := false
		i, bad := o.parse(a, 1, func(name string, _ arg) bool {
			noCommand = noCommand || pid[name]
			return false
		})
		if noCommand && bad < 0 {
			return
		}
		c.wrapped(a, i, bad, fixed, false, x)
	}
}

func (c *checker) wrapped(a []arg, i, bad, fixed int, assigns bool, x ctx) {
	if bad >= 0 {
		c.denyUnresolvable(a[bad].src, "option argument of "+a[0].base)
		return
	}
	for n := 0; n < fixed && i < len(a); n++ {
		if a[i].k == multi {
			c.denyUnresolvable(a[i].src, "operand of "+a[0].base)
			return
		}
		i++
	}
	if assigns {
		for i < len(a) && a[i].k == static {
			name, val, ok := envAssign(a[i].s)
			if !ok {
				break
			}
			c.assign(name, arg{s: val, src: a[i].src, base: basename(val)}, x)
			i++
		}
	}
	c.argv(a[i:], x)
}

// envAssign splits NAME=VALUE.
func envAssign(s string) (name, val string, ok bool) {
	name, val, ok = strings.Cut(s, "=")
	if !ok || name == "" {
		return "", "", false
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9') {
			return "", "", false
		}
	}
	return name, val, true
}

// assign inspects a variable assignment: a variable that holds a command line is a script.
func (c *checker) assign(name string, val arg, x ctx) {
	if !commandEnvVars[name] || c.denied {
		return
	}
	if val.k != static {
		c.denyUnresolvable(val.src, name+" value")
		return
	}
	c.script(val.s, langSh, x)
}

// staticJoin joins words into one script, or reports the first one that cannot be known.
func (c *checker) staticJoin(a []arg, what string) (string, bool) {
	parts := make([]string, len(a))
	for i, w := range a {
		if w.k != static {
			c.denyUnresolvable(w.src, what)
			return "", false
		}
		parts[i] = w.s
	}
	return strings.Join(parts, " "), true
}

func isStdinPath(s string) bool {
	switch s {
	case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-":
		return true
	}
	return false
}

// stdinScript inspects the script a shell reads from its standard input.
func (c *checker) stdinScript(a []arg, x ctx, l lang) {
	switch x.stdin {
	case stdinInherited:
		// The bash tool gives no stdin: nothing to run, unless a bare exec replaced the
		// shell's stdin somewhere (Check decides at the end, wherever that exec was).
		if c.inheritedShell == "" {
			c.inheritedShell = a[0].src
			if c.inheritedShell == "" {
				c.inheritedShell = a[0].base
			}
		}
	case stdinUnknown:
		c.denyNet(a[0].src, a[0].base+" reads its script from a pipe or file that cannot be inspected")
	case stdinDoc:
		if x.doc.k != static {
			c.denyUnresolvable(x.doc.src, "here-document script")
			return
		}
		c.script(x.doc.s, l, ctx{lang: l})
	}
}

// shell inspects sh/bash/zsh/... : the -c script, or the script it reads from stdin.
func (c *checker) shell(a []arg, x ctx, l lang) {
	cmdMode, stdinMode := false, false
	i := 1
	for i < len(a) && a[i].k == static {
		s := a[i].s
		if s == "--" || s == "-" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' && s[0] != '+' {
			break
		}
		i++
		if strings.HasPrefix(s, "--") {
			name, val, hasVal := strings.Cut(s[2:], "=")
			switch name {
			case "rcfile", "init-file":
				if !hasVal {
					i++
				}
			case "command": // fish
				if hasVal {
					c.script(val, l, x)
					return
				}
				cmdMode = true
			}
			continue
		}
		for _, r := range s[1:] {
			switch r {
			case 'c':
				cmdMode = cmdMode || s[0] == '-'
			case 's':
				stdinMode = true
			case 'o', 'O':
				if i < len(a) && a[i].k == multi {
					c.denyUnresolvable(a[i].src, "shell option")
					return
				}
				i++
			}
		}
	}
	if i > len(a) {
		i = len(a)
	}
	ops := a[i:]
	switch {
	case cmdMode:
		if len(ops) == 0 {
			return
		}
		if ops[0].k != static {
			c.denyUnresolvable(ops[0].src, "script of "+a[0].base+" -c")
			return
		}
		c.script(ops[0].s, l, x)
	case stdinMode || len(ops) == 0:
		c.stdinScript(a, x, l)
	case ops[0].k == static && isStdinPath(ops[0].s):
		c.stdinScript(a, x, l)
	case ops[0].k != static:
		// bash <(generate) or bash "$f": a script whose name is not known.
		c.denyUnresolvable(ops[0].src, "script file of "+a[0].base)
	}
	// Otherwise a named script file: its content is not part of the command and is not
	// inspected (docs/policy.md).
}

func (c *checker) eval(a []arg, x ctx) {
	if s, ok := c.staticJoin(a[1:], "eval argument"); ok {
		c.script(s, x.lang, x)
	}
}

func (c *checker) source(a []arg, x ctx) {
	if len(a) < 2 {
		return
	}
	switch {
	case a[1].k != static:
		c.denyUnresolvable(a[1].src, "file sourced by "+a[0].s)
	case a[1].k == static && isStdinPath(a[1].s):
		c.stdinScript(a, x, x.lang)
	}
}

func (c *checker) trap(a []arg, x ctx) {
	i := 1
	for i < len(a) && a[i].k == static && strings.HasPrefix(a[i].s, "-") && a[i].s != "-" {
		if a[i].s == "--" {
			i++
			break
		}
		return // -l, -p, -P: only print
	}
	if i >= len(a) {
		return
	}
	if a[i].k != static {
		c.denyUnresolvable(a[i].src, "trap action")
		return
	}
	c.script(a[i].s, x.lang, x)
}

func (c *checker) alias(a []arg, x ctx) {
	for _, w := range a[1:] {
		if w.k != static {
			c.denyUnresolvable(w.src, "alias")
			return
		}
		if _, val, ok := strings.Cut(w.s, "="); ok {
			c.script(val, x.lang, x)
		}
	}
}

func (c *checker) command(a []arg, x ctx) {
	lookup := false
	i, bad := (&opts{}).parse(a, 1, func(name string, _ arg) bool {
		lookup = lookup || name == "v" || name == "V"
		return false
	})
	if lookup && bad < 0 {
		return // command -v/-V only looks the name up
	}
	c.wrapped(a, i, bad, 0, false, x)
}

func (c *checker) env(a []arg, x ctx) {
	var split *arg
	i, bad := (&opts{arg: "uCSP", longArg: set("unset", "chdir", "split-string")}).parse(a, 1,
		func(name string, v arg) bool {
			if name == "S" || name == "split-string" {
				split = &v
				return true
			}
			return false
		})
	if bad >= 0 || split == nil {
		c.wrapped(a, i, bad, 0, true, x)
		return
	}
	// env -S 'prog args' rest...: the string is split into words (with quoting) before rest.
	if split.k != static {
		c.denyUnresolvable(split.src, "env -S string")
		return
	}
	words, ok := c.splitWords(split.s, x)
	if !ok {
		return
	}
	c.wrapped(append(append([]arg{a[0]}, words...), a[i:]...), 1, -1, 0, true, x)
}

// splitWords splits s into shell words the way env -S and git aliases do (quotes honoured).
func (c *checker) splitWords(s string, x ctx) ([]arg, bool) {
	f, err := parse(s, langSh)
	if err != nil {
		c.denyNet(s, "command string cannot be parsed: "+err.Error())
		return nil, false
	}
	var out []arg
	for _, st := range f.Stmts {
		ce, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(f.Stmts) != 1 || len(st.Redirs) > 0 || st.Negated || st.Background {
			// Not a plain word list: inspect it as the script it would be if a shell ran it,
			// and stop there.
			c.script(s, langSh, x)
			return nil, false
		}
		c.walk(ce, x, s)
		for _, as := range ce.Assigns {
			out = append(out, arg{s: srcOf(s, as), k: single, src: srcOf(s, as)})
		}
		out = append(out, c.resolveWords(ce.Args, s)...)
	}
	return out, !c.denied
}

func (c *checker) xargs(a []arg, x ctx) {
	replace, argFile := "", false
	i, bad := (&opts{arg: "adEILnPs", optArg: "eil", longArg: set("arg-file", "delimiter",
		"max-lines", "max-args", "max-procs", "max-chars", "process-slot-var")}).parse(a, 1,
		func(name string, v arg) bool {
			switch name {
			case "a", "arg-file":
				argFile = true
			case "I":
				replace = v.s
			case "i", "replace":
				replace = v.s
				if replace == "" {
					replace = "{}"
				}
			}
			return false
		})
	if bad >= 0 {
		c.wrapped(a, i, bad, 0, false, x)
		return
	}
	cmd := append([]arg(nil), a[i:]...)
	if len(cmd) == 0 {
		return // echo
	}
	if replace != "" {
		markReplaced(cmd, replace)
	} else {
		cmd = append(cmd, arg{s: dyn, k: multi, src: "(input of xargs)"})
	}
	// xargs gives the command /dev/null as stdin, unless it reads its input from -a FILE.
	if argFile {
		c.argv(cmd, x)
		return
	}
	c.argv(cmd, ctx{lang: x.lang, stdin: stdinDoc})
}

// markReplaced makes every word holding the replace string unknown (it is filled from input).
func markReplaced(a []arg, replace string) {
	for j := range a {
		if a[j].k == static && strings.Contains(a[j].s, replace) {
			a[j] = arg{s: dyn, k: single, src: a[j].src}
		}
	}
}

func (c *checker) find(a []arg, x ctx) {
	for i := 1; i < len(a); i++ {
		w := a[i]
		if w.k == multi {
			c.denyUnresolvable(w.src, "find argument")
			return
		}
		if w.k != static {
			continue
		}
		switch w.s {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(a) && !(a[j].k == static && (a[j].s == ";" || a[j].s == "+")) {
				j++
			}
			cmd := append([]arg(nil), a[i+1:j]...)
			markReplaced(cmd, "{}")
			c.argv(cmd, x)
			if c.denied {
				return
			}
			i = j
		}
	}
}

func (c *checker) watch(a []arg, x ctx) {
	exec := false
	i, bad := (&opts{arg: "n", longArg: set("interval")}).parse(a, 1, func(name string, _ arg) bool {
		exec = exec || name == "x" || name == "exec"
		return false
	})
	switch {
	case bad >= 0 || exec:
		c.wrapped(a, i, bad, 0, false, x)
	default:
		if s, ok := c.staticJoin(a[i:], "watch command"); ok {
			c.script(s, langSh, x)
		}
	}
}

func (c *checker) flock(a []arg, x ctx) {
	cmdMode := false
	i, bad := (&opts{arg: "wEc", longArg: set("timeout", "conflict-exit-code", "command")}).parse(a, 1,
		func(name string, v arg) bool {
			if name == "c" || name == "command" {
				cmdMode = true
				c.scriptArg(v, "flock -c command", x)
			}
			return false
		})
	if cmdMode || c.denied {
		return
	}
	// flock LOCKFILE -c 'cmd' puts the option after the lock file.
	if bad < 0 && i+2 < len(a)+1 && i+1 < len(a) && a[i+1].k == static && (a[i+1].s == "-c" || a[i+1].s == "--command") {
		if i+2 < len(a) {
			c.scriptArg(a[i+2], "flock -c command", x)
		}
		return
	}
	c.wrapped(a, i, bad, 1, false, x)
}

// scriptArg inspects a word that a program runs with sh -c.
func (c *checker) scriptArg(v arg, what string, x ctx) {
	if v.k != static {
		c.denyUnresolvable(v.src, what)
		return
	}
	c.script(v.s, langSh, x)
}

// su and runuser: -c/--command is a script, -s/--shell a program, runuser -u user runs argv.
func (c *checker) su(a []arg, x ctx) {
	userMode := false
	i, bad := (&opts{arg: "cgGsuwC", longArg: set("command", "session-command", "group", "supp-group",
		"shell", "user", "whitelist-environment")}).parse(a, 1, func(name string, v arg) bool {
		switch name {
		case "c", "command", "session-command":
			c.scriptArg(v, a[0].base+" command", x)
		case "s", "shell":
			c.argv([]arg{v}, x)
		case "u", "user":
			userMode = a[0].base == "runuser"
		}
		return false
	})
	if c.denied {
		return
	}
	if bad >= 0 {
		c.wrapped(a, i, bad, 0, false, x)
		return
	}
	if userMode {
		c.argv(a[i:], x)
		return
	}
	// su USER -c CMD: options may follow the user name.
	for j := i; j+1 < len(a); j++ {
		if a[j].k == static && (a[j].s == "-c" || a[j].s == "--command" || a[j].s == "--session-command") {
			c.scriptArg(a[j+1], a[0].base+" command", x)
			return
		}
	}
}

func (c *checker) scriptCmd(a []arg, x ctx) {
	(&opts{arg: "cEIOTt", longArg: set("command", "echo", "log-in", "log-out", "log-timing", "log-io",
		"logging-format", "output-limit")}).parse(a, 1, func(name string, v arg) bool {
		if name == "c" || name == "command" {
			c.scriptArg(v, "script -c command", x)
		}
		return false
	})
}

// rg --pre COMMAND runs COMMAND for every file searched.
func (c *checker) rg(a []arg, x ctx) {
	for i := 1; i < len(a); i++ {
		w := a[i]
		if w.k != static {
			continue
		}
		if v, ok := strings.CutPrefix(w.s, "--pre="); ok {
			c.argv([]arg{lit(v), {s: dyn, k: single}}, x)
		} else if w.s == "--pre" && i+1 < len(a) {
			c.argv([]arg{a[i+1], {s: dyn, k: single}}, x)
			i++
		}
		if w.s == "--" {
			return
		}
	}
}

func (c *checker) busybox(a []arg, x ctx) {
	if len(a) > 1 && a[1].k == static && strings.HasPrefix(a[1].s, "-") {
		return // --list, --install, --help
	}
	c.argv(a[1:], x)
}

func (c *checker) openssl(a []arg, x ctx) {
	if len(a) < 2 {
		return
	}
	if a[1].k != static {
		c.denyUnresolvable(a[1].src, "openssl command")
		return
	}
	switch a[1].s {
	case "s_client", "s_time", "ocsp":
		c.denyNet("openssl "+a[1].s, "openssl "+a[1].s+" is a network client")
	}
}

func (c *checker) parallel(a []arg, _ ctx) {
	c.denyNet(a[0].src, "parallel runs commands built from its input, which cannot be inspected")
}

func (c *checker) golang(a []arg, _ ctx) {
	i := 1
	if i < len(a) && a[i].k == static && a[i].s == "-C" {
		i += 2
	} else if i < len(a) && a[i].k == static && strings.HasPrefix(a[i].s, "-C=") {
		i++
	}
	if i >= len(a) {
		return
	}
	if a[i].k != static {
		c.denyUnresolvable(a[i].src, "go subcommand")
		return
	}
	sub := a[i].s
	switch sub {
	case "get", "install":
		c.denyNet("go "+sub, "go "+sub+" downloads modules")
	case "mod":
		for _, w := range a[i+1:] {
			if w.k != static {
				c.denyUnresolvable(w.src, "go mod subcommand")
				return
			}
			if !strings.HasPrefix(w.s, "-") {
				if w.s == "download" {
					c.denyNet("go mod download", "go mod download downloads modules")
				}
				return
			}
		}
	}
}

func (c *checker) python(a []arg, _ ctx) {
	_, bad := (&opts{arg: "cmWX", longArg: set("check-hash-based-pycs")}).parse(a, 1,
		func(name string, v arg) bool {
			switch name {
			case "c":
				return true
			case "m":
				if v.k != static {
					c.denyUnresolvable(v.src, "python module")
				} else if pythonPackageModules[v.s] || strings.HasPrefix(v.s, "pip.") {
					c.denyNet("-m "+v.s, "python -m "+v.s+" is a package manager")
				}
				return true
			}
			return false
		})
	if bad >= 0 {
		c.denyUnresolvable(a[bad].src, "python option")
	}
}

// hash -p PATH NAME makes NAME run PATH.
func (c *checker) hash(a []arg, x ctx) {
	(&opts{arg: "p"}).parse(a, 1, func(name string, v arg) bool {
		if name == "p" {
			c.argv([]arg{v}, x)
		}
		return false
	})
}

// tarCommandOpts are tar options whose value is a command tar runs.
var tarCommandOpts = set("to-command", "use-compress-program", "info-script", "new-volume-script")

func (c *checker) tar(a []arg, x ctx) {
	for i := 1; i < len(a) && !c.denied; i++ {
		w := a[i]
		if w.k != static {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(w.s, "--"), "=")
		switch {
		case strings.HasPrefix(w.s, "--") && tarCommandOpts[name]:
			if !hasVal && i+1 < len(a) {
				i++
				c.scriptArg(a[i], "tar --"+name, x)
			} else {
				c.script(val, langSh, x)
			}
		case strings.HasPrefix(w.s, "--checkpoint-action="):
			if cmd, ok := strings.CutPrefix(strings.TrimPrefix(w.s, "--checkpoint-action="), "exec="); ok {
				c.script(cmd, langSh, x)
			}
		case (w.s == "-I" || w.s == "-F") && i+1 < len(a):
			i++
			c.scriptArg(a[i], "tar "+w.s, x)
		}
	}
}
