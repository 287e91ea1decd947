package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/progress"
	"github.com/sandboxer/sandboxer/lifecycle"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/hoststore"
	"github.com/sandboxer/sandboxer/tools"
)

// rootCopyAdapters are the adapters whose workspace is not a host directory (of this host): a
// one-shot call of theirs works on a copy of --root, copied in before the call and synced back
// after it.
var rootCopyAdapters = map[string]bool{"docker": true, "oci": true, "kubernetes": true, "remote": true}

// copiesRoot reports whether the calls of s work on a copy of --root: a one-shot sandbox (no
// --sandbox) of a container adapter, without --store (a store is then the source of truth).
func copiesRoot(s Settings) bool {
	return s.Sandbox == "" && s.Store == "" && rootCopyAdapters[s.Adapter]
}

// workSync is the FileSync of one invocation: the workspace hydrated from --store, or from
// --root for a one-shot container call, and flushed back after the calls that change it.
type workSync struct {
	fsync *filesync.Sync
	name  string // "--store STORE" or "--root DIR", for messages
	close func()
}

// openWorkSync hydrates the session's workspace from --store, or from --root where copiesRoot;
// nil (and no error) when the invocation syncs nothing.
func openWorkSync(ctx context.Context, s Settings, sess *session, warn io.Writer) (*workSync, error) {
	switch {
	case s.Store != "":
		fsync, stop, err := hydrateStore(ctx, s, sess, warn)
		if err != nil {
			return nil, err
		}
		return &workSync{fsync: fsync, name: "--store " + s.Store, close: stop}, nil
	case copiesRoot(s):
		return hydrateRoot(ctx, s, sess, warn)
	}
	return nil, nil
}

// hydrateRoot copies --root into the one-shot sandbox's workspace through hoststore: every file
// and symbolic link FileSync keeps (.git included), but no file over sync-max-file-bytes and no
// link that leads outside the directory (both reported on warn). The sync state lives in this
// process only (the sandbox does not outlive it); nothing is written into --root but the call's
// changes.
func hydrateRoot(ctx context.Context, s Settings, sess *session, warn io.Writer) (*workSync, error) {
	name := "--root " + s.Root
	store, err := hoststore.Open(s.Root, DefaultCollection)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	fsync, err := filesync.New(sess.Sandbox, store, filesync.Options{
		Collections:  []string{DefaultCollection},
		MaxFileBytes: s.SyncMaxFileBytes,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	stop := progress.Spinner(warn, "copying "+s.Root+" into the sandbox")
	rep, err := fsync.Hydrate(ctx)
	stop()
	// A link leading outside is not made (PathEscape, after everything else was written): the
	// call goes on without it, as a flush would skip it.
	if err != nil && errs.CodeOf(err) != errs.PathEscape {
		store.Close()
		return nil, fmt.Errorf("%s: copying into the sandbox: %w", name, err)
	}
	if len(rep.Reasons) > 0 {
		var b strings.Builder
		for _, p := range rep.Skipped {
			if r, ok := rep.Reasons[p]; ok {
				fmt.Fprintf(&b, "\n  %s: %s", p, r)
			}
		}
		fmt.Fprintf(warn, "sandboxer: warning: %s: %d files not copied into the sandbox:%s\n", name, len(rep.Reasons), b.String())
	}
	return &workSync{fsync: fsync, name: name, close: func() { store.Close() }}, nil
}

// seedRoot copies --root (vetted) into the new long-lived container sandbox id (sandbox create --root):
// the same copy as a one-shot call's (hydrateRoot), made once. What the sandbox's calls change
// stays in it: nothing is synced back (a --store is the way to have both ways).
func seedRoot(ctx context.Context, s Settings, mgr *lifecycle.Manager, id string, warn io.Writer) error {
	ls, err := mgr.Attach(ctx, id, optionsOf(s))
	if err != nil {
		return err
	}
	defer ls.Detach(context.WithoutCancel(ctx))
	w, err := hydrateRoot(ctx, s, &session{Sandbox: ls.Sandbox}, warn)
	if err != nil {
		return err
	}
	w.close()
	return nil
}

// flush syncs the workspace back; a conflict is an error naming the paths left as they were.
func (w *workSync) flush(ctx context.Context, when string) error {
	rep, err := w.fsync.Flush(context.WithoutCancel(ctx))
	if err != nil {
		if e := errs.As(err); e.Code == errs.Conflict {
			var paths []string
			for _, c := range rep.Conflicts {
				paths = append(paths, fmt.Sprintf("%s (%s)", c.Path, c.Kind))
			}
			return fmt.Errorf("%s: flush %s: %d conflict(s), not overwritten (changed on both sides since the sandbox got them): %s",
				w.name, when, len(rep.Conflicts), strings.Join(paths, ", "))
		}
		return fmt.Errorf("%s: flush %s: %w", w.name, when, err)
	}
	return nil
}

// attachWorkSync opens the invocation's FileSync (openWorkSync) and makes cl flush it after
// every write, edit and bash. A flush error or conflict is reported on warn and in the reply's
// warning; the call's result stands. The returned func closes it (a no-op when nothing syncs).
func attachWorkSync(ctx context.Context, s Settings, sess *session, cl *caller, warn io.Writer) (func(), error) {
	w, err := openWorkSync(ctx, s, sess, warn)
	if err != nil || w == nil {
		return func() {}, err
	}
	cl.after = func(ctx context.Context, t *tools.Tool) error {
		switch t.Name() {
		case "write", "edit", "bash":
			return w.flush(ctx, "after "+t.Name())
		}
		return nil
	}
	return w.close, nil
}
