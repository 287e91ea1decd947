package docker

import "github.com/sandboxer/sandboxer/adapter/agent"

// UseAgent makes c the handle's agent stream in place of the real one (a test's hostile agent);
// the returned function closes the real one.
func UseAgent(s *Sandbox, c *agent.Client) func() {
	s.amu.Lock()
	defer s.amu.Unlock()
	old := s.agent
	s.agent = &agentConn{Client: c, stderr: &headBuffer{n: 1024}}
	return func() {
		if old != nil {
			old.Close()
		}
	}
}
