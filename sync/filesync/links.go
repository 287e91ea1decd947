package filesync

import (
	"strings"
)

// maxLinkHops bounds the symbolic links one resolution follows, as the kernel does (ELOOP).
const maxLinkHops = 40

// LinkInside reports whether a symbolic link at linkPath (a clean workspace path) whose target
// text is target stays inside the workspace when resolved the way the kernel resolves it: the
// link's own parent directories and every component of the target are followed through links
// (path to target text, workspace-relative paths), ".." steps back from where the walk really
// is, not from the text. It is false for an absolute target, for any step above the workspace
// root, for a chain that leaves through another link, and for a loop (more than 40 links). A
// dangling target inside the workspace is inside. Components that are not in links are taken
// as directories or files of the workspace.
func LinkInside(linkPath, target string, links map[string]string) bool {
	if target == "" || target[0] == '/' {
		return false
	}
	var todo []string // components still to resolve, in order
	if i := strings.LastIndexByte(linkPath, '/'); i >= 0 {
		todo = append(todo, strings.Split(linkPath[:i], "/")...)
	}
	todo = append(todo, strings.Split(target, "/")...)
	var cur []string // the resolved path so far, every component a directory (or the last a file)
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return false
			}
			cur = cur[:len(cur)-1]
			continue
		}
		p := c
		if len(cur) > 0 {
			p = strings.Join(cur, "/") + "/" + c
		}
		t, isLink := links[p]
		if !isLink {
			cur = append(cur, c)
			continue
		}
		if hops++; hops > maxLinkHops || t == "" || t[0] == '/' {
			return false
		}
		todo = append(strings.Split(t, "/"), todo...)
	}
	return true
}
