import { ABORTED, SandboxerError, UNEXPECTED_RESPONSE } from "./errors";
import { Transport, ndjson, toBase64 } from "./http";
import type {
  CallOptions,
  Command,
  Encoding,
  ExecResult,
  FileEntry,
  LifetimeOptions,
  OutputChunk,
  ProcessOutput,
  ProcessState,
  Restored,
  SandboxInfo,
  SnapshotInfo,
  Signal,
  ToolCallOptions,
  ToolReply,
  WireError,
} from "./types";

/**
 * One sandbox of a server: commands, files, tool calls, background processes and its lifetime.
 * Every method is one request (execStream and follow: one streamed request); errors are
 * SandboxerErrors with the API's code.
 */
export class Sandbox {
  readonly id: string;
  /** The sandbox as of the last answer that described it (create, get, refresh, extend). */
  info?: SandboxInfo;
  private readonly t: Transport;

  /** @internal Use SandboxerClient.createSandbox, getSandbox or sandbox. */
  constructor(t: Transport, id: string, info?: SandboxInfo) {
    this.t = t;
    this.id = id;
    this.info = info;
  }

  private path(rest = ""): string {
    return `/v1/sandboxes/${encodeURIComponent(this.id)}${rest}`;
  }

  /** Reads the sandbox again (`GET /v1/sandboxes/{id}`); SANDBOX_UNAVAILABLE once it is gone. */
  async refresh(opts: CallOptions = {}): Promise<SandboxInfo> {
    this.info = await this.t.json<SandboxInfo>({ method: "GET", path: this.path(), signal: opts.signal });
    return this.info;
  }

  /**
   * Runs a command and waits for it. A non-zero exit is data (`exitCode`); a command that could
   * not start is PROCESS_FAILED, one that ran past its timeout PROCESS_TIMEOUT with the partial
   * result in the error's `result`.
   */
  async exec(cmd: string[] | Command, opts: CallOptions = {}): Promise<ExecResult> {
    return this.t.json<ExecResult>({ method: "POST", path: this.path("/exec"), json: commandBody(cmd, false), signal: opts.signal });
  }

  /**
   * Runs a command and streams its output as it comes: iterate the chunks, then `await
   * stream.result()` (or call result() alone, which reads the rest). Breaking out of the
   * iteration, or the signal, kills the command.
   */
  execStream(cmd: string[] | Command, opts: CallOptions = {}): ExecStream {
    const body = { ...commandBody(cmd, false), stream: true };
    return new ExecStream(this.t.send({ method: "POST", path: this.path("/exec"), json: body, signal: opts.signal }), opts);
  }

  /** Downloads a file: its bytes, or its text with "utf8". TOOL_NOT_FOUND, TOOL_PATH_ESCAPE, ... */
  async readFile(path: string, opts?: CallOptions): Promise<Uint8Array>;
  async readFile(path: string, encoding: "utf8", opts?: CallOptions): Promise<string>;
  async readFile(path: string, a?: "utf8" | CallOptions, b?: CallOptions): Promise<Uint8Array | string> {
    const opts = (typeof a === "object" ? a : b) ?? {};
    const bytes = await this.t.bytes({ method: "GET", path: this.path("/files"), query: { path }, signal: opts.signal });
    return a === "utf8" ? new TextDecoder().decode(bytes) : bytes;
  }

  /** Uploads a file (text as UTF-8): an atomic replace, parent directories made. */
  async writeFile(path: string, data: string | Uint8Array | ArrayBuffer, opts: CallOptions = {}): Promise<{ path: string; size: number }> {
    const body = typeof data === "string" ? new TextEncoder().encode(data) : data instanceof Uint8Array ? data : new Uint8Array(data);
    return this.t.json({ method: "PUT", path: this.path("/files"), query: { path }, body, signal: opts.signal });
  }

  /** Every file and symlink under dir (the whole workspace by default). */
  async listFiles(dir = "", opts: CallOptions = {}): Promise<FileEntry[]> {
    const r = await this.t.json<{ files: FileEntry[] }>({ method: "GET", path: this.path("/files/list"), query: { dir }, signal: opts.signal });
    return r.files;
  }

  /** One entry, not following a final symlink. */
  async stat(path: string, opts: CallOptions = {}): Promise<FileEntry> {
    return this.t.json<FileEntry>({ method: "GET", path: this.path("/files/stat"), query: { path }, signal: opts.signal });
  }

