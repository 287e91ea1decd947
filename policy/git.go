package policy

import (
	"strings"

	"github.com/sandboxer/sandboxer/errs"
)

// gitRemote are the git subcommands that talk to a remote.
var gitRemote = set(
	"push", "pull", "fetch", "clone", "remote", "ls-remote", "fetch-pack", "send-pack",
	"http-fetch", "http-push", "send-email", "request-pull", "svn", "p4", "cvsimport",
	"archimport", "backfill",
)

// gitLocal are the builtin git subcommands that do not talk to a remote by themselves. Any
// other subcommand is denied: it may be an alias (git p = push) or an extension (git lfs).
// Builtins cannot be aliased, so this list cannot be redirected by configuration.
var gitLocal = set(
	"add", "am", "annotate", "apply", "archive", "bisect", "blame", "branch", "bugreport", "bundle",
	"cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout",
	"checkout-index", "cherry", "cherry-pick", "citool", "clean", "column", "commit",
	"commit-graph", "commit-tree", "config", "count-objects", "credential", "describe", "diagnose",
	"diff", "diff-files", "diff-index", "diff-tree", "difftool", "fast-export", "fast-import",
	"filter-branch", "fmt-merge-msg", "for-each-ref", "format-patch", "fsck", "fsck-objects",
	"gc", "get-tar-commit-id", "grep", "gui", "hash-object", "help", "hook", "index-pack", "init",
	"init-db", "interpret-trailers", "log", "ls-files", "ls-tree", "mailinfo", "mailsplit",
	"maintenance", "merge", "merge-base", "merge-file", "merge-index", "merge-one-file",
	"merge-tree", "mergetool", "mktag", "mktree", "multi-pack-index", "mv", "name-rev", "notes",
	"pack-objects", "pack-redundant", "pack-refs", "patch-id", "prune", "prune-packed",
	"range-diff", "read-tree", "rebase", "reflog", "refs", "repack", "replace", "replay",
	"rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm", "shortlog", "show",
	"show-branch", "show-index", "show-ref", "sparse-checkout", "stage", "stash", "status",
	"stripspace", "submodule", "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects",
	"update-index", "update-ref", "update-server-info", "var", "verify-commit", "verify-pack",
	"verify-tag", "version", "whatchanged", "worktree", "write-tree",
)

// gitOptsWithValue are git's global options that take the next word as their value.
var gitOptsWithValue = set("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
	"--config-env", "--exec-path", "--attr-source", "--list-cmds")

func (c *checker) denyGit(sub, reason string) {
	c.deny(errs.GitRemoteDisabled, "git "+sub, reason)
}

func (c *checker) git(a []arg, x ctx) {
	i := 1
	for i < len(a) {
		w := a[i]
		if w.k != static {
			c.denyUnresolvable(w.src, "git argument")
			return
		}
		if !strings.HasPrefix(w.s, "-") {
			break
		}
		name, val, hasVal := strings.Cut(w.s, "=")
		if !hasVal && gitOptsWithValue[name] && name != "--exec-path" {
			if i+1 >= len(a) {
				return
			}
			if a[i+1].k == multi || a[i+1].k != static && name == "-c" {
				c.denyUnresolvable(a[i+1].src, "git -c setting")
				return
			}
			val = a[i+1].s
			i++
		}
		if name == "-c" {
			k, v, _ := strings.Cut(val, "=")
			c.gitConfig(k, v, x)
		}
		if name == "--config-env" {
			k, _, _ := strings.Cut(val, "=")
			if gitCommandKey(k) {
				c.denyUnresolvable(val, "git --config-env command setting")
			}
		}
		if c.denied {
			return
		}
		i++
	}
	if i >= len(a) {
		return // git --version, git -h
	}
	sub, rest := a[i].s, a[i+1:]
	switch {
	case gitRemote[sub] || strings.HasPrefix(sub, "remote-"):
		c.denyGit(sub, "git "+sub+" talks to a remote")
		if c.allowMode {
			c.gitSSHRemotes(rest)
		}
	case !gitLocal[sub]:
		c.denyGit(sub, "git "+sub+" is not a known local git command (it may be an alias or extension)")
	case sub == "submodule":
		c.gitSubmodule(rest, x)
	case sub == "archive":
		for _, w := range rest {
			if w.k == static && (w.s == "--remote" || strings.HasPrefix(w.s, "--remote=")) {
				c.denyGit("archive --remote", "git archive --remote talks to a remote")
			}
		}
	case sub == "maintenance":
		for _, w := range rest {
			if w.k == static && (strings.Contains(w.s, "prefetch") || strings.HasPrefix(w.s, "--schedule")) {
				c.denyGit("maintenance "+w.s, "git maintenance prefetch fetches from remotes")
			}
		}
	case sub == "rebase":
		c.gitScriptOpt(rest, x, "x", "exec")
	case sub == "difftool" || sub == "mergetool":
		c.gitScriptOpt(rest, x, "x", "extcmd")
	case sub == "filter-branch":
		for j := 0; j+1 < len(rest); j++ {
			if rest[j].k == static && strings.HasPrefix(rest[j].s, "--") &&
				(strings.HasSuffix(rest[j].s, "-filter") || rest[j].s == "--setup") {
				c.scriptArg(rest[j+1], "git filter-branch "+rest[j].s, x)
				j++
			}
		}
	case sub == "bisect":
		if len(rest) > 0 && rest[0].k == static && rest[0].s == "run" {
			c.argv(rest[1:], x)
		}
	case sub == "config":
		c.gitConfigCmd(rest, x)
	}
}

