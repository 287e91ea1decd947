// The few globals of Node >= 18 the SDK uses, declared here because neither @types/node nor the
// DOM library is installed where it is built (Debian's node-typescript, no npm). Only what the
// code calls is declared, loosely; none of these names appears in the SDK's public types, so the
// emitted .d.ts files need neither @types/node nor the DOM library of their users.

interface SbxHeaders {
  get(name: string): string | null;
}

interface SbxReadResult {
  done: boolean;
  value?: Uint8Array;
}

interface SbxReader {
  read(): Promise<SbxReadResult>;
  cancel(reason?: unknown): Promise<void>;
  releaseLock(): void;
}

interface SbxBody {
  getReader(): SbxReader;
}

interface Response {
  readonly ok: boolean;
  readonly status: number;
  readonly headers: SbxHeaders;
  readonly body: SbxBody | null;
  text(): Promise<string>;
  json(): Promise<unknown>;
  arrayBuffer(): Promise<ArrayBuffer>;
}

interface RequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array | null;
  signal?: unknown;
  // Node's fetch (undici) needs it for a streamed request body; unused for whole bodies.
  duplex?: "half";
}

declare function fetch(url: string, init?: RequestInit): Promise<Response>;

declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean });
  decode(input?: Uint8Array, options?: { stream?: boolean }): string;
}

declare class TextEncoder {
  encode(input?: string): Uint8Array;
}

declare function btoa(data: string): string;
declare function atob(data: string): string;

declare const process: { env: Record<string, string | undefined> } | undefined;
