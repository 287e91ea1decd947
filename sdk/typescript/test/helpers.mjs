// Shared by the tests: the client of the server under test ($SANDBOXER_URL, started by
// sdk/typescript_test.go) and sandboxes that are deleted when their test ends.
import { SandboxerClient, isSandboxerError } from "../dist/index.js";

export const url = process.env.SANDBOXER_URL;
if (!url) throw new Error("SANDBOXER_URL is unset: run these tests through `go test ./sdk/` (or start sandboxerd serve and set it)");

export const client = new SandboxerClient({ baseUrl: url, token: process.env.SANDBOXER_TOKEN });

/** A new sandbox of the server's default adapter, deleted when the test t ends. */
export async function newSandbox(t, opts = {}) {
  const sb = await client.createSandbox(opts);
  t.after(async () => {
    await sb.delete().catch((err) => {
      if (!isSandboxerError(err, "SANDBOX_UNAVAILABLE")) throw err;
    });
  });
  return sb;
}

/** Whether the sandbox has the program prog on its PATH. */
export async function has(sb, prog) {
  const r = await sb.exec(["sh", "-c", `command -v ${prog}`]);
  return r.exitCode === 0;
}

/** Rejects with err's code (and status), as assert.rejects checks it. */
export function code(c, status) {
  return (err) => {
    if (!isSandboxerError(err, c)) throw err;
    if (status !== undefined && err.status !== status) throw new Error(`${c}: status ${err.status}, want ${status}`);
    return true;
  };
}
