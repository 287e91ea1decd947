// The client: a sandbox, a command, files, a streamed command, a tool call, a background process.
import { SandboxerClient, SandboxerError } from "@sandboxer/sdk";

declare const console: { log(...args: unknown[]): void };

export async function basic(): Promise<void> {
  const client = new SandboxerClient({ baseUrl: "http://127.0.0.1:7878" }); // token: $SANDBOXER_TOKEN
  const sb = await client.createSandbox({ adapter: "docker", ttlSeconds: 600 });
  try {
    await sb.writeFile("hello.py", 'print("hello")\n');
    const r = await sb.exec(["python3", "hello.py"]); // a non-zero exit is r.exitCode, not an error
    console.log(r.exitCode, r.stdout, r.stderr);

    const stream = sb.execStream({ args: ["sh", "-c", "make test"], timeoutMs: 120_000 });
    for await (const chunk of stream) console.log(chunk.stream, chunk.data);
    console.log((await stream.result()).exitCode);

    const reply = await sb.tool("read", { path: "hello.py" }, { runId: "run-1", nodeId: "review" });
    if (!reply.ok) console.log(reply.error?.code);

    const server = await sb.startProcess(["python3", "-u", "-m", "http.server", "8000"]);
    for await (const out of server.follow()) {
      console.log(out.stderr);
      if (out.stderr.includes("Serving")) break;
    }
    await server.signal("TERM");
  } catch (err) {
    if (err instanceof SandboxerError && err.code === "TOOL_PATH_ESCAPE") console.log(err.status, err.details);
    throw err;
  } finally {
    await sb.delete();
  }
}
