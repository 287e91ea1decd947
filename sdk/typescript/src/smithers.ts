// A drop-in for smithers-orchestrator's five built-in tools, read, write, edit, grep and bash:
// the same inputs, outputs and error codes, shaped as smithers shapes them (AI SDK tools, that is
// {description, inputSchema, execute}, carrying smithers' metadata under
// Symbol.for("smithers.tool.metadata")), but run in a sandboxer sandbox through
// POST /v1/sandboxes/{id}/tools/{name} instead of on the workflow's machine. The swap is the import:
//
//   import { read, write, edit, grep, bash } from "smithers-orchestrator";   // before
//   import { read, write, edit, grep, bash } from "@sandboxer/sdk/smithers"; // after
//
// The module-level tools use a default sandbox (configureSmithersTools, else $SANDBOXER_SANDBOX_ID,
// else one created on first use); createSmithersTools binds the five to a sandbox of your own.

import { SandboxerClient } from "./client";
import { SandboxerError, isSandboxerError } from "./errors";
import { Sandbox } from "./sandbox";
import type { AbortSignalLike, CreateSandboxOptions, ToolCallOptions } from "./types";

/** The key of smithers' tool metadata (smithers' getDefinedToolMetadata reads it). */
export const smithersToolMetadata: unique symbol = Symbol.for("smithers.tool.metadata") as never;
// The AI SDK's marks of a Schema made by jsonSchema(): it then takes inputSchema as it takes
// zodSchema's output, with the JSON Schema for the model and validate for the arguments.
const schemaSymbol = Symbol.for("vercel.ai.schema");
const validatorSymbol = Symbol.for("vercel.ai.validator");

/** smithers' metadata of a defined tool. */
export interface ToolMetadata {
  name: string;
  sideEffect: boolean;
  idempotent: boolean;
}

/** The AI SDK's Schema: a JSON Schema and a validator of the tool's arguments. */
export interface ToolSchema<T> {
  readonly jsonSchema: JsonSchema;
  validate(value: unknown): { success: true; value: T } | { success: false; error: Error };
}

/** The subset of JSON Schema the five tools' inputs use. */
export interface JsonSchema {
  type: "object" | "string" | "array";
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: JsonSchema;
  description?: string;
}

/** What the AI SDK passes execute besides the arguments (only abortSignal is used). */
export interface ToolExecuteOptions {
  abortSignal?: AbortSignalLike;
  toolCallId?: string;
  [key: string]: unknown;
}

/** One tool, shaped as smithers' defineTool results are. */
export interface SmithersTool<In> {
  description: string;
  inputSchema: ToolSchema<In>;
  execute(args: In, options?: ToolExecuteOptions): Promise<string>;
  readonly [smithersToolMetadata]: ToolMetadata;
}

export interface ReadInput {
  path: string;
}
export interface WriteInput {
  path: string;
  content: string;
}
export interface EditInput {
  path: string;
  patch: string;
}
export interface GrepInput {
  pattern: string;
  path?: string;
}
export interface BashInput {
  cmd: string;
  args?: string[];
  opts?: { cwd?: string };
}

/**
 * The five tools, keyed by name as smithers' `tools` bundle. A type alias, not an interface: the
 * AI SDK's `tools` is a Record, which only an alias is assignable to.
 */
export type SmithersTools = {
  read: SmithersTool<ReadInput>;
  write: SmithersTool<WriteInput>;
  edit: SmithersTool<EditInput>;
  grep: SmithersTool<GrepInput>;
  bash: SmithersTool<BashInput>;
};

/**
 * The journal position of a call. smithers' own getToolContext() (from
 * "smithers-orchestrator/tools") returns one: pass it as `context` and each call is journaled
 * under the task's run, node, iteration and attempt.
 */
export interface SmithersToolContext {
  runId?: string;
  nodeId?: string;
  iteration?: number;
  attempt?: number;
  idempotencyKey?: string | null;
}

