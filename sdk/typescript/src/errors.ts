import type { WireError } from "./types";

/**
 * Codes of failures the SDK reports itself, where no answer of the server carries one: the
 * server could not be reached, or answered something that is not the API's error shape.
 */
export const NETWORK_ERROR = "NETWORK_ERROR";
export const UNEXPECTED_RESPONSE = "UNEXPECTED_RESPONSE";
/** The caller's AbortSignal ended the request. */
export const ABORTED = "ABORTED";

/**
 * A refusal of the API ({"ok":false,"error":{code,message,details}}), or a failed tool call when
 * a helper turns it into an exception (the smithers tools do). Match on `code`, never on the
 * message: TOOL_PATH_ESCAPE, TOOL_NOT_FOUND, SANDBOX_UNAVAILABLE, UNAUTHORIZED, FORBIDDEN,
 * LIMIT_EXCEEDED, PROCESS_TIMEOUT, ... (docs/api.md), or the SDK's own NETWORK_ERROR,
 * UNEXPECTED_RESPONSE and ABORTED.
 */
export class SandboxerError extends Error {
  /** The API's error code. */
  readonly code: string;
  /** HTTP status of the answer (200 for a failed tool call, 0 when there was no answer). */
  readonly status: number;
  readonly details: Record<string, unknown>;
  /** exec: the partial result of a command that ran past its timeout or was cancelled. */
  readonly result?: unknown;

  constructor(code: string, message: string, status = 0, details: Record<string, unknown> = {}, result?: unknown, cause?: unknown) {
    super(message);
    this.name = "SandboxerError";
    this.code = code;
    this.status = status;
    this.details = details;
    if (result !== undefined) this.result = result;
    if (cause !== undefined) (this as { cause?: unknown }).cause = cause;
  }

  /** The error of a wire reply. */
  static from(e: WireError, status: number, result?: unknown): SandboxerError {
    return new SandboxerError(e.code, e.message, status, e.details ?? {}, result);
  }
}

/** Whether err is a SandboxerError with code (one of codes). */
export function isSandboxerError(err: unknown, ...codes: string[]): err is SandboxerError {
  return err instanceof SandboxerError && (codes.length === 0 || codes.includes(err.code));
}
