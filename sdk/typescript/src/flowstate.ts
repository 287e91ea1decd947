// A drop-in for flow-state-dev's bash tool: its Sandbox interface (@flow-state-dev/tools/bash)
// backed by a sandboxer sandbox. Pass it as the custom provider:
//
//   const sandbox = await flowStateSandbox(new SandboxerClient());
//   const { tools } = await createBashTool({ collections, provider: { type: "custom", sandbox } });

import { SandboxerClient } from "./client";
import { isSandboxerError } from "./errors";
import { Sandbox } from "./sandbox";
import type { CreateSandboxOptions } from "./types";

/** flow-state-dev's CommandResult. */
export interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** flow-state-dev's Sandbox interface, as @flow-state-dev/tools/bash declares it. */
export interface FlowStateSandboxLike {
  executeCommand(command: string): Promise<CommandResult>;
  readFile(path: string): Promise<string>;
  writeFile(path: string, content: string): Promise<void>;
  stop?(): Promise<void>;
}

/** Options of flowStateSandbox. */
export interface FlowStateOptions {
  /** The sandbox to use; without it one is created with `create`. */
  sandbox?: Sandbox;
  /** Options of the sandbox created when none is given. */
  create?: CreateSandboxOptions;
  /**
   * The shell that runs a command string: argv that the command is appended to, such as
   * ["bash", "-c"] or ["sh", "-c"]. Default: bash when the sandbox has it (as flow-state's local
   * adapter runs /bin/bash -c), else sh; one exec either way.
   */
  shell?: string[];
  /**
   * The workspace root as flow-state names it (its `destination`, default "/workspace"). File
   * paths under it are taken relative to the sandbox's workspace, and where the sandbox's
   * workspace is elsewhere (the local adapter's host directory) the command's mentions of it
   * are rewritten to that directory, as flow-state's local adapter does. null: no mapping.
   */
  destination?: string | null;
  /** Per command; default the server's --timeout. On overrun: exitCode 124, as flow-state's. */
  timeoutMs?: number;
  /** KEY: VALUE added to the environment of every command. */
  env?: Record<string, string>;
  /** Whether stop() deletes the sandbox; default true for one created here, false for one given. */
  deleteOnStop?: boolean;
}

/** Exit code of a command past its deadline: timeout(1)'s, as flow-state's adapters report it. */
export const TIMEOUT_EXIT_CODE = 124;

// Runs "$1" with bash where there is one, else with sh: one exec, no probe to remember.
const AUTO_SHELL = 'if command -v bash >/dev/null 2>&1; then exec bash -c "$1"; else exec sh -c "$1"; fi';

/**
 * flow-state-dev's Sandbox over a sandboxer sandbox. executeCommand never throws for what the
 * command did: a non-zero exit, a timeout (124) and a command that could not start (1) are
 * results, as in flow-state's adapters; it throws only when the sandbox cannot be reached
 * (SandboxerError: SANDBOX_UNAVAILABLE, NETWORK_ERROR, UNAUTHORIZED, ...).
 *
 * Note that sandboxer's own bash tool is argv-only; this interface hands over a command string,
 * which runs under `bash -c` (or `sh -c`) inside the sandbox.
 */
export class FlowStateSandbox implements FlowStateSandboxLike {
  readonly sandbox: Sandbox;
  private readonly opts: FlowStateOptions;
  private readonly deleteOnStop: boolean;
  private workspace?: Promise<string | undefined>;
  private stopped?: Promise<void>;

  constructor(sandbox: Sandbox, opts: FlowStateOptions = {}) {
    this.sandbox = sandbox;
    this.opts = opts;
    this.deleteOnStop = opts.deleteOnStop ?? false;
  }

  /** The sandbox's id (for flow-state's bashSession persistence). */
  get sandboxId(): string {
    return this.sandbox.id;
  }

  private get destination(): string | null {
    const d = this.opts.destination === undefined ? "/workspace" : this.opts.destination;
    return d === null ? null : d.replace(/\/+$/, "") || "/";
  }

  async executeCommand(command: string): Promise<CommandResult> {
    const line = await this.translate(command);
    const args = this.opts.shell ? [...this.opts.shell, line] : ["sh", "-c", AUTO_SHELL, "sh", line];
    try {
      const r = await this.sandbox.exec({ args, timeoutMs: this.opts.timeoutMs, env: this.opts.env });
      return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode };
    } catch (err) {
      if (isSandboxerError(err, "PROCESS_TIMEOUT")) {
        const partial = (err.result ?? {}) as { stdout?: string; stderr?: string };
        return { stdout: partial.stdout ?? "", stderr: joinLines(partial.stderr ?? "", `${err.code}: ${err.message}`), exitCode: TIMEOUT_EXIT_CODE };
      }
      if (isSandboxerError(err, "PROCESS_FAILED")) {
        return { stdout: "", stderr: `${err.code}: failed to run command: ${err.message}`, exitCode: 1 };
      }
      throw err;
    }
  }

  async readFile(path: string): Promise<string> {
    return this.sandbox.readFile(this.filePath(path), "utf8");
  }

  async writeFile(path: string, content: string): Promise<void> {
    await this.sandbox.writeFile(this.filePath(path), content);
  }

  /** Deletes the sandbox when this object owns it (deleteOnStop). Idempotent. */
  async stop(): Promise<void> {
    if (!this.deleteOnStop) return;
    this.stopped ??= this.sandbox.delete().catch((err) => {
      if (!isSandboxerError(err, "SANDBOX_UNAVAILABLE")) throw err;
    });
    return this.stopped;
  }

  /** A path under the destination, relative to the workspace; any other path as given. */
  private filePath(path: string): string {
    const d = this.destination;
    if (d === null || d === "/") return path;
    if (path === d) return ".";
    return path.startsWith(d + "/") ? path.slice(d.length + 1) || "." : path;
  }

  /** The command with the destination rewritten to the sandbox's workspace where they differ. */
  private async translate(command: string): Promise<string> {
    const d = this.destination;
    if (d === null || d === "/") return command;
    this.workspace ??= this.sandboxWorkspace();
    const ws = await this.workspace;
    if (!ws || ws === d) return command;
    const escaped = d.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return command.replace(new RegExp(`${escaped}(?=/|$|[\\s;|&<>"'\`])`, "g"), ws);
  }

  private async sandboxWorkspace(): Promise<string | undefined> {
    const info = this.sandbox.info?.capabilities ? this.sandbox.info : await this.sandbox.refresh();
    return info.capabilities?.workspace;
  }
}

/**
 * flow-state-dev's Sandbox backed by sandboxer: the sandbox given in opts, or a new one of
 * `opts.create` (deleted by stop()).
 */
export async function flowStateSandbox(client: SandboxerClient, opts: FlowStateOptions = {}): Promise<FlowStateSandbox> {
  if (opts.sandbox) return new FlowStateSandbox(opts.sandbox, opts);
  const sandbox = await client.createSandbox(opts.create ?? {});
  return new FlowStateSandbox(sandbox, { ...opts, deleteOnStop: opts.deleteOnStop ?? true });
}

function joinLines(a: string, b: string): string {
  return a === "" ? b : a.endsWith("\n") ? a + b : a + "\n" + b;
}
