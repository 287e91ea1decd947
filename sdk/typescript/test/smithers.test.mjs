// The drop-in for smithers-orchestrator's read, write, edit, grep and bash: same inputs, outputs
// and error codes, run in a sandbox.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createSmithersTools, getDefinedToolMetadata, SandboxerError } from "../dist/index.js";
import * as smithers from "../dist/smithers.js";
import { client, code, has, newSandbox } from "./helpers.mjs";

test("the tools are shaped as smithers' (AI SDK tools with smithers' metadata)", () => {
  const { tools } = smithers;
  assert.deepEqual(Object.keys(tools), ["read", "write", "edit", "grep", "bash"]);
  const flags = {
    read: [false, true],
    grep: [false, true],
    write: [true, false],
    edit: [true, false],
    bash: [true, false],
  };
  for (const [name, tool] of Object.entries(tools)) {
    assert.equal(tool, smithers[name]);
    assert.equal(typeof tool.description, "string");
    assert.equal(typeof tool.execute, "function");
    // smithers reads this symbol (getDefinedToolMetadata); the AI SDK reads the schema's marks.
    assert.deepEqual(tool[Symbol.for("smithers.tool.metadata")], { name, sideEffect: flags[name][0], idempotent: flags[name][1] });
    assert.deepEqual(getDefinedToolMetadata(tool), { name, sideEffect: flags[name][0], idempotent: flags[name][1] });
    assert.equal(tool.inputSchema[Symbol.for("vercel.ai.schema")], true);
    assert.equal(tool.inputSchema.jsonSchema.type, "object");
    assert.equal(tool.inputSchema.jsonSchema.additionalProperties, false);
  }
  assert.deepEqual(tools.grep.inputSchema.jsonSchema.required, ["pattern"]);
  assert.deepEqual(tools.bash.inputSchema.validate({ cmd: "ls", args: ["-l"], opts: { cwd: "x" } }), {
    success: true,
    value: { cmd: "ls", args: ["-l"], opts: { cwd: "x" } },
  });
  for (const bad of [{}, { cmd: 1 }, { cmd: "ls", args: "-l" }, { cmd: "ls", extra: true }, { cmd: "ls", opts: { background: true } }]) {
    const v = tools.bash.inputSchema.validate(bad);
    assert.equal(v.success, false, JSON.stringify(bad));
    assert.equal(v.error.code, "INVALID_INPUT");
  }
  assert.equal(getDefinedToolMetadata({}), null);
  assert.equal(getDefinedToolMetadata(null), null);
});

test("write then read", async (t) => {
  const { read, write } = createSmithersTools(await newSandbox(t));
  assert.equal(await write.execute({ path: "src/deep/a.txt", content: "one\ntwo\nthree\n" }), "ok");
  assert.equal(await read.execute({ path: "src/deep/a.txt" }), "one\ntwo\nthree\n");
  await assert.rejects(read.execute({ path: "src/missing.txt" }), code("TOOL_NOT_FOUND", 200));
  await assert.rejects(read.execute({ path: "../../etc/passwd" }), code("TOOL_PATH_ESCAPE", 200));
  await assert.rejects(write.execute({ path: "../x", content: "no" }), code("TOOL_PATH_ESCAPE", 200));
});

test("edit applies a unified diff, and leaves the file alone when it does not apply", async (t) => {
  const sb = await newSandbox(t);
  const { edit, read, write } = createSmithersTools(sb);
  await write.execute({ path: "src/auth.ts", content: "function issue() {\n  const token = sign(payload);\n  return token;\n}\n" });
  const patch = [
    "--- a/src/auth.ts",
    "+++ b/src/auth.ts",
    "@@ -1,4 +1,5 @@",
    " function issue() {",
    "   const token = sign(payload);",
    '+  log("token issued");',
    "   return token;",
    " }",
    "",
  ].join("\n");
  assert.equal(await edit.execute({ path: "src/auth.ts", patch }), "ok");
  const after = await read.execute({ path: "src/auth.ts" });
  assert.equal(after, 'function issue() {\n  const token = sign(payload);\n  log("token issued");\n  return token;\n}\n');

  await assert.rejects(edit.execute({ path: "src/auth.ts", patch }), (err) => {
    assert.ok(err instanceof SandboxerError);
    assert.equal(err.code, "TOOL_PATCH_FAILED");
    assert.equal(err.details.hunk, 1);
    return true;
  });
  assert.equal(await read.execute({ path: "src/auth.ts" }), after);
  await assert.rejects(edit.execute({ path: "src/none.ts", patch }), code("TOOL_NOT_FOUND"));
  await assert.rejects(edit.execute({ path: "src/auth.ts", patch: "not a diff" }), code("INVALID_INPUT"));
});

