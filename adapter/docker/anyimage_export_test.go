package docker

// AgentBin is where s's agent is in its container ("" for none).
func AgentBin(s *Sandbox) string {
	if !s.hasAgent() {
		return ""
	}
	return s.agentPath()
}
