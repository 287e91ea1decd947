package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/internal/ui"
)

func newUICmd(std Streams) *cobra.Command {
	var listen string
	var open bool
	c := &cobra.Command{
		Use:   "ui [--journal PATH] [--listen 127.0.0.1:0] [--open]",
		Short: "Browse the tool-call journal in a local web page",
		Long: `Serve a web page over the journal (read-only): its runs, each run's tasks and calls on a
timeline, every call's input, output, error, retry warning, egress decisions and receipt, search
and filters, and new calls as they are recorded. It listens on a loopback address only and prints
the URL to open, which carries a random token: a request without it gets 403. It runs until
interrupted. See docs/ui.md.`,
		Args: exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			if err := ui.CheckListen(listen); err != nil {
				return usage(err)
			}
			if s.Journal == "" {
				return usage(errors.New("ui: the journal is off (--journal off)"))
			}
			if _, err := os.Stat(s.Journal); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("no journal at %s", s.Journal)
			}
			srv, err := ui.New(c.Context(), s.Journal)
			if err != nil {
				return err
			}
			defer srv.Close()
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			url := srv.URL(l)
			fmt.Fprintln(std.Out, url)
			if open {
				openBrowser(std, url)
			}
			return srv.Serve(c.Context(), l)
		}),
	}
	c.Flags().String("config", "", configFlagUsage)
	c.Flags().String(keyJournal, "", "journal path (default STATE_DIR/journal.db)")
	c.Flags().String(keyStateDir, "", "state directory (default $XDG_STATE_HOME/sandboxer or ~/.local/state/sandboxer)")
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address to listen on (port 0: any free port)")
	c.Flags().BoolVar(&open, "open", false, "open the page in the default browser")
	return c
}

// openBrowser starts the desktop's opener on url; a failure is only a note: the URL is printed.
func openBrowser(std Streams, url string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(std.Err, "sandboxer: cannot open a browser (%v): open the URL above\n", err)
		return
	}
	go cmd.Wait()
}