test("grep: rg -n lines, empty for no match", async (t) => {
  const sb = await newSandbox(t);
  if (!(await has(sb, "rg"))) return t.skip("no rg in this sandbox's image");
  const { grep, write } = createSmithersTools(sb);
  await write.execute({ path: "src/auth.ts", content: "if (token.expired()) {\n}\nvalidateToken(token);\n" });
  await write.execute({ path: "tests/auth.test.ts", content: "const token = createTestToken();\n" });
  const all = (await grep.execute({ pattern: "token" })).split("\n").filter(Boolean).sort();
  assert.deepEqual(all, ["src/auth.ts:1:if (token.expired()) {", "src/auth.ts:3:validateToken(token);", "tests/auth.test.ts:1:const token = createTestToken();"]);
  assert.equal(await grep.execute({ pattern: "Token\\(", path: "tests" }), "tests/auth.test.ts:1:const token = createTestToken();\n");
  assert.equal(await grep.execute({ pattern: "nowhere-to-be-found" }), "");
  await assert.rejects(grep.execute({ pattern: "(unclosed" }), code("TOOL_GREP_FAILED"));
  await assert.rejects(grep.execute({ pattern: "x", path: "../.." }), code("TOOL_PATH_ESCAPE"));
});

test("bash: combined output, a non-zero exit throws TOOL_COMMAND_FAILED, network commands refused", async (t) => {
  const sb = await newSandbox(t);
  const { bash, write } = createSmithersTools(sb);
  assert.equal(await bash.execute({ cmd: "sh", args: ["-c", "echo out; echo err >&2"] }), "out\nerr\n");
  await write.execute({ path: "sub/f.txt", content: "x" });
  assert.equal(await bash.execute({ cmd: "ls", opts: { cwd: "sub" } }), "f.txt\n");
  await assert.rejects(bash.execute({ cmd: "sh", args: ["-c", "echo printed; exit 7"] }), (err) => {
    assert.equal(err.code, "TOOL_COMMAND_FAILED");
    assert.equal(err.details.exitCode, 7);
    assert.equal(err.details.output, "printed\n");
    return true;
  });
  await assert.rejects(bash.execute({ cmd: "curl", args: ["https://example.com"] }), code("TOOL_NETWORK_DISABLED"));
  await assert.rejects(bash.execute({ cmd: "git", args: ["push"] }), code("TOOL_GIT_REMOTE_DISABLED"));
  await assert.rejects(bash.execute({ cmd: "ls", opts: { cwd: "../.." } }), code("TOOL_PATH_ESCAPE"));
});

test("the journal position comes from the context (smithers' getToolContext)", async (t) => {
  const sb = await newSandbox(t);
  let ctx = { runId: "run-1", nodeId: "node-a", iteration: 2, attempt: 1, idempotencyKey: "key-1" };
  const { write, read } = createSmithersTools(sb, { context: () => ctx });
  assert.equal(await write.execute({ path: "a.txt", content: "x" }), "ok");
  // smithers' stub context has attempt 0: sent as the journal's default (1), not refused.
  ctx = { runId: "", nodeId: "", iteration: 0, attempt: 0 };
  assert.equal(await read.execute({ path: "a.txt" }), "x");
});

test("module-level tools: a sandbox configured, or made on first use and closed", async (t) => {
  const sb = await newSandbox(t);
  smithers.configureSmithersTools({ sandbox: sb });
  assert.equal(await smithers.write.execute({ path: "m.txt", content: "configured" }), "ok");
  assert.equal(await sb.readFile("m.txt", "utf8"), "configured");

  smithers.configureSmithersTools({ client });
  t.after(() => smithers.closeSmithersSandbox());
  assert.equal(await smithers.tools.bash.execute({ cmd: "sh", args: ["-c", "echo made"] }), "made\n");
  const made = await smithers.smithersSandbox();
  assert.notEqual(made.id, sb.id);
  assert.equal((await client.getSandbox(made.id)).id, made.id);
  await smithers.closeSmithersSandbox();
  await assert.rejects(client.getSandbox(made.id), code("SANDBOX_UNAVAILABLE"));
});
