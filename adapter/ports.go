package adapter

import (
	"context"
	"net"
)

// The sandbox's own network is reached through two primitives, one mechanism per adapter (the
// isolation helper for local, the sandbox agent for docker and oci): port forwarding dials into the
// sandbox, and the egress proxy listens in it. Both only ever use the sandbox's loopback
// (127.0.0.1): nothing here opens a route between the sandbox and any other network.

// PortForwarder connects to a port on the sandbox's loopback, from the sandboxer process.
type PortForwarder interface {
	// DialPort connects to 127.0.0.1:port inside the sandbox. Errors: errs.InvalidInput (a port
	// outside 1..65535), errs.NotFound (nothing listens there: connection refused),
	// errs.SandboxUnavailable. The connection is the caller's to close; it ends with the sandbox.
	DialPort(ctx context.Context, port int) (net.Conn, error)
}

// PortListener listens on a port of the sandbox's loopback and hands the connections that
// commands make to it to the sandboxer process (the egress proxy's way in).
type PortListener interface {
	// ListenPort listens on 127.0.0.1:port inside the sandbox; each connection a command opens
	// there is returned by the listener's Accept here. Closing the listener stops listening in
	// the sandbox; Stop closes it too. Errors: errs.InvalidInput (a port
	// outside 1..65535, or one already taken inside), errs.SandboxUnavailable.
	ListenPort(ctx context.Context, port int) (net.Listener, error)
}
