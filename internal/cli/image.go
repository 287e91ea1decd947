package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/internal/progress"
)

func newImageCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Manage the docker adapter's image",
		Args:  exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return usage(fmt.Errorf("image: want a subcommand: build"))
		},
	}
	var force bool
	var busybox, rg, agentPath string
	var noAgent bool
	build := &cobra.Command{
		Use:   "build [--tag TAG] [--force]",
		Short: "Build the default sandbox image locally from the host's busybox-static and ripgrep",
		Long: `Assemble a root file system from the host's statically linked busybox and ripgrep (with the
shared libraries it needs) and the sandbox agent (compiled from the embedded source with the Go
toolchain, statically linked) and import it into the Docker daemon as --tag (default ` + image.DefaultTag + `).
No registry is contacted. The build is deterministic and skipped when the tagged image already
has the same content (--force rebuilds). Prints {"tag","id","contentHash","built"} as JSON.`,
		Args: exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			tag, _ := c.Flags().GetString("tag")
			status := progress.Status(std.Err)
			defer status("")
			res, err := image.Build(c.Context(), image.Options{
				Tag: tag, Force: force, Busybox: busybox, Ripgrep: rg, Agent: agentPath, NoAgent: noAgent,
				Progress: func(msg string) { status(msg) },
			})
			if err != nil {
				return err
			}
			return printJSON(std, map[string]any{"tag": res.Tag, "id": res.ID, "contentHash": res.ContentHash, "built": res.Built})
		}),
	}
	build.Flags().String("tag", image.DefaultTag, "image tag")
	build.Flags().BoolVar(&force, "force", false, "rebuild even when the image is up to date")
	build.Flags().StringVar(&busybox, "busybox", "", "path of a static busybox (default /bin/busybox)")
	build.Flags().StringVar(&rg, "rg", "", "path of ripgrep (default: rg on PATH)")
	build.Flags().StringVar(&agentPath, "agent", "", "path of a prebuilt static sandboxer-agent (default: compile it with the go toolchain)")
	build.Flags().BoolVar(&noAgent, "no-agent", false, "leave the agent out: every call is then a daemon exec")
	c.AddCommand(build)
	return c
}
