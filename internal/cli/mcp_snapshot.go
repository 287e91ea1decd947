package cli

import (
	"context"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/tools"
)

// The MCP server's snapshot tool: file system snapshots of the session's long-lived sandbox
// (--sandbox ID), in the catalog `sandboxer snapshot` uses (STATE_DIR/snapshots), journaled as
// every call is. MCP has no sandbox lifecycle tools, so no pause either: a sandbox that paused
// itself could not run the call that resumes it.

// snapshotInput is the snapshot tool's input.
type snapshotInput struct {
	Action  string `json:"action" jsonschema:"take, restore, list or delete"`
	Name    string `json:"name,omitempty" jsonschema:"the snapshot (take, restore, delete): 1-128 characters of [A-Za-z0-9._-], not starting with a dot"`
	Replace bool   `json:"replace,omitempty" jsonschema:"restore over the workspace's files: what the snapshot does not list is removed (without it a workspace with files is refused)"`
	Prefix  string `json:"prefix,omitempty" jsonschema:"list: only names starting with this"`
}

// snapshotTool is the snapshot tool of the sandbox id of sess, over cat.
func snapshotTool(cat *snapshot.Catalog, id string) *tools.Tool {
	return tools.MustDefine(tools.Definition[snapshotInput, any]{
		Name: "snapshot",
		Description: "File system snapshots of this sandbox's workspace: take one (name), restore one (name; replace " +
			"to roll back over the files; every restore is verified), list them (prefix), delete one (name).",
		SideEffect: true,
		Execute: func(ctx context.Context, in snapshotInput, tc *tools.Context) (any, error) {
			if in.Action != "list" {
				if err := snapshot.CheckName(in.Name); err != nil {
					return nil, err
				}
			}
			switch in.Action {
			case "take":
				m, err := cat.Take(ctx, tc.Sandbox, in.Name)
				if err != nil {
					return nil, err
				}
				return snapshotOf(m), nil
			case "restore":
				if err := cat.Restore(ctx, in.Name, tc.Sandbox, snapshot.RestoreOptions{Replace: in.Replace}); err != nil {
					return nil, err
				}
				return map[string]string{"restored": in.Name, "id": id}, nil
			case "list":
				list, err := cat.List(ctx, snapshot.Filter{Prefix: in.Prefix})
				if list == nil {
					list = []snapshot.Info{}
				}
				return list, err
			case "delete":
				if err := cat.Delete(ctx, in.Name); err != nil {
					return nil, err
				}
				return map[string][]string{"deleted": {in.Name}}, nil
			}
			return nil, errs.New(errs.InvalidInput, "snapshot", "", "action %q: want take, restore, list or delete", in.Action)
		},
	})
}