export interface SmithersToolsOptions {
  /** Called for each call: its journal position. */
  context?: () => SmithersToolContext | null | undefined;
}

const str: JsonSchema = { type: "string" };
const obj = (properties: Record<string, JsonSchema>, required: string[]): JsonSchema => ({
  type: "object",
  properties,
  required,
  additionalProperties: false,
});

// Descriptions and flags as smithers' own tools have them (sideEffect/idempotent: its table).
const specs = {
  read: { description: "Read a file", sideEffect: false, schema: obj({ path: str }, ["path"]) },
  write: { description: "Write a file", sideEffect: true, schema: obj({ path: str, content: str }, ["path", "content"]) },
  edit: { description: "Apply a unified diff patch to a file", sideEffect: true, schema: obj({ path: str, patch: str }, ["path", "patch"]) },
  grep: { description: "Search for a pattern in files", sideEffect: false, schema: obj({ pattern: str, path: str }, ["pattern"]) },
  bash: {
    description:
      'Run an executable with arguments (no shell parsing: for pipes or redirects run a shell explicitly, cmd "sh", args ["-c", "..."])',
    sideEffect: true,
    schema: obj({ cmd: str, args: { type: "array", items: str }, opts: obj({ cwd: str }, []) }, ["cmd"]),
  },
} as const;

type Name = keyof typeof specs;

/** The five tools bound to a sandbox (or a function that gives one, called at each call). */
export function createSmithersTools(sandbox: Sandbox | (() => Promise<Sandbox>), opts: SmithersToolsOptions = {}): SmithersTools {
  const get = typeof sandbox === "function" ? sandbox : async () => sandbox;
  const make = <In>(name: Name): SmithersTool<In> => defineSandboxTool<In>(name, get, opts);
  return {
    read: make<ReadInput>("read"),
    write: make<WriteInput>("write"),
    edit: make<EditInput>("edit"),
    grep: make<GrepInput>("grep"),
    bash: make<BashInput>("bash"),
  };
}

function defineSandboxTool<In>(name: Name, sandbox: () => Promise<Sandbox>, opts: SmithersToolsOptions): SmithersTool<In> {
  const spec = specs[name];
  const schema = spec.schema as JsonSchema;
  const inputSchema = {
    [schemaSymbol]: true,
    [validatorSymbol]: true,
    _type: undefined,
    jsonSchema: schema,
    validate(value: unknown) {
      const problem = check(schema, value, "");
      return problem === null
        ? { success: true as const, value: value as In }
        : { success: false as const, error: new SandboxerError("INVALID_INPUT", `${name}: ${problem}`) };
    },
  };
  return {
    description: spec.description,
    inputSchema,
    async execute(args: In, options: ToolExecuteOptions = {}): Promise<string> {
      const sb = await sandbox();
      const call: ToolCallOptions = { ...position(opts.context?.()), signal: options.abortSignal };
      const reply = await sb.tool(name, args as unknown as Record<string, unknown>, call);
      if (!reply.ok) {
        throw SandboxerError.from(reply.error ?? { code: "INTERNAL", message: `${name}: failed without an error`, details: {} }, 200);
      }
      return reply.output ?? "";
    },
    [smithersToolMetadata]: { name, sideEffect: spec.sideEffect, idempotent: !spec.sideEffect },
  };
}

/** The headers of a smithers context; smithers' stub context has attempt 0, the journal's first is 1. */
function position(ctx: SmithersToolContext | null | undefined): ToolCallOptions {
  if (!ctx) return {};
  const p: ToolCallOptions = {};
  if (ctx.runId) p.runId = ctx.runId;
  if (ctx.nodeId) p.nodeId = ctx.nodeId;
  if (Number.isInteger(ctx.iteration) && (ctx.iteration as number) >= 0) p.iteration = ctx.iteration;
  if (Number.isInteger(ctx.attempt) && (ctx.attempt as number) >= 1) p.attempt = ctx.attempt;
  if (ctx.idempotencyKey) p.idempotencyKey = ctx.idempotencyKey;
  return p;
}

