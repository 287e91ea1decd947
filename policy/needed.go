package policy

import "github.com/sandboxer/sandboxer/adapter"

// Needed reports whether command inspection applies to the commands of sb while the network is
// off. It applies wherever a network exists: in an adapter that has none at all
// (adapter.NetVirtual, such as the memory adapter) nothing can be reached, so inspection would
// only refuse scripts that are harmless there, and refuses nothing. A sandbox that does not
// report its capabilities is inspected.
func Needed(sb adapter.Sandbox) bool {
	c, ok := sb.(adapter.Capable)
	return !ok || c.Capabilities().Network != adapter.NetVirtual
}
