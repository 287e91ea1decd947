package oci

import (
	"path/filepath"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// Leftovers is leftovers, for the tests.
var Leftovers = leftovers

// NoJanitor makes the sandboxes this process creates from now on wait for Prune when it dies.
func NoJanitor() { noJanitor = true }

// CgroupFile returns the path of a file of sandbox id's cgroup for a controller (v1), or of the
// v2 file when no v1 hierarchy has the controller; "" when neither exists.
func CgroupFile(id, controller, v1, v2 string) string {
	mounts, _ := cgroupMounts()
	for _, m := range mounts {
		for _, c := range m.controllers {
			if c == controller {
				return filepath.Join(m.dir, cgroupPath(id), v1)
			}
		}
	}
	for _, m := range mounts {
		if m.v2 {
			return filepath.Join(m.dir, cgroupPath(id), v2)
		}
	}
	return ""
}

func AgentStderr(s *Sandbox) string {
	a := s.agent.Current()
	if a == nil {
		return "<no agent>"
	}
	return a.stderr.String()
}

// UseAgent makes c the handle's agent stream in place of the real one (a test's hostile agent);
// the returned function closes the real one.
func UseAgent(s *Sandbox, c *agent.Client) func() {
	return s.agent.Set(&agentConn{Client: c, stderr: newHeadBuffer(1024)})
}