  /** Removes a file or an empty directory. */
  async remove(path: string, opts: CallOptions = {}): Promise<void> {
    await this.t.empty({ method: "DELETE", path: this.path("/files"), query: { path }, signal: opts.signal });
  }

  /** Makes path a symbolic link to target. */
  async symlink(path: string, target: string, opts: CallOptions = {}): Promise<void> {
    await this.t.empty({ method: "POST", path: this.path("/files/symlink"), json: { path, target }, signal: opts.signal });
  }

  /** Sets or clears the executable bits of a file. */
  async setExecutable(path: string, executable = true, opts: CallOptions = {}): Promise<void> {
    await this.t.empty({ method: "POST", path: this.path("/files/executable"), json: { path, executable }, signal: opts.signal });
  }

  /**
   * Calls a tool (read, write, edit, grep, bash, process_output, process_input, process_kill,
   * process_list; docs/tools.md) and returns its reply, `ok` true or false: a tool's failure is
   * data (`reply.error.code`), not an exception. Refusals of the request itself (no such
   * sandbox, no token) throw. The call is journaled at the position the options give.
   */
  async tool(name: string, input: Record<string, unknown>, opts: ToolCallOptions = {}): Promise<ToolReply> {
    const headers: Record<string, string> = {};
    if (opts.runId !== undefined) headers["Sandboxer-Run-Id"] = opts.runId;
    if (opts.nodeId !== undefined) headers["Sandboxer-Node-Id"] = opts.nodeId;
    if (opts.iteration !== undefined) headers["Sandboxer-Iteration"] = String(opts.iteration);
    if (opts.attempt !== undefined) headers["Sandboxer-Attempt"] = String(opts.attempt);
    if (opts.idempotencyKey !== undefined) headers["Idempotency-Key"] = opts.idempotencyKey;
    return this.t.json<ToolReply>({
      method: "POST",
      path: this.path(`/tools/${encodeURIComponent(name)}`),
      json: input,
      headers,
      signal: opts.signal,
    });
  }

  /** Starts a background process (no stdin in cmd: write it with `process.write`). */
  async startProcess(cmd: string[] | Command, opts: CallOptions = {}): Promise<SandboxProcess> {
    const st = await this.t.json<ProcessState>({ method: "POST", path: this.path("/processes"), json: commandBody(cmd, true), signal: opts.signal });
    return new SandboxProcess(this.t, this.path(`/processes/${encodeURIComponent(st.id)}`), st.id, st);
  }

  /** A handle of the background process id (no request: a wrong id fails at first use). */
  process(id: string): SandboxProcess {
    return new SandboxProcess(this.t, this.path(`/processes/${encodeURIComponent(id)}`), id);
  }

  /** The sandbox's background processes, running and recently exited. */
  async listProcesses(opts: CallOptions = {}): Promise<ProcessState[]> {
    const r = await this.t.json<{ processes: ProcessState[] }>({ method: "GET", path: this.path("/processes"), signal: opts.signal });
    return r.processes;
  }

  /** Sets the remaining lifetime (seconds from now), and optionally the idle timeout. */
  async extend(lifetime: number | LifetimeOptions, opts: CallOptions = {}): Promise<SandboxInfo> {
    const body = typeof lifetime === "number" ? { ttlSeconds: lifetime } : lifetime;
    this.info = await this.t.json<SandboxInfo>({ method: "POST", path: this.path("/extend"), json: body, signal: opts.signal });
    return this.info;
  }

  /**
   * Freezes the sandbox's processes where they are (docker and oci sandboxes; INVALID_INPUT for
   * others) until `resume`. Meanwhile commands, tool calls and processes are refused
   * (SANDBOX_UNAVAILABLE, status 409, `details.paused`); files and `snapshot` work.
   */
  async pause(opts: CallOptions = {}): Promise<SandboxInfo> {
    this.info = await this.t.json<SandboxInfo>({ method: "POST", path: this.path("/pause"), signal: opts.signal });
    return this.info;
  }

  /** Lets a paused sandbox's processes go on where they were. */
  async resume(opts: CallOptions = {}): Promise<SandboxInfo> {
    this.info = await this.t.json<SandboxInfo>({ method: "POST", path: this.path("/resume"), signal: opts.signal });
    return this.info;
  }

