// Package lifecycle opens, creates, attaches, lists, removes, prunes and forks the sandboxes of
// every adapter of this build (local, docker, oci, kubernetes, memory, remote) from one Options: what
// the sandboxer CLI, its MCP server and its HTTP API server do, for a Go program to do the same.
//
// There are two kinds of sandbox:
//
//   - Ephemeral: Open returns an adapter.Sandbox that lives until its Stop, which removes what
//     it made (the container, the temporary workspace) but never a workspace it was given
//     (Options.Local.Root). The caller owns it. A memory sandbox is always of this kind
//     (Adapter.InProcess); it can be forked in the process with adapter.Forker.
//   - Long-lived: Manager.Create makes one and saves its Record under the Manager's directory
//     (STATE/sandboxes/ID/sandbox.json; a local sandbox's workspace is STATE/sandboxes/ID/workspace).
//     The sandbox belongs to that record, not to a process: Manager.Attach, in this process or
//     another, returns a Session whose Detach (or Close) ends this process's use and leaves the
//     sandbox for the next Attach; Manager.Remove ends the sandbox and deletes the record;
//     Manager.Prune removes what crashed processes left behind and the records whose backing
//     (workspace, container, pod) is gone; Manager.Fork copies an attached sandbox into a new
//     long-lived one.
//
// Stop is idempotent (the adapter.Sandbox contract); a Session's Detach and Close are idempotent
// and safe to call from two goroutines, the first call's result standing. Options is passed
// to every call rather than kept: an adapter's cluster or daemon comes from the caller's current
// configuration, while what a sandbox was made with (its image, namespace, runtime) is its
// record's or its adapter's own.
//
// The remote adapter's sandboxes live on a sandboxer server (`sandboxerd serve`): a long-lived
// one's record keeps the server's URL and its id there, never the token, which comes with the
// Options of every call (Options.Remote).
//
// Adapters lists the adapters with what each enforces; Options' LocalConfig, DockerConfig,
// OCIConfig, KubernetesConfig and RemoteConfig give the adapter configuration a call uses, for a
// caller that probes an adapter or builds a sandbox itself.
package lifecycle
