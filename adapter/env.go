package adapter

import "strings"

// ImageEnv is the environment of a container whose image sets imageEnv (any image: its PATH, say
// /usr/local/go/bin in a Go image): base, then what the image sets, a variable the image sets
// winning over base's, except HOME, which stays base's (DefaultHome: an image's is usually
// root's, which the sandbox user cannot write).
func ImageEnv(base, imageEnv []string) []string {
	set := map[string]bool{"HOME": true}
	var fromImage []string
	for _, e := range imageEnv {
		if k, _, _ := strings.Cut(e, "="); !set[k] {
			set[k] = true
			fromImage = append(fromImage, e)
		}
	}
	var env []string
	for _, e := range base {
		if k, _, _ := strings.Cut(e, "="); k == "HOME" || !set[k] {
			env = append(env, e)
		}
	}
	return append(env, fromImage...)
}

// WorkspaceHome is env with HOME the workspace: the environment of commands in a container made
// before commands had a HOME of their own (DefaultHome), which has nothing at that path. An
// attached handle of such a container gives its commands the HOME they had.
func WorkspaceHome(env []string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		if !strings.HasPrefix(e, "HOME=") {
			out = append(out, e)
		}
	}
	return append(out, "HOME="+DefaultWorkspace)
}