  /**
   * Takes a file system snapshot of the workspace into the token's catalog as name (also of a
   * paused sandbox: its files do not change meanwhile). INVALID_INPUT for a bad name,
   * SYNC_CONFLICT for a name taken.
   */
  async snapshot(name: string, opts: CallOptions = {}): Promise<SnapshotInfo> {
    return this.t.json<SnapshotInfo>({ method: "POST", path: this.path("/snapshots"), json: { name }, signal: opts.signal });
  }

  /**
   * Restores the token's snapshot name into the workspace, verified (VERIFY_FAILED names the
   * paths otherwise). A workspace with files needs `replace` (what the snapshot does not list
   * is removed), else SYNC_CONFLICT; TOOL_NOT_FOUND for no such snapshot.
   */
  async restore(name: string, opts: CallOptions & { replace?: boolean } = {}): Promise<Restored> {
    const body: Record<string, unknown> = { snapshot: name };
    if (opts.replace) body.replace = true;
    return this.t.json<Restored>({ method: "POST", path: this.path("/restore"), json: body, signal: opts.signal });
  }

  /** A new sandbox from a copy of this one's workspace. */
  async fork(lifetime: LifetimeOptions = {}, opts: CallOptions = {}): Promise<Sandbox> {
    const info = await this.t.json<SandboxInfo>({ method: "POST", path: this.path("/fork"), json: lifetime, signal: opts.signal });
    return new Sandbox(this.t, info.id, info);
  }

  /** Removes the sandbox: its commands are killed, nothing of it is left. */
  async delete(opts: CallOptions = {}): Promise<void> {
    await this.t.empty({ method: "DELETE", path: this.path(), signal: opts.signal });
  }
}

/** The JSON body of exec and start. */
function commandBody(cmd: string[] | Command, background: boolean): Record<string, unknown> {
  const c: Command = Array.isArray(cmd) ? { args: cmd } : cmd;
  if (!c || !Array.isArray(c.args)) {
    throw new TypeError("a command is argv (an array of strings) or {args: [...]}, never a joined string: use [\"sh\", \"-c\", line]");
  }
  const body: Record<string, unknown> = { args: c.args };
  if (c.dir !== undefined) body.dir = c.dir;
  if (c.env !== undefined) body.env = Array.isArray(c.env) ? c.env : Object.entries(c.env).map(([k, v]) => `${k}=${v}`);
  if (c.stdin !== undefined) {
    if (background) throw new TypeError("a background process's stdin is written with process.write()");
    if (typeof c.stdin === "string") body.stdin = c.stdin;
    else body.stdinBase64 = toBase64(c.stdin);
  }
  if (c.timeoutMs !== undefined) body.timeoutMs = c.timeoutMs;
  if (c.maxOutputBytes !== undefined) body.maxOutputBytes = c.maxOutputBytes;
  if (c.encoding !== undefined) body.encoding = c.encoding;
  return body;
}

/** A line of a streamed exec. */
interface ExecLine {
  stream?: "stdout" | "stderr";
  data?: string;
  result?: ExecResult;
  error?: WireError;
}

/**
 * The output of a streamed command: an async iterable of chunks (read it once), and its result.
 * With `encoding: "base64"` each chunk's data is base64 (fromBase64 decodes it).
 */
export class ExecStream implements AsyncIterable<OutputChunk> {
  private readonly res: Promise<Response>;
  private readonly opts: CallOptions;
  private reading = false;
  private readonly settled: Promise<ExecResult>;
  private settle!: { resolve: (r: ExecResult) => void; reject: (e: unknown) => void };

  /** @internal */
  constructor(res: Promise<Response>, opts: CallOptions) {
    this.res = res;
    this.opts = opts;
    // A request that fails before anyone reads is reported by the reader, not as unhandled.
    res.catch(() => undefined);
    this.settled = new Promise<ExecResult>((resolve, reject) => (this.settle = { resolve, reject }));
    this.settled.catch(() => undefined);
  }

  [Symbol.asyncIterator](): AsyncIterator<OutputChunk> {
    return this.chunks();
  }

