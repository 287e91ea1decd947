import { ABORTED, NETWORK_ERROR, SandboxerError, UNEXPECTED_RESPONSE } from "./errors";
import type { AbortSignalLike, WireError } from "./types";

/** @internal One request of the API. */
export interface Request {
  method: string;
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** A JSON body. */
  json?: unknown;
  /** A raw body (files, process stdin). */
  body?: Uint8Array | string;
  headers?: Record<string, string>;
  signal?: AbortSignalLike;
}

/**
 * @internal
 * The HTTP transport: the base URL, the bearer token and the translation of every refusal into a
 * SandboxerError. Node's global fetch is the only thing it needs.
 */
export class Transport {
  readonly baseUrl: string;
  // An ES private field: console.log of a client or sandbox does not show the token.
  readonly #token?: string;

  constructor(baseUrl: string, token?: string) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.#token = token;
  }

  /** Sends req and returns the answer when its status is 2xx; otherwise throws its error. */
  async send(req: Request): Promise<Response> {
    let url = this.baseUrl + req.path;
    if (req.query) {
      const q = Object.entries(req.query)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
      if (q.length > 0) url += "?" + q.join("&");
    }
    const headers: Record<string, string> = { ...req.headers };
    if (this.#token) headers["Authorization"] = `Bearer ${this.#token}`;
    let body: string | Uint8Array | undefined;
    if (req.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(req.json);
    } else if (req.body !== undefined) {
      headers["Content-Type"] = "application/octet-stream";
      body = req.body;
    }
    let res: Response;
    try {
      res = await fetch(url, { method: req.method, headers, body, signal: req.signal });
    } catch (err) {
      throw transportError(err, req.signal, `${req.method} ${url}`);
    }
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  /** Sends req and decodes the JSON answer. */
  async json<T>(req: Request): Promise<T> {
    const res = await this.send(req);
    try {
      return (await res.json()) as T;
    } catch (err) {
      throw transportError(err, req.signal, `${req.method} ${req.path}: reading the answer`);
    }
  }

  /** Sends req and returns the answer's body. */
  async bytes(req: Request): Promise<Uint8Array> {
    const res = await this.send(req);
    try {
      return new Uint8Array(await res.arrayBuffer());
    } catch (err) {
      throw transportError(err, req.signal, `${req.method} ${req.path}: reading the answer`);
    }
  }

  /** Sends req and discards the answer's body. */
  async empty(req: Request): Promise<void> {
    const res = await this.send(req);
    try {
      await res.arrayBuffer();
    } catch (err) {
      throw transportError(err, req.signal, `${req.method} ${req.path}: reading the answer`);
    }
  }
}

/** @internal The SandboxerError of a fetch that failed without an answer. */
export function transportError(err: unknown, signal: AbortSignalLike | undefined, what: string): SandboxerError {
  if (err instanceof SandboxerError) return err;
  if (signal?.aborted) return new SandboxerError(ABORTED, `${what}: aborted`, 0, {}, undefined, err);
  const msg = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && (err as { cause?: unknown }).cause;
  const more = cause instanceof Error ? ` (${cause.message})` : "";
  return new SandboxerError(NETWORK_ERROR, `${what}: ${msg}${more}`, 0, {}, undefined, err);
}

/** The SandboxerError of an answer whose status is not 2xx. */
async function errorOf(res: Response): Promise<SandboxerError> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { error?: WireError; result?: unknown };
    if (body && body.error && typeof body.error.code === "string") {
      return SandboxerError.from(body.error, res.status, body.result);
    }
  } catch {
    // Not the API's error shape (a proxy's page?): reported below with its text.
  }
  return new SandboxerError(UNEXPECTED_RESPONSE, `HTTP ${res.status}: ${text.slice(0, 500)}`, res.status);
}

/**
 * @internal
 * The JSON objects of an NDJSON answer, one per line, as they come. Ending the iteration early
 * (break, return, throw) cancels the answer, which ends the request: the server then stops what
 * it was streaming (a command is killed).
 */
export async function* ndjson<T>(res: Response, signal: AbortSignalLike | undefined, what: string): AsyncGenerator<T, void, undefined> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let done = false;
  try {
    for (;;) {
      let r: SbxReadResult;
      try {
        r = await reader.read();
      } catch (err) {
        throw transportError(err, signal, what);
      }
      if (r.done) break;
      buf += dec.decode(r.value, { stream: true });
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim() !== "") yield parseLine<T>(line, what);
      }
    }
    buf += dec.decode();
    if (buf.trim() !== "") yield parseLine<T>(buf, what);
    done = true;
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
  }
}

function parseLine<T>(line: string, what: string): T {
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new SandboxerError(UNEXPECTED_RESPONSE, `${what}: a line that is not JSON: ${line.slice(0, 200)}`);
  }
}

/** Bytes to base64 (btoa takes a "binary string", one character per byte). */
export function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** Base64 to bytes: the output of a command or process read with `encoding: "base64"`. */
export function fromBase64(data: string): Uint8Array {
  const s = atob(data);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
