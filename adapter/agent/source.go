package agent

import "embed"

// Source holds the agent's source (this package, ring, frames, trustfile and cmd/sandboxer-agent, tests included), so that
// the image build can compile a static agent binary wherever a Go toolchain is found.
//
//go:embed *.go cmd/sandboxer-agent/*.go ring/*.go frames/*.go trustfile/*.go
var Source embed.FS
