//go:build !linux

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// newServerCmd: the resident server is Linux's only (the front runs every call in a process of
// its own elsewhere).
func newServerCmd(std Streams) *cobra.Command {
	return &cobra.Command{Use: "server", Hidden: true, RunE: runE(func(*cobra.Command, []string) error {
		return errors.New("server: only on Linux")
	})}
}
