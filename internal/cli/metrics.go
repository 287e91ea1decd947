package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxer/sandboxer/internal/telemetry"
)

// flagMetricsListen is the flag of the long-running commands (mcp, serve) that serves their
// metrics (internal/telemetry).
const flagMetricsListen = "metrics-listen"

func addMetricsFlag(f *pflag.FlagSet) {
	f.String(flagMetricsListen, "", "serve Prometheus metrics (tool calls, durations, sandboxes, egress decisions) at /metrics on this loopback HOST:PORT (127.0.0.1:9464) or unix:PATH; anything else is refused (docs/observability.md)")
}

// startMetrics serves the command's metrics when --metrics-listen is given, and says where on
// stderr; stop ends it. m is nil without the flag.
func startMetrics(c *cobra.Command, std Streams) (m *telemetry.Metrics, stop func(), err error) {
	listen, _ := c.Flags().GetString(flagMetricsListen)
	if listen == "" {
		return nil, func() {}, nil
	}
	srv, err := telemetry.ServeMetrics(listen)
	if err != nil {
		return nil, nil, usage(err)
	}
	fmt.Fprintf(std.Err, "sandboxer: metrics on %s%s/metrics\n", srv.Addr().Network()+"://", srv.Addr())
	return srv.Metrics, func() { srv.Close() }, nil
}