/** null when value matches schema, else what is wrong with it. */
function check(schema: JsonSchema, value: unknown, at: string): string | null {
  const where = at || "input";
  switch (schema.type) {
    case "string":
      return typeof value === "string" ? null : `${where} must be a string`;
    case "array": {
      if (!Array.isArray(value)) return `${where} must be an array`;
      for (let i = 0; i < value.length; i++) {
        const p = schema.items ? check(schema.items, value[i], `${where}[${i}]`) : null;
        if (p) return p;
      }
      return null;
    }
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return `${where} must be an object`;
      const v = value as Record<string, unknown>;
      for (const k of schema.required ?? []) if (v[k] === undefined) return `${at ? at + "." : ""}${k} is required`;
      for (const [k, x] of Object.entries(v)) {
        const sub = schema.properties?.[k];
        if (!sub) {
          if (schema.additionalProperties === false) return `${at ? at + "." : ""}${k} is not a known field`;
          continue;
        }
        if (x === undefined) continue;
        const p = check(sub, x, at ? `${at}.${k}` : k);
        if (p) return p;
      }
      return null;
    }
  }
}

/** smithers' getDefinedToolMetadata: the metadata of a tool, null for anything else. */
export function getDefinedToolMetadata(value: unknown): ToolMetadata | null {
  return value && typeof value === "object" ? ((value as { [smithersToolMetadata]?: ToolMetadata })[smithersToolMetadata] ?? null) : null;
}

// The default sandbox of the module-level tools.
let defaults: { sandbox?: Sandbox; client?: SandboxerClient; create?: CreateSandboxOptions; context?: SmithersToolsOptions["context"] } = {};
let pending: Promise<Sandbox> | undefined;
let created: Sandbox | undefined;

/**
 * Sets what the module-level tools use: a sandbox, or a client (default: $SANDBOXER_URL,
 * $SANDBOXER_TOKEN) and the options of the sandbox it creates on first use; and the journal
 * position of each call (`context: getToolContext`).
 */
export function configureSmithersTools(opts: {
  sandbox?: Sandbox;
  client?: SandboxerClient;
  create?: CreateSandboxOptions;
  context?: SmithersToolsOptions["context"];
}): void {
  defaults = { ...opts };
  pending = opts.sandbox ? Promise.resolve(opts.sandbox) : undefined;
}

/**
 * The module-level tools' sandbox: the configured one, else $SANDBOXER_SANDBOX_ID, else one
 * created on first use (it lives until closeSmithersSandbox() or its idle timeout).
 */
export function smithersSandbox(): Promise<Sandbox> {
  if (!pending) {
    const client = defaults.client ?? new SandboxerClient();
    const id = typeof process !== "undefined" && process ? process.env.SANDBOXER_SANDBOX_ID : undefined;
    pending = id
      ? Promise.resolve(client.sandbox(id))
      : client.createSandbox(defaults.create ?? {}).then((sb) => (created = sb));
    // A failed creation is retried by the next call rather than remembered.
    pending.catch(() => (pending = undefined));
  }
  return pending;
}

/** Deletes the sandbox the module-level tools created, if they did; the next call makes another. */
export async function closeSmithersSandbox(): Promise<void> {
  const sb = created;
  created = undefined;
  pending = defaults.sandbox ? Promise.resolve(defaults.sandbox) : undefined;
  if (!sb) return;
  await sb.delete().catch((err) => {
    if (!isSandboxerError(err, "SANDBOX_UNAVAILABLE")) throw err;
  });
}

const defaultTools = createSmithersTools(smithersSandbox, { context: () => defaults.context?.() });

export const read = defaultTools.read;
export const write = defaultTools.write;
export const edit = defaultTools.edit;
export const grep = defaultTools.grep;
export const bash = defaultTools.bash;
/** The five, keyed by name, as smithers' `tools`. */
export const tools: SmithersTools = defaultTools;
