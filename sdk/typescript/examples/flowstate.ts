// flow-state-dev: sandboxer as the bash tool's custom provider.
import { SandboxerClient } from "@sandboxer/sdk";
import { flowStateSandbox } from "@sandboxer/sdk/flow-state";

// flow-state-dev's Sandbox interface, as @flow-state-dev/tools/bash declares it (types.ts): the
// assignment below is the compile-time check that the drop-in fits.
interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}
interface Sandbox {
  executeCommand(command: string): Promise<CommandResult>;
  readFile(path: string): Promise<string>;
  writeFile(path: string, content: string): Promise<void>;
  stop?(): Promise<void>;
  hostMountSource?: string;
}

export async function flowState(): Promise<CommandResult> {
  const sandbox: Sandbox = await flowStateSandbox(new SandboxerClient(), { create: { adapter: "docker" } });
  // createBashTool({ collections, provider: { type: "custom", sandbox } }) takes it as it is.
  await sandbox.writeFile("/workspace/src/index.ts", "export const x = 1;\n");
  const r = await sandbox.executeCommand("ls /workspace/src && exit 3"); // never throws for exit 3
  await sandbox.stop?.();
  return r;
}
