// Package deps pins the project's dependencies while the packages that use them are written.
// It is removed once every dependency has a real importer.
package deps

import (
	_ "github.com/bluekeyes/go-gitdiff/gitdiff"
	_ "github.com/containerd/errdefs"
	_ "github.com/landlock-lsm/go-landlock/landlock"
	_ "github.com/moby/moby/api/types/container"
	_ "github.com/moby/moby/client"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/opencontainers/runtime-spec/specs-go"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/stretchr/testify/require"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/tools/txtar"
	_ "modernc.org/sqlite"
	_ "mvdan.cc/sh/v3/expand"
	_ "mvdan.cc/sh/v3/interp"
	_ "mvdan.cc/sh/v3/syntax"
)
