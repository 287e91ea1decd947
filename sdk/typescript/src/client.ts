import { Transport } from "./http";
import { Sandbox } from "./sandbox";
import type { CallOptions, CreateSandboxOptions, Health, SandboxInfo, SnapshotInfo } from "./types";

/** Where the client finds its server. */
export interface ClientOptions {
  /** The server's URL; default $SANDBOXER_URL, else http://127.0.0.1:7878 (sandboxerd serve's). */
  baseUrl?: string;
  /** A bearer token (`sandboxerd serve token add`); default $SANDBOXER_TOKEN. */
  token?: string;
}

/** The default server of `sandboxerd serve`. */
export const DEFAULT_URL = "http://127.0.0.1:7878";

function env(name: string): string | undefined {
  return typeof process !== "undefined" && process ? process.env[name] : undefined;
}

/**
 * A client of one `sandboxerd serve`. It holds no connection state of its own (Node's fetch
 * pools connections), so one client serves any number of sandboxes and concurrent calls.
 */
export class SandboxerClient {
  readonly baseUrl: string;
  private readonly t: Transport;

  constructor(opts: ClientOptions | string = {}) {
    const o = typeof opts === "string" ? { baseUrl: opts } : opts;
    this.baseUrl = o.baseUrl ?? env("SANDBOXER_URL") ?? DEFAULT_URL;
    this.t = new Transport(this.baseUrl, o.token ?? env("SANDBOXER_TOKEN"));
  }

  /** `GET /v1/health` (needs no token): the server's version and adapters. */
  async health(opts: CallOptions = {}): Promise<Health> {
    return this.t.json<Health>({ method: "GET", path: "/v1/health", signal: opts.signal });
  }

  /** Creates a sandbox; what the options leave out, the server's flags give. */
  async createSandbox(options: CreateSandboxOptions = {}, opts: CallOptions = {}): Promise<Sandbox> {
    const info = await this.t.json<SandboxInfo>({ method: "POST", path: "/v1/sandboxes", json: options, signal: opts.signal });
    return new Sandbox(this.t, info.id, info);
  }

  /** The sandbox id, read from the server: SANDBOX_UNAVAILABLE when there is none for this token. */
  async getSandbox(id: string, opts: CallOptions = {}): Promise<Sandbox> {
    const sb = new Sandbox(this.t, id);
    await sb.refresh(opts);
    return sb;
  }

  /** A handle of the sandbox id without a request (a wrong id fails at first use). */
  sandbox(id: string): Sandbox {
    return new Sandbox(this.t, id);
  }

  /** The token's sandboxes, oldest first. */
  async listSandboxes(opts: CallOptions = {}): Promise<Sandbox[]> {
    const r = await this.t.json<{ sandboxes: SandboxInfo[] }>({ method: "GET", path: "/v1/sandboxes", signal: opts.signal });
    return r.sandboxes.map((info) => new Sandbox(this.t, info.id, info));
  }

  /** The token's snapshots, oldest first; `prefix` and `source` (a sandbox id) select some. */
  async listSnapshots(opts: CallOptions & { prefix?: string; source?: string } = {}): Promise<SnapshotInfo[]> {
    const r = await this.t.json<{ snapshots: SnapshotInfo[] }>({
      method: "GET",
      path: "/v1/snapshots",
      query: { prefix: opts.prefix || undefined, source: opts.source || undefined },
      signal: opts.signal,
    });
    return r.snapshots;
  }

  /** One snapshot of the token's: TOOL_NOT_FOUND when there is none by that name. */
  async getSnapshot(name: string, opts: CallOptions = {}): Promise<SnapshotInfo> {
    return this.t.json<SnapshotInfo>({ method: "GET", path: `/v1/snapshots/${encodeURIComponent(name)}`, signal: opts.signal });
  }

  /** Deletes a snapshot (its blobs no other snapshot uses are freed). */
  async deleteSnapshot(name: string, opts: CallOptions = {}): Promise<void> {
    await this.t.empty({ method: "DELETE", path: `/v1/snapshots/${encodeURIComponent(name)}`, signal: opts.signal });
  }
}
