// smithers-orchestrator: the five built-in tools, run in a sandbox. The one line that changes:
//   import { read, write, edit, grep, bash } from "smithers-orchestrator";
import { read, write, edit, grep, bash, tools, configureSmithersTools } from "@sandboxer/sdk/smithers";
import { SandboxerClient, getDefinedToolMetadata } from "@sandboxer/sdk";

// The part of the AI SDK's Tool type that agents read (description, inputSchema, execute): the
// assignments below check that the tools fit where smithers' own go, as `tools: { read, ... }`.
interface AISDKSchema<T> {
  readonly jsonSchema: unknown;
  validate?(value: unknown): { success: true; value: T } | { success: false; error: Error };
}
interface AISDKTool<In, Out> {
  description?: string;
  inputSchema: AISDKSchema<In>;
  execute?(args: In, options: { toolCallId: string; messages: unknown[]; abortSignal?: { readonly aborted: boolean; addEventListener(type: "abort", listener: () => void): void; removeEventListener(type: "abort", listener: () => void): void } }): PromiseLike<Out>;
}

const agentTools: Record<string, AISDKTool<any, string>> = { read, write, edit, grep, bash };
const bundle: Record<string, AISDKTool<any, string>> = tools;

export async function smithers(): Promise<string> {
  // Optional: where the tools run (default: $SANDBOXER_SANDBOX_ID, else a sandbox made on first
  // use), and the journal position of each call (smithers' getToolContext).
  configureSmithersTools({ client: new SandboxerClient(), create: { adapter: "docker" } });
  await write.execute({ path: "a.txt", content: "one\n" });
  const meta = getDefinedToolMetadata(bash); // { name: "bash", sideEffect: true, idempotent: false }
  return `${Object.keys(agentTools).length} ${Object.keys(bundle).length} ${meta?.name}`;
}
