package lifecycle

import (
	"context"
	"sort"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Adapter describes one adapter of this build.
type Adapter struct {
	Name string
	// Enforces says in a sentence what the adapter enforces (for doctor and the docs).
	Enforces string
	// InProcess: its sandboxes live in the memory of the process that opens them, so Open is
	// the only way to have one (Manager.Create refuses with ErrInProcess).
	InProcess bool

	d driver
}

// driver is how one adapter opens, persists and removes its sandboxes.
type driver struct {
	// open returns an ephemeral sandbox: its Stop removes what it made, never a workspace it was
	// given (Options.Local.Root).
	open func(ctx context.Context, o Options) (adapter.Sandbox, error)
	// create makes a long-lived sandbox and fills rec's adapter-specific fields; rec.ID and
	// rec's directory in rs are its.
	create func(ctx context.Context, o Options, rs records, rec *Record) error
	// attach reopens a long-lived sandbox; errs.SandboxUnavailable when it is gone.
	attach func(ctx context.Context, o Options, rec Record) (adapter.Sandbox, error)
	// detach ends this process's use of an attached sandbox without destroying it.
	detach func(ctx context.Context, sb adapter.Sandbox) error
	// destroy releases what a long-lived sandbox holds outside the state directory.
	destroy func(ctx context.Context, o Options, rec Record) error
	// alive reports whether the sandbox's backing (directory, container) still exists.
	alive func(ctx context.Context, o Options, rec Record) (bool, error)
	// prune (optional) removes what crashed processes left behind, returning backend ids.
	prune func(ctx context.Context, o Options) ([]string, error)
	// setPaused (optional) pauses or resumes the sandbox of rec without attaching to it.
	setPaused func(ctx context.Context, o Options, rec Record, paused bool) error
	// fork fills rec (a copy of src's record, with a new id) as a copy of the attached src. The
	// report lists what the copy left out (adapters that copy on the host: local, oci).
	fork func(ctx context.Context, o Options, rs records, src adapter.Sandbox, rec *Record) (adapter.CopyReport, error)
	// restore (optional) fills rec as a new sandbox restored from the checkpoint in dir
	// (adapter.Checkpointer).
	restore func(ctx context.Context, o Options, dir string, rec *Record) error
}

// adapters is the explicit table of this build's adapters: no init() registration, what is
// listed here is what this build can run.
var adapters = map[string]Adapter{
	"local":      {Name: "local", Enforces: localEnforces(), d: localDriver},
	"docker":     {Name: "docker", Enforces: dockerEnforces, d: dockerDriver},
	"memory":     {Name: "memory", Enforces: memoryEnforces, InProcess: true, d: memoryDriver},
	"oci":        {Name: "oci", Enforces: ociEnforces, d: ociDriver},
	"kubernetes": {Name: "kubernetes", Enforces: kubernetesEnforces, d: kubernetesDriver},
	"remote":     {Name: "remote", Enforces: remoteEnforces, d: remoteDriver},
}

// Adapters lists this build's adapters by name.
func Adapters() []Adapter {
	out := make([]Adapter, 0, len(adapters))
	for _, a := range adapters {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the adapter of that name.
func Lookup(name string) (Adapter, bool) {
	a, ok := adapters[name]
	return a, ok
}

// lookup is Lookup with "" for local and the error of an unknown adapter: errs.InvalidInput.
func lookup(name string) (Adapter, error) {
	if name == "" {
		name = "local"
	}
	a, ok := Lookup(name)
	if !ok {
		var names []string
		for _, a := range Adapters() {
			names = append(names, a.Name)
		}
		return a, errs.New(errs.InvalidInput, "sandbox", "", "adapter %q: want one of %v", name, names)
	}
	return a, nil
}

// Open opens an ephemeral sandbox of o.Adapter, which lives until its Stop: Stop removes what it
// made (a container, a temporary workspace), never a workspace it was given (o.Local.Root).
// Errors: errs.InvalidInput for an unknown adapter or invalid options, errs.SandboxUnavailable
// when the adapter cannot run here (no daemon, no runtime, no cluster), ErrNoNetwork.
func Open(ctx context.Context, o Options) (adapter.Sandbox, error) {
	a, err := lookup(o.Adapter)
	if err != nil {
		return nil, err
	}
	if err := o.resolveEgress(); err != nil {
		return nil, err
	}
	return a.d.open(ctx, o)
}

// runningIn reports whether list (an adapter's List, with its error) has the sandbox id, running
// or paused; of gives an entry's id and state.
func runningIn[I any](list []I, err error, id string, of func(I) (id, state string)) (bool, error) {
	if err != nil {
		return false, err
	}
	for _, i := range list {
		if k, state := of(i); k == id {
			return state == "running" || state == "paused", nil
		}
	}
	return false, nil
}

// forkAs forks src, a sandbox of type S (of the adapter name), into a new one of that type.
func forkAs[S interface {
	adapter.Sandbox
	Fork(context.Context) (adapter.Sandbox, error)
}](ctx context.Context, name string, src adapter.Sandbox) (S, error) {
	var none S
	s, ok := src.(S)
	if !ok {
		return none, errs.New(errs.Internal, "fork", "", "not a %s sandbox", name)
	}
	child, err := s.Fork(ctx)
	if err != nil {
		return none, err
	}
	c, ok := child.(S)
	if !ok {
		child.Stop(context.WithoutCancel(ctx))
		return none, errs.New(errs.Internal, "fork", "", "the fork of a %s sandbox is not one", name)
	}
	return c, nil
}
