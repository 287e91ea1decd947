package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/adapter/agent"
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
	var fromRootfs, fromDockerfile, buildContext string
	var changes, buildArgs []string
	build := &cobra.Command{
		Use:   "build [--tag TAG] [--force] | --from-rootfs DIR|TARBALL --tag TAG | --from-dockerfile PATH [--context DIR] --tag TAG",
		Short: "Build a sandbox image locally: the default one from the host's busybox-static and ripgrep, or one from a root file system or a Dockerfile",
		Long: `Without --from-*: assemble a root file system from the host's statically linked busybox and
ripgrep (with the shared libraries it needs) and the sandbox agent (compiled from the embedded
source with the Go toolchain, statically linked) and import it into the Docker daemon as --tag
(default ` + image.DefaultTag + `). The build is deterministic and skipped when the tagged image
already has the same content (--force rebuilds).

--from-rootfs DIR|TARBALL imports a root file system (a directory, or a tar file: plain, gzip
or bzip2) as --tag, with the agent added at ` + agent.Path + `;
--change INSTR sets its configuration as docker import's (ENV PATH=..., USER, WORKDIR). Skipped
when the tagged image has the same content hash.

--from-dockerfile PATH builds the Dockerfile with the daemon (the context: --context, default the
Dockerfile's directory, .dockerignore honoured; --build-arg KEY=VALUE), then adds the agent as a
layer on top. Its FROM images must be in the daemon: no registry is contacted. The image keeps the
Dockerfile's user, PATH and environment.

Both need --tag, and refuse a tag that names an image sandboxer did not build unless --force.
No registry is contacted. Prints {"tag","id","contentHash","built"} as JSON.`,
		Args: exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			tag, _ := c.Flags().GetString("tag")
			if fromRootfs != "" || fromDockerfile != "" {
				if !c.Flags().Changed("tag") {
					return usage(fmt.Errorf("image build: --from-rootfs and --from-dockerfile need --tag (a tag of their own, not %s)", image.DefaultTag))
				}
				for _, f := range []string{"busybox", "rg", "no-agent"} {
					if c.Flags().Changed(f) {
						return usage(fmt.Errorf("image build: --%s is an option of the default image, not of --from-rootfs or --from-dockerfile", f))
					}
				}
			}
			if len(changes) > 0 && fromRootfs == "" {
				return usage(fmt.Errorf("image build: --change goes with --from-rootfs"))
			}
			if (buildContext != "" || len(buildArgs) > 0) && fromDockerfile == "" {
				return usage(fmt.Errorf("image build: --context and --build-arg go with --from-dockerfile"))
			}
			status := progress.Status(std.Err)
			defer status("")
			res, err := image.Build(c.Context(), image.Options{
				Tag: tag, Force: force, Busybox: busybox, Ripgrep: rg, Agent: agentPath, NoAgent: noAgent,
				FromRootfs: fromRootfs, Changes: changes, FromDockerfile: fromDockerfile, Context: buildContext, BuildArgs: buildArgs,
				Progress: func(msg string) { status(msg) },
			})
			if err != nil {
				return err
			}
			return printJSON(std, map[string]any{"tag": res.Tag, "id": res.ID, "contentHash": res.ContentHash, "built": res.Built})
		}),
	}
	build.Flags().String("tag", image.DefaultTag, "image tag")
	build.Flags().BoolVar(&force, "force", false, "rebuild even when the image is up to date (--from-*: also replace an image sandboxer did not build)")
	build.Flags().StringVar(&busybox, "busybox", "", "path of a static busybox (default /bin/busybox)")
	build.Flags().StringVar(&rg, "rg", "", "path of ripgrep (default: rg on PATH)")
	build.Flags().StringVar(&agentPath, "agent", "", "path of a prebuilt static sandboxer-agent (default: compile it with the go toolchain)")
	build.Flags().BoolVar(&noAgent, "no-agent", false, "leave the agent out: every call is then a daemon exec")
	build.Flags().StringVar(&fromRootfs, "from-rootfs", "", "build from a root file system: a directory or a tar file (plain, gzip, bzip2)")
	build.Flags().StringArrayVar(&changes, "change", nil, "with --from-rootfs: a Dockerfile instruction for the image's configuration, as docker import -c (repeatable)")
	build.Flags().StringVar(&fromDockerfile, "from-dockerfile", "", "build from a Dockerfile whose FROM images are in the daemon")
	build.Flags().StringVar(&buildContext, "context", "", "with --from-dockerfile: the build context directory (default: the Dockerfile's directory)")
	build.Flags().StringArrayVar(&buildArgs, "build-arg", nil, "with --from-dockerfile: a build argument KEY=VALUE (repeatable)")
	build.MarkFlagsMutuallyExclusive("from-rootfs", "from-dockerfile")
	c.AddCommand(build)
	return c
}
