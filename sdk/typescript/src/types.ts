// The wire types of the sandboxer HTTP API (docs/api.md), as the server writes them.

/** The part of an AbortSignal the SDK needs: pass a real AbortSignal (AbortController.signal). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the request; for a running command the server then kills its whole tree. */
  signal?: AbortSignalLike;
}

/** `GET /v1/health`. */
export interface Health {
  ok: boolean;
  version: string;
  adapters: string[];
}

/** The body of `POST /v1/sandboxes`: every member optional, the server's flags give the rest. */
export interface CreateSandboxOptions {
  /** local, memory, docker, oci, kubernetes (what the server has: `health().adapters`). */
  adapter?: string;
  /** A name of the server's docker daemon's images (docker, oci) or as the cluster pulls it. */
  image?: string;
  /** oci: runc, crun, runsc. */
  runtime?: string;
  memoryBytes?: number;
  cpus?: number;
  pids?: number;
  /** -1: no cap, 0: the adapter's default. */
  diskBytes?: number;
  allowNetwork?: boolean;
  /** Hosts the sandbox's egress proxy lets through (excludes allowNetwork). */
  allowHosts?: string[];
  /** Lifetime from now (default: the server's --ttl, 1 h). */
  ttlSeconds?: number;
  /** Removed after this long without a request (0: never; default the server's, 5 min). */
  idleTimeoutSeconds?: number;
  /** A snapshot of the token's catalog to restore into the new sandbox (verified). */
  fromSnapshot?: string;
}

/** What the adapter of a sandbox can do. */
export interface Capabilities {
  adapter: string;
  fsIsolation: "none" | "jail" | "image" | "virtual" | string;
  network: "host" | "namespace" | "container" | "virtual" | string;
  exec: "host" | "container" | "interpreted" | string;
  signals: boolean;
  symlinks: boolean;
  /** The workspace root as commands see it: a host directory, or "/workspace" in a container. */
  workspace: string;
  ports: boolean;
  processes: boolean;
}

/** A sandbox as the API shows it. */
export interface SandboxInfo {
  id: string;
  adapter: string;
  image?: string;
  owner?: string;
  forkOf?: string;
  createdAt: string;
  expiresAt: string;
  idleTimeoutSeconds: number;
  lastUsedAt: string;
  memoryBytes: number;
  allowNetwork: boolean;
  allowHosts: string[];
  capabilities?: Capabilities;
  /** Its processes are frozen (`pause`): commands are refused until `resume`. */
  paused: boolean;
}

/** A file system snapshot of the token's catalog (docs/snapshots.md). */
export interface SnapshotInfo {
  name: string;
  created: string;
  /** The id of the sandbox it was taken of. */
  source?: string;
  adapter?: string;
  files: number;
  bytes: number;
  /** Figures of the take that made it (in its answer only): files read, blobs stored. */
  read?: number;
  stored?: number;
  /** What it left out: links that lead outside the workspace, paths no store can hold. */
  skipped?: string[];
}

/** The answer of `restore`: the snapshot now in the workspace, verified. */
export interface Restored {
  snapshot: string;
  sandbox: string;
  files: number;
  bytes: number;
}

/** Lifetime of `extend` and of a fork. */
export interface LifetimeOptions {
  ttlSeconds?: number;
  idleTimeoutSeconds?: number;
}

/** What was enforced for one command. */
export interface Isolation {
  network: boolean;
  filesystem: boolean;
  processTree: boolean;
  limits: boolean;
  layers?: string[];
}

/** Output encoding: "utf8" (bytes that are not UTF-8 become U+FFFD) or "base64" (exact bytes). */
export type Encoding = "utf8" | "base64";

/** A command: argv, never a joined string (use `["sh", "-c", line]` for shell syntax). */
export interface Command {
  args: string[];
  /** Working directory, relative to the workspace. */
  dir?: string;
  /** `KEY=VALUE` entries added to the sandbox's minimal environment. */
  env?: string[] | Record<string, string>;
  /** Standard input: text, or bytes (sent as stdinBase64). Not for background processes. */
  stdin?: string | Uint8Array;
  timeoutMs?: number;
  maxOutputBytes?: number;
  encoding?: Encoding;
}

/** A finished command. A non-zero exit is data, not an error. */
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  stdoutDropped: number;
  stderrDropped: number;
  durationMs: number;
  isolation: Isolation;
  /** The resource limit that ended the command ("memory"), if one did. */
  limit?: string;
  encoding: Encoding;
  /** What the command cost, as the server's adapter measured it (docs/receipts.md). */
  receipt?: Receipt;
}

/**
 * What a command cost and what it changed. A member the adapter cannot count is absent, never a
 * guessed 0 (docs/receipts.md lists, per adapter, what is exact, estimated and missing).
 */
export interface Receipt {
  wallUs: number;
  cpuUs?: number;
  peakMemoryBytes?: number;
  processes?: number;
  /** Everything the command wrote, bytes past the output limit included. */
  stdoutBytes: number;
  stderrBytes: number;
  diskReadBytes?: number;
  diskWriteBytes?: number;
  netSentBytes?: number;
  netReceivedBytes?: number;
  /** Workspace paths a bash tool call created, changed and deleted (not on plain exec). */
  paths?: { created?: string[]; changed?: string[]; deleted?: string[]; skipped?: string };
}

/** One piece of a streamed command's output. */
export interface OutputChunk {
  stream: "stdout" | "stderr";
  /** Text, or base64 with `encoding: "base64"`. */
  data: string;
}

/** The error member of a refusal or of a failed tool call. */
export interface WireError {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/**
 * The reply of a tool call (`POST .../tools/{name}`): `ok` with the text the agent reads in
 * `output` (bash adds its structured members: exitCode, stdout, stderr, ...), or `ok: false` with
 * the error. A tool's failure is data: the call ran and is journaled.
 */
export interface ToolReply {
  ok: boolean;
  output?: string;
  error?: WireError;
  warning?: string;
  [member: string]: unknown;
}

/** The journal position of a tool call (sent as headers; defaults default/default/0/1). */
export interface ToolCallOptions extends CallOptions {
  runId?: string;
  nodeId?: string;
  iteration?: number;
  attempt?: number;
  idempotencyKey?: string;
}

/** A background process at one instant. */
export interface ProcessState {
  id: string;
  args: string[];
  started: string;
  running: boolean;
  /** Meaningful once running is false: 128+signo for a signal. */
  exitCode: number;
  limit?: string;
  isolation: Isolation;
}

/** One read of a background process's output. */
export interface ProcessOutput {
  stdout: string;
  stderr: string;
  /** Pass as `since` of the next read: nothing is lost or repeated. */
  offset: number;
  /** Bytes the server's rings no longer held. */
  dropped: number;
  state: ProcessState;
  encoding: Encoding;
}

/** A workspace entry. */
export interface FileEntry {
  path: string;
  type: "file" | "symlink" | "dir" | "other";
  size: number;
  /** Go's fs.FileMode: type bits and permissions. */
  mode: number;
  modTime: string;
  link?: string;
  executable: boolean;
}

/** Signals a background process can be sent. */
export type Signal = "TERM" | "KILL" | "INT" | "HUP" | "QUIT" | "USR1" | "USR2" | "STOP" | "CONT";
