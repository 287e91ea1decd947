package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// newSandboxNetworkCmd shows or replaces a long-lived sandbox's network policy (issue 37).
func newSandboxNetworkCmd(std Streams) *cobra.Command {
	var none bool
	c := &cobra.Command{
		Use:   "network ID [--allow-host HOST]... [--secret NAME=SOURCE]... [--inject RULE]... | --none",
		Short: "Show or change a long-lived sandbox's network: its allowed hosts, rules and secrets, live",
		Long: `Without flags, print the sandbox's network policy as JSON (secrets by name and source, never
a value). With --allow-host, --secret and --inject, replace it (the whole policy: give every host
that stays); with --none, cut the network. Calls on the sandbox that name no network of their own
take the policy; the ones running now apply it within a quarter of a second to new requests, and
close the tunnels and downloads to hosts it no longer allows. The secrets are read here, to check
them, and again by each process that uses the sandbox (an env: source must be in its environment
too; where it is not, that process cuts the sandbox's network rather than guess).`,
		Args: exactArgs(1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			mgr := lifecycle.NewManager(s.StateDir)
			f := c.Flags()
			change := f.Changed(flagAllowHost) || f.Changed(flagSecret) || f.Changed(flagInject)
			if none && change {
				return usage(fmt.Errorf("--none and --%s, --%s or --%s exclude each other", flagAllowHost, flagSecret, flagInject))
			}
			var rec lifecycle.Record
			if !change && !none {
				rec, err = mgr.Get(args[0])
			} else {
				var n *lifecycle.Network // --none
				if change {
					n = lifecycle.NetworkOf(optionsOf(s))
				}
				rec, err = mgr.SetNetwork(args[0], n, s.inv.lookupEnv)
			}
			switch {
			case errors.Is(err, errs.NotFound):
				return errs.New(errs.SandboxUnavailable, "sandbox", "", "no sandbox %q in %s (see sandboxer sandbox ls)", args[0], s.StateDir)
			case errors.Is(err, errs.InvalidInput), errors.Is(err, lifecycle.ErrNoNetwork):
				return usage(inCLIWords(err))
			case err != nil:
				return err
			}
			view := rec.Network
			if view == nil {
				view = &lifecycle.Network{AllowHosts: []string{}}
			}
			return printJSON(std, map[string]any{"id": rec.ID, "network": view})
		}),
	}
	addStateFlags(c)
	f := c.Flags()
	f.StringArray(flagAllowHost, nil, "a host the sandbox's commands may reach (modules.example.com, *.suffix), with rules if any: 'api.example.com GET,POST /v1/'; repeatable")
	addSecretFlags(f)
	f.BoolVar(&none, "none", false, "cut the sandbox's network: no host at all")
	return c
}
