// The drop-in for flow-state-dev's Sandbox: executeCommand never throws for what the command did.
import { test } from "node:test";
import assert from "node:assert/strict";
import { FlowStateSandbox, flowStateSandbox, TIMEOUT_EXIT_CODE } from "../dist/index.js";
import { client, code, has, newSandbox } from "./helpers.mjs";

test("executeCommand: non-zero exit, stdout and stderr apart, no throw", async (t) => {
  const fs = await flowStateSandbox(client);
  t.after(() => fs.stop());
  const r = await fs.executeCommand("echo out; echo err >&2; exit 3");
  assert.deepEqual(r, { stdout: "out\n", stderr: "err\n", exitCode: 3 });
  // Shell syntax works: the command string runs under bash -c (or sh -c).
  const pipe = await fs.executeCommand("printf 'b\\na\\n' | sort | tr '\\n' ' '");
  assert.deepEqual(pipe, { stdout: "a b ", stderr: "", exitCode: 0 });
  const missing = await fs.executeCommand("no-such-command-anywhere");
  assert.equal(missing.exitCode, 127);
});

test("executeCommand: a timeout is exit code 124 with what was printed", async (t) => {
  const sb = await newSandbox(t);
  const fs = new FlowStateSandbox(sb, { timeoutMs: 1500 });
  const r = await fs.executeCommand("echo partial; exec sleep 30");
  assert.equal(r.exitCode, TIMEOUT_EXIT_CODE);
  assert.equal(r.stdout, "partial\n");
  assert.match(r.stderr, /^PROCESS_TIMEOUT: /m);
});

test("bash where the sandbox has it, sh otherwise, or the shell asked", async (t) => {
  const sb = await newSandbox(t);
  const fs = new FlowStateSandbox(sb);
  const r = await fs.executeCommand('echo "$0"');
  assert.equal(r.stdout, (await has(sb, "bash")) ? "bash\n" : "sh\n");
  const sh = new FlowStateSandbox(sb, { shell: ["sh", "-c"] });
  assert.equal((await sh.executeCommand('echo "$0"')).stdout, "sh\n");
});

test("files under /workspace, as flow-state's FileSync names them", async (t) => {
  const sb = await newSandbox(t);
  const fs = new FlowStateSandbox(sb, { env: { GREETING: "hi" } });
  await fs.writeFile("/workspace/docs/readme.md", "# title\n");
  await fs.writeFile("notes.txt", "relative\n");
  assert.equal(await fs.readFile("/workspace/docs/readme.md"), "# title\n");
  assert.equal(await fs.readFile("notes.txt"), "relative\n");
  assert.equal(await sb.readFile("docs/readme.md", "utf8"), "# title\n");

  // FileSync's walk: find over the destination, then readFile of each path it prints.
  const walk = await fs.executeCommand("find /workspace -type f -not -path '*/.git/*' | sort");
  assert.equal(walk.exitCode, 0, walk.stderr);
  const ws = sb.info.capabilities.workspace;
  const found = walk.stdout.trim().split("\n");
  assert.deepEqual(found, [`${ws}/docs/readme.md`, `${ws}/notes.txt`]);
  for (const p of found) assert.ok((await fs.readFile(p)).length > 0);

  const env = await fs.executeCommand('echo "$GREETING"');
  assert.equal(env.stdout, "hi\n");
  await assert.rejects(fs.readFile("/workspace/nope.txt"), code("TOOL_NOT_FOUND"));
  await assert.rejects(fs.readFile("../../etc/passwd"), code("TOOL_PATH_ESCAPE"));
});

test("stop deletes the sandbox it created, once", async () => {
  const fs = await flowStateSandbox(client);
  assert.equal((await fs.executeCommand("true")).exitCode, 0);
  await fs.stop();
  await fs.stop();
  await assert.rejects(client.getSandbox(fs.sandboxId), code("SANDBOX_UNAVAILABLE"));
  // After stop the sandbox is gone: that is an error, not a command result.
  await assert.rejects(fs.executeCommand("true"), code("SANDBOX_UNAVAILABLE"));
});

test("a sandbox given is kept by stop", async (t) => {
  const sb = await newSandbox(t);
  const fs = await flowStateSandbox(client, { sandbox: sb });
  await fs.stop();
  assert.equal((await client.getSandbox(sb.id)).id, sb.id);
});

test("real work through executeCommand: edit, build, commit", async (t) => {
  const fs = await flowStateSandbox(client);
  t.after(() => fs.stop());
  await fs.writeFile("/workspace/app/greet.sh", '#!/bin/sh\necho "hello, $1"\n');
  const run = await fs.executeCommand("cd /workspace/app && chmod +x greet.sh && ./greet.sh world > out.txt && cat out.txt");
  assert.deepEqual(run, { stdout: "hello, world\n", stderr: "", exitCode: 0 });
  assert.equal(await fs.readFile("/workspace/app/out.txt"), "hello, world\n");
  if ((await fs.executeCommand("command -v git")).exitCode === 0) {
    const git = await fs.executeCommand(
      "cd /workspace/app && git init -q && git add -A && git -c user.email=a@b -c user.name=a commit -qm first && git log --format=%s",
    );
    assert.deepEqual(git, { stdout: "first\n", stderr: "", exitCode: 0 });
  }
});
