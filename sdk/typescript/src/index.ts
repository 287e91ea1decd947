// @sandboxer/sdk: the TypeScript client of sandboxerd serve's HTTP API (docs/api.md). Node >= 18,
// no dependencies: its global fetch is the transport.

export { SandboxerClient, DEFAULT_URL } from "./client";
export type { ClientOptions } from "./client";
export { Sandbox, SandboxProcess, ExecStream } from "./sandbox";
export { SandboxerError, isSandboxerError, NETWORK_ERROR, UNEXPECTED_RESPONSE, ABORTED } from "./errors";
export { fromBase64, toBase64 } from "./http";
export * from "./types";
export { FlowStateSandbox, flowStateSandbox, TIMEOUT_EXIT_CODE } from "./flowstate";
export type { CommandResult, FlowStateSandboxLike, FlowStateOptions } from "./flowstate";
export { createSmithersTools, getDefinedToolMetadata, smithersToolMetadata } from "./smithers";
export type {
  SmithersTool,
  SmithersTools,
  SmithersToolsOptions,
  SmithersToolContext,
  ToolMetadata,
  ToolSchema,
  JsonSchema,
  ToolExecuteOptions,
  ReadInput,
  WriteInput,
  EditInput,
  GrepInput,
  BashInput,
} from "./smithers";