// gitScriptOpt inspects the values of options that git runs as shell commands (rebase -x).
func (c *checker) gitScriptOpt(rest []arg, x ctx, short, long string) {
	for j := 0; j < len(rest) && !c.denied; j++ {
		w := rest[j]
		if w.k == multi {
			c.denyUnresolvable(w.src, "git argument")
			return
		}
		if w.k != static {
			continue
		}
		switch {
		case w.s == "-"+short || w.s == "--"+long:
			if j+1 < len(rest) {
				c.scriptArg(rest[j+1], "git --"+long+" command", x)
				j++
			}
		case strings.HasPrefix(w.s, "--"+long+"="):
			c.script(w.s[len(long)+3:], langSh, x)
		case strings.HasPrefix(w.s, "-"+short) && !strings.HasPrefix(w.s, "--"):
			c.script(w.s[2:], langSh, x)
		}
	}
}

func (c *checker) gitSubmodule(rest []arg, x ctx) {
	for j, w := range rest {
		if w.k != static {
			c.denyUnresolvable(w.src, "git submodule subcommand")
			return
		}
		if strings.HasPrefix(w.s, "-") {
			continue
		}
		switch w.s {
		case "update", "add", "sync":
			if w.s == "sync" {
				return // only rewrites configuration
			}
			c.denyGit("submodule "+w.s, "git submodule "+w.s+" fetches from remotes")
		case "foreach":
			k := j + 1
			for k < len(rest) && rest[k].k == static && strings.HasPrefix(rest[k].s, "-") {
				k++
			}
			if s, ok := c.staticJoin(rest[k:], "git submodule foreach command"); ok {
				c.script(s, langSh, x)
			}
		}
		return
	}
	// Bare `git submodule` lists (status).
}

// gitConfigCmd inspects `git config [opts] [set] KEY VALUE` for settings that run commands.
func (c *checker) gitConfigCmd(rest []arg, x ctx) {
	valueOpts := set("-f", "--file", "--blob", "--type", "--default", "--comment", "--value")
	for j := 0; j < len(rest); j++ {
		w := rest[j]
		if w.k != static {
			c.denyUnresolvable(w.src, "git config argument")
			return
		}
		if valueOpts[w.s] {
			j++
			continue
		}
		if strings.HasPrefix(w.s, "-") || !strings.Contains(w.s, ".") {
			continue // options and subcommands (set, get, --add, ...)
		}
		if j+1 < len(rest) {
			if gitCommandKey(w.s) && rest[j+1].k != static {
				c.denyUnresolvable(rest[j+1].src, "git config "+w.s+" value")
				return
			}
			c.gitConfig(w.s, rest[j+1].s, x)
		}
		return
	}
}

// gitCommandKey reports whether a git configuration key holds a command (or includes a file
// that could set one).
func gitCommandKey(key string) bool {
	k := strings.ToLower(key)
	if strings.HasPrefix(k, "alias.") || strings.HasPrefix(k, "pager.") ||
		k == "include.path" || strings.HasPrefix(k, "includeif.") {
		return true
	}
	switch k {
	case "core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.askpass",
		"core.gitproxy", "core.hookspath", "sequence.editor", "credential.helper", "diff.external",
		"gpg.program", "interactive.difffilter", "uploadpack.packobjectshook", "web.browser",
		"sendemail.smtpserver":
		return true
	}
	last := k[strings.LastIndexByte(k, '.')+1:]
	switch last {
	case "textconv", "command", "driver", "clean", "smudge", "process", "cmd", "helper", "program",
		"receivepack", "uploadpack", "sshcommand":
		return true
	}
	return false
}

// gitConfig inspects one configuration setting given on the command line.
func (c *checker) gitConfig(key, val string, x ctx) {
	if !gitCommandKey(key) {
		return
	}
	k := strings.ToLower(key)
	switch {
	case strings.HasPrefix(k, "alias."):
		if script, ok := strings.CutPrefix(val, "!"); ok {
			c.script(script, langSh, x)
			return
		}
		words, ok := c.splitWords(val, x)
		if ok {
			c.git(append([]arg{{s: "git", src: "git", base: "git"}}, words...), x)
		}
	case k == "include.path" || strings.HasPrefix(k, "includeif.") || k == "core.hookspath":
		c.denyNet(key, "git setting "+key+" runs or includes files that cannot be inspected")
	case strings.HasPrefix(k, "pager.") && (val == "" || isGitBool(val)):
	case strings.HasSuffix(k, "helper") && !strings.HasPrefix(val, "!") && !strings.Contains(val, "/") && !strings.Contains(val, " "):
		// credential.helper=store runs git-credential-store, a local builtin helper
	default:
		c.script(strings.TrimPrefix(val, "!"), langSh, x)
	}
}

func isGitBool(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

// gitSSHRemotes denies, with an allowlist, a git remote in scp form (user@host:path): ssh does not
// go through the egress proxy. URL remotes (https://, ssh://) are checked as every URL is.
func (c *checker) gitSSHRemotes(rest []arg) {
	for _, w := range rest {
		if w.k != static || strings.Contains(w.s, "://") {
			continue
		}
		at := strings.IndexByte(w.s, '@')
		colon := strings.IndexByte(w.s, ':')
		slash := strings.IndexByte(w.s, '/')
		if at <= 0 || colon < at || (slash >= 0 && slash < colon) {
			continue
		}
		host := w.s[at+1 : colon]
		if host == "" || hostIsLoopback(host) {
			continue
		}
		c.denyHost(w.s, host, "git remote "+quoteSrc(w.s)+" is reached over ssh, which does not go through the egress proxy: use an https:// remote of an allowed host")
		return
	}
}