  private async *chunks(): AsyncGenerator<OutputChunk, void, undefined> {
    if (this.reading) throw new Error("an ExecStream is read once");
    this.reading = true;
    let ended = false;
    try {
      const res = await this.res;
      for await (const line of ndjson<ExecLine>(res, this.opts.signal, "exec stream")) {
        if (line.stream !== undefined) {
          yield { stream: line.stream, data: line.data ?? "" };
        } else if (line.error !== undefined) {
          ended = true;
          throw SandboxerError.from(line.error, res.status, line.result);
        } else if (line.result !== undefined) {
          ended = true;
          this.settle.resolve(line.result);
        }
      }
      if (!ended) {
        ended = true;
        throw new SandboxerError(UNEXPECTED_RESPONSE, "exec stream: the answer ended without a result");
      }
    } catch (err) {
      ended = true;
      this.settle.reject(err);
      throw err;
    } finally {
      if (!ended) {
        this.settle.reject(new SandboxerError(ABORTED, "exec stream: the output was not read to its end (the command was killed)"));
      }
    }
  }

  /**
   * The command's result (its stdout and stderr empty: the chunks carried them). Reads and
   * discards what was not iterated yet. Throws what the stream ended with: PROCESS_TIMEOUT (with
   * the partial result in `result`), a refusal of the request, ...
   */
  async result(): Promise<ExecResult> {
    if (!this.reading) {
      for await (const _ of this) {
        // Discarded: the caller asked for the result only.
      }
    }
    return this.settled;
  }
}

/** A background process of a sandbox. */
export class SandboxProcess {
  readonly id: string;
  /** The state as of the last answer that carried it. */
  state?: ProcessState;
  private readonly t: Transport;
  private readonly base: string;

  /** @internal Use Sandbox.startProcess or Sandbox.process. */
  constructor(t: Transport, base: string, id: string, state?: ProcessState) {
    this.t = t;
    this.base = base;
    this.id = id;
    this.state = state;
  }

  /** Reads its state again. */
  async refresh(opts: CallOptions = {}): Promise<ProcessState> {
    this.state = await this.t.json<ProcessState>({ method: "GET", path: this.base, signal: opts.signal });
    return this.state;
  }

  /** The output after offset `since` (at most `limit` bytes); pass its offset to the next read. */
  async output(opts: CallOptions & { since?: number; limit?: number; encoding?: Encoding } = {}): Promise<ProcessOutput> {
    const out = await this.t.json<ProcessOutput>({
      method: "GET",
      path: this.base + "/output",
      query: { since: opts.since, limit: opts.limit, encoding: opts.encoding },
      signal: opts.signal,
    });
    this.state = out.state;
    return out;
  }

  /**
   * Follows the output from `since` as it comes, until the process exits (the last chunk has
   * `state.running` false). Breaking out of the loop ends the request, not the process.
   */
  async *follow(opts: CallOptions & { since?: number; encoding?: Encoding } = {}): AsyncGenerator<ProcessOutput, void, undefined> {
    const res = await this.t.send({
      method: "GET",
      path: this.base + "/output",
      query: { since: opts.since, encoding: opts.encoding, follow: true },
      signal: opts.signal,
    });
    for await (const line of ndjson<ProcessOutput & { error?: WireError }>(res, opts.signal, "process output")) {
      if (line.error !== undefined) throw SandboxerError.from(line.error, res.status);
      this.state = line.state;
      yield line;
    }
  }

  /** Writes data to its stdin; with `close` closes stdin after. */
  async write(data: string | Uint8Array, opts: CallOptions & { close?: boolean } = {}): Promise<{ written: number }> {
    const body = typeof data === "string" ? new TextEncoder().encode(data) : data;
    return this.t.json({ method: "POST", path: this.base + "/stdin", query: { close: opts.close || undefined }, body, signal: opts.signal });
  }

  /** Closes its stdin (end of file for the process). */
  async closeStdin(opts: CallOptions = {}): Promise<void> {
    await this.write(new Uint8Array(0), { ...opts, close: true });
  }

  /** Sends a signal to its whole tree (TERM by default). */
  async signal(signal: Signal = "TERM", opts: CallOptions = {}): Promise<ProcessState> {
    this.state = await this.t.json<ProcessState>({ method: "POST", path: this.base + "/signal", json: { signal }, signal: opts.signal });
    return this.state;
  }

  /** Kills it (KILL). */
  async kill(opts: CallOptions = {}): Promise<ProcessState> {
    return this.signal("KILL", opts);
  }

  /** Waits for it to exit, at most timeoutMs (then its state, still running). */
  async wait(opts: CallOptions & { timeoutMs?: number } = {}): Promise<ProcessState> {
    this.state = await this.t.json<ProcessState>({
      method: "POST",
      path: this.base + "/wait",
      query: { timeoutMs: opts.timeoutMs },
      signal: opts.signal,
    });
    return this.state;
  }
}
