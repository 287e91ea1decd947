package remote

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/api"
)

// Pause, resume and the server's file system snapshots (docs/snapshots.md, "Over the API"). The
// snapshots are the server's, in the catalog of the token: a sandbox is created from one with
// Config.Create.FromSnapshot.

var _ adapter.Pauser = (*Sandbox)(nil)

// Pause freezes the sandbox's processes on the server (docker and oci sandboxes: the server's
// adapter.Pauser; errs.InvalidInput for others) until Resume. Meanwhile commands, tool calls and
// processes are refused (errs.SandboxUnavailable with details.paused); files and Snapshot work.
func (s *Sandbox) Pause(ctx context.Context) error { return s.setPaused(ctx, "/pause") }

// Resume lets a paused sandbox's processes go on where they were.
func (s *Sandbox) Resume(ctx context.Context) error { return s.setPaused(ctx, "/resume") }

func (s *Sandbox) setPaused(ctx context.Context, verb string) error {
	if err := s.check(); err != nil {
		return err
	}
	var info api.Sandbox
	if err := s.c.call(ctx, http.MethodPost, s.path(verb), nil, nil, &info); err != nil {
		return err
	}
	s.info = info // as Extend keeps it: Info shows the last answer
	return nil
}

// Snapshot takes a file system snapshot of the sandbox's workspace into the server's catalog
// of the token, as name (also of a paused sandbox). Errors: errs.InvalidInput for a bad name,
// errs.Conflict for a name taken.
func (s *Sandbox) Snapshot(ctx context.Context, name string) (api.Snapshot, error) {
	var snap api.Snapshot
	if err := s.check(); err != nil {
		return snap, err
	}
	err := s.c.call(ctx, http.MethodPost, s.path("/snapshots"), nil, api.SnapshotRequest{Name: name}, &snap)
	return snap, err
}

// Restore puts the token's snapshot name into the sandbox's workspace, verified; replace
// restores over files (what the snapshot does not list is removed), else a workspace with files
// is errs.Conflict. Errors: errs.NotFound for no such snapshot, errs.VerifyFailed (the paths in
// its details) when the workspace does not match the snapshot after.
func (s *Sandbox) Restore(ctx context.Context, name string, replace bool) (api.Restored, error) {
	var out api.Restored
	if err := s.check(); err != nil {
		return out, err
	}
	err := s.c.call(ctx, http.MethodPost, s.path("/restore"), nil, api.RestoreRequest{Snapshot: name, Replace: replace}, &out)
	return out, err
}

// ListSnapshots returns the snapshots of cfg's token on the server, oldest first, those whose
// name starts with prefix ("": all).
func ListSnapshots(ctx context.Context, cfg Config, prefix string) ([]api.Snapshot, error) {
	var l api.SnapshotList
	var q url.Values
	if prefix != "" {
		q = url.Values{"prefix": {prefix}}
	}
	err := once(cfg, func(c *client) error { return c.call(ctx, http.MethodGet, "/snapshots", q, nil, &l) })
	return l.Snapshots, err
}

// DeleteSnapshot deletes the token's snapshot name on the server (errs.NotFound when there is
// none).
func DeleteSnapshot(ctx context.Context, cfg Config, name string) error {
	return once(cfg, func(c *client) error {
		return c.call(ctx, http.MethodDelete, "/snapshots/"+url.PathEscape(name), nil, nil, nil)
	})
}
