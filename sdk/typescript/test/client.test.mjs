// The client against a real sandboxerd serve: sandboxes, commands, files, tool calls,
// background processes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SandboxerClient, SandboxerError, fromBase64 } from "../dist/index.js";
import { client, code, has, newSandbox, url } from "./helpers.mjs";

test("health and the sandbox's record", async (t) => {
  const h = await client.health();
  assert.equal(h.ok, true);
  assert.ok(h.adapters.length > 0);

  const sb = await newSandbox(t);
  assert.match(sb.id, /^sbx-/);
  assert.equal(sb.info.id, sb.id);
  assert.ok(sb.info.capabilities.workspace);

  const again = await client.getSandbox(sb.id);
  assert.equal(again.info.adapter, sb.info.adapter);
  const ids = (await client.listSandboxes()).map((s) => s.id);
  assert.ok(ids.includes(sb.id), `${sb.id} not in ${ids}`);

  const extended = await sb.extend({ ttlSeconds: 600, idleTimeoutSeconds: 120 });
  assert.equal(extended.idleTimeoutSeconds, 120);
  assert.ok(Date.parse(extended.expiresAt) > Date.now() + 500_000);
});

test("exec: a non-zero exit is data, stdout and stderr apart", async (t) => {
  const sb = await newSandbox(t);
  const r = await sb.exec(["sh", "-c", "echo out; echo err >&2; exit 7"]);
  assert.equal(r.exitCode, 7);
  assert.equal(r.stdout, "out\n");
  assert.equal(r.stderr, "err\n");
  assert.equal(r.encoding, "utf8");
  assert.equal(typeof r.durationMs, "number");
  assert.equal(r.receipt.stdoutBytes, 4);
  assert.equal(r.receipt.stderrBytes, 4);
});

test("exec: stdin, env, dir, bytes and timeout", async (t) => {
  const sb = await newSandbox(t);
  const text = await sb.exec({ args: ["cat"], stdin: "from stdin\n" });
  assert.equal(text.stdout, "from stdin\n");

  const bytes = new Uint8Array([0, 1, 2, 0xfe, 0xff, 10]);
  const bin = await sb.exec({ args: ["cat"], stdin: bytes, encoding: "base64" });
  assert.deepEqual(fromBase64(bin.stdout), bytes);

  const env = await sb.exec({ args: ["sh", "-c", 'echo "$A/$B"'], env: { A: "1", B: "two" } });
  assert.equal(env.stdout, "1/two\n");

  await sb.writeFile("sub/marker", "");
  const dir = await sb.exec({ args: ["ls"], dir: "sub" });
  assert.equal(dir.stdout, "marker\n");

  await assert.rejects(sb.exec({ args: ["sh", "-c", "echo partial; exec sleep 30"], timeoutMs: 1500 }), (err) => {
    assert.ok(err instanceof SandboxerError);
    assert.equal(err.code, "PROCESS_TIMEOUT");
    assert.equal(err.status, 422);
    assert.equal(err.result.stdout, "partial\n");
    return true;
  });

  await assert.rejects(sb.exec(["no-such-program-here"]), code("PROCESS_FAILED", 422));
  await assert.rejects(sb.exec("echo joined"), TypeError);
});

test("execStream: chunks as they come, then the result", async (t) => {
  const sb = await newSandbox(t);
  const st = sb.execStream(["sh", "-c", "echo one; echo two >&2; echo three; exit 3"]);
  const out = { stdout: "", stderr: "" };
  for await (const c of st) out[c.stream] += c.data;
  assert.deepEqual(out, { stdout: "one\nthree\n", stderr: "two\n" });
  const r = await st.result();
  assert.equal(r.exitCode, 3);
  assert.equal(r.stdout, "");

  // result() alone reads the stream to its end.
  const r2 = await sb.execStream(["sh", "-c", "echo x; exit 5"]).result();
  assert.equal(r2.exitCode, 5);

  // A timeout ends the stream with the error and the partial result.
  const late = sb.execStream({ args: ["sh", "-c", "echo before; exec sleep 30"], timeoutMs: 1500 });
  const seen = [];
  await assert.rejects(
    (async () => {
      for await (const c of late) seen.push(c.data);
    })(),
    code("PROCESS_TIMEOUT"),
  );
  assert.deepEqual(seen, ["before\n"]);
  await assert.rejects(late.result(), code("PROCESS_TIMEOUT"));

  // Leaving the loop early ends the request (the server kills the command): no 30 s wait.
  const long = sb.execStream(["sh", "-c", "echo start; exec sleep 30"]);
  for await (const c of long) {
    assert.equal(c.data, "start\n");
    break;
  }
  await assert.rejects(long.result(), code("ABORTED"));
  const after = await sb.exec(["echo", "still works"]);
  assert.equal(after.stdout, "still works\n");
});

test("files: text and binary round trip, list, stat, remove", async (t) => {
  const sb = await newSandbox(t);
  await sb.writeFile("notes/a.txt", "héllo\n");
  assert.equal(await sb.readFile("notes/a.txt", "utf8"), "héllo\n");

  const all = new Uint8Array(256);
  for (let i = 0; i < 256; i++) all[i] = i;
  const w = await sb.writeFile("bin/all.bin", all);
  assert.equal(w.size, 256);
  const back = await sb.readFile("bin/all.bin");
  assert.ok(back instanceof Uint8Array);
  assert.deepEqual(back, all);
  // The command sees the same bytes.
  const sum = await sb.exec(["sh", "-c", "wc -c < bin/all.bin"]);
  assert.equal(sum.stdout.trim(), "256");

  const st = await sb.stat("bin/all.bin");
  assert.equal(st.type, "file");
  assert.equal(st.size, 256);
  assert.equal(st.executable, false);
  await sb.setExecutable("bin/all.bin");
  assert.equal((await sb.stat("bin/all.bin")).executable, true);

  const paths = (await sb.listFiles()).map((f) => f.path).sort();
  assert.deepEqual(paths, ["bin/all.bin", "notes/a.txt"]);
  assert.deepEqual((await sb.listFiles("notes")).map((f) => f.path), ["notes/a.txt"]);

  await sb.remove("notes/a.txt");
  await assert.rejects(sb.readFile("notes/a.txt"), code("TOOL_NOT_FOUND", 404));
  await assert.rejects(sb.stat("notes/a.txt"), code("TOOL_NOT_FOUND", 404));
});

test("files: a path that leaves the workspace is TOOL_PATH_ESCAPE", async (t) => {
  const sb = await newSandbox(t);
  await assert.rejects(sb.readFile("../outside"), code("TOOL_PATH_ESCAPE", 400));
  await assert.rejects(sb.writeFile("../../etc/x", "no"), code("TOOL_PATH_ESCAPE", 400));
  await assert.rejects(sb.writeFile("a/../../x", "no"), code("TOOL_PATH_ESCAPE", 400));
  if (sb.info.capabilities.symlinks) {
    await sb.symlink("out", "/etc");
    await assert.rejects(sb.readFile("out/passwd"), code("TOOL_PATH_ESCAPE", 400));
  }
});

test("tool calls: the reply is data, refusals throw", async (t) => {
  const sb = await newSandbox(t);
  const w = await sb.tool("write", { path: "t.txt", content: "x\n" }, { runId: "r1", nodeId: "n1", iteration: 0, attempt: 1 });
  assert.deepEqual(w, { ok: true, output: "ok" });
  const r = await sb.tool("read", { path: "t.txt" }, { idempotencyKey: "k-1" });
  assert.equal(r.output, "x\n");

  const esc = await sb.tool("read", { path: "../x" });
  assert.equal(esc.ok, false);
  assert.equal(esc.error.code, "TOOL_PATH_ESCAPE");

  const bash = await sb.tool("bash", { cmd: "sh", args: ["-c", "echo o; echo e >&2"] });
  assert.equal(bash.ok, true);
  assert.equal(bash.stdout, "o\n");
  assert.equal(bash.stderr, "e\n");
  assert.equal(bash.exitCode, 0);

  await assert.rejects(sb.tool("no_such_tool", {}), code("TOOL_NOT_FOUND", 404));
  await assert.rejects(sb.tool("read", { path: "t.txt" }, { attempt: 0 }), code("INVALID_INPUT", 400));
});

test("background process: stdin written, output followed, exit waited", async (t) => {
  const sb = await newSandbox(t);
  if (!sb.info.capabilities.processes) return t.skip(`${sb.info.adapter}: no background processes`);
  // Answers each line of its input, so the output shows every line was read.
  const p = await sb.startProcess(["sh", "-c", 'while read -r l; do echo "got $l"; done; echo done >&2']);
  assert.match(p.id, /./);
  assert.equal(p.state.running, true);

  const chunks = [];
  const following = (async () => {
    for await (const c of p.follow()) chunks.push(c);
  })();
  await p.write("hello\n");
  await p.write(new TextEncoder().encode("bye\n"), { close: true });
  await following;

  const stdout = chunks.map((c) => c.stdout).join("");
  const stderr = chunks.map((c) => c.stderr).join("");
  assert.equal(stdout, "got hello\ngot bye\n");
  assert.equal(stderr, "done\n");
  const last = chunks[chunks.length - 1];
  assert.equal(last.state.running, false);
  assert.equal(last.state.exitCode, 0);

  const st = await p.wait({ timeoutMs: 10_000 });
  assert.equal(st.running, false);
  // Reading again from an offset gives only what came after it.
  const out = await p.output({ since: chunks[0].offset });
  assert.equal(out.offset, last.offset);
  const all = await p.output();
  assert.equal(all.stdout, "got hello\ngot bye\n");

  const ids = (await sb.listProcesses()).map((s) => s.id);
  assert.ok(ids.includes(p.id));
});

test("background process: signal and wait", async (t) => {
  const sb = await newSandbox(t);
  if (!sb.info.capabilities.processes) return t.skip(`${sb.info.adapter}: no background processes`);
  const p = await sb.startProcess(["sleep", "60"]);
  const still = await p.wait({ timeoutMs: 100 });
  assert.equal(still.running, true);
  await p.signal("TERM");
  const st = await p.wait({ timeoutMs: 20_000 });
  assert.equal(st.running, false);
  assert.equal(st.exitCode, 128 + 15);
  await assert.rejects(sb.process("p-none").refresh(), code("TOOL_NOT_FOUND", 404));
});

test("fork copies the workspace; delete removes the sandbox", async (t) => {
  const sb = await newSandbox(t);
  await sb.writeFile("state.txt", "before fork\n");
  const fork = await sb.fork({ ttlSeconds: 300 });
  t.after(() => fork.delete().catch(() => undefined));
  assert.notEqual(fork.id, sb.id);
  assert.equal(fork.info.forkOf, sb.id);
  assert.equal(await fork.readFile("state.txt", "utf8"), "before fork\n");

  await fork.writeFile("state.txt", "changed in the fork\n");
  assert.equal(await sb.readFile("state.txt", "utf8"), "before fork\n");

  await fork.delete();
  await assert.rejects(client.getSandbox(fork.id), code("SANDBOX_UNAVAILABLE", 404));
  await assert.rejects(fork.exec(["true"]), code("SANDBOX_UNAVAILABLE", 404));
  await assert.rejects(fork.delete(), code("SANDBOX_UNAVAILABLE", 404));
});

test("snapshots: take, restore verified, create from one, list, delete", async (t) => {
  const name = `ts-${Date.now()}`;
  const sb = await newSandbox(t);
  await sb.writeFile("src/app.txt", "version 1\n");
  const snap = await sb.snapshot(name);
  assert.equal(snap.name, name);
  assert.equal(snap.source, sb.id);
  assert.equal(snap.files, 1);
  await assert.rejects(sb.snapshot(name), code("SYNC_CONFLICT", 409));
  await assert.rejects(sb.snapshot("../bad"), code("INVALID_INPUT", 400));

  await sb.writeFile("src/app.txt", "version 2\n");
  await sb.writeFile("extra.txt", "gone after the restore\n");
  await assert.rejects(sb.restore(name), code("SYNC_CONFLICT", 409));
  const r = await sb.restore(name, { replace: true });
  assert.deepEqual(r, { snapshot: name, sandbox: sb.id, files: 1, bytes: 10 });
  assert.equal(await sb.readFile("src/app.txt", "utf8"), "version 1\n");
  await assert.rejects(sb.readFile("extra.txt"), code("TOOL_NOT_FOUND", 404));

  const from = await newSandbox(t, { fromSnapshot: name });
  assert.equal(await from.readFile("src/app.txt", "utf8"), "version 1\n");
  await assert.rejects(client.createSandbox({ fromSnapshot: `${name}-missing` }), code("TOOL_NOT_FOUND", 404));

  assert.ok((await client.listSnapshots({ prefix: "ts-" })).some((s) => s.name === name));
  assert.deepEqual((await client.listSnapshots({ source: sb.id })).map((s) => s.name), [name]);
  assert.equal((await client.getSnapshot(name)).files, 1);
  await client.deleteSnapshot(name);
  await assert.rejects(client.getSnapshot(name), code("TOOL_NOT_FOUND", 404));
  await assert.rejects(sb.restore(name, { replace: true }), code("TOOL_NOT_FOUND", 404));
});

test("pause and resume: commands refused while paused, snapshot taken, the process goes on", async (t) => {
  const sb = await newSandbox(t);
  assert.equal(sb.info.paused, false);
  if (sb.info.adapter !== "docker" && sb.info.adapter !== "oci") {
    await assert.rejects(sb.pause(), code("INVALID_INPUT", 400));
    return;
  }
  await sb.startProcess(["sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > n.tmp && mv n.tmp n; sleep 0.05; done"]);
  const count = async () => Number((await sb.readFile("n", "utf8").catch(() => "0")).trim());
  while ((await count()) < 3) await new Promise((r) => setTimeout(r, 50));
  assert.equal((await sb.pause()).paused, true);
  const frozen = await count();
  await assert.rejects(sb.exec(["true"]), (err) => code("SANDBOX_UNAVAILABLE", 409)(err) && err.details.paused === true);
  await assert.rejects(sb.tool("bash", { cmd: "true" }), code("SANDBOX_UNAVAILABLE", 409));
  const name = `paused-${Date.now()}`;
  t.after(() => client.deleteSnapshot(name).catch(() => undefined));
  assert.ok((await sb.snapshot(name)).files >= 1);
  assert.equal((await client.getSandbox(sb.id)).info.paused, true);
  assert.equal((await sb.resume()).paused, false);
  assert.equal((await sb.exec(["echo", "back"])).stdout, "back\n");
  while ((await count()) <= frozen) await new Promise((r) => setTimeout(r, 50));
});

test("an unknown sandbox id is SANDBOX_UNAVAILABLE", async () => {
  await assert.rejects(client.getSandbox("sbx-000000000000"), code("SANDBOX_UNAVAILABLE", 404));
  await assert.rejects(client.sandbox("sbx-000000000000").readFile("a"), code("SANDBOX_UNAVAILABLE", 404));
  await assert.rejects(client.sandbox("sbx-000000000000").tool("read", { path: "a" }), code("SANDBOX_UNAVAILABLE", 404));
});

test("request errors: bad input, nothing listening, abort", async (t) => {
  await assert.rejects(client.createSandbox({ adapter: "no-such-adapter" }), code("INVALID_INPUT", 400));
  await assert.rejects(client.createSandbox({ ttlSeconds: -1 }), code("INVALID_INPUT", 400));

  // A port nothing listens on: the SDK's own NETWORK_ERROR.
  const gone = new SandboxerClient({ baseUrl: "http://127.0.0.1:1" });
  await assert.rejects(gone.health(), code("NETWORK_ERROR", 0));

  const sb = await newSandbox(t);
  const ac = new AbortController();
  const run = sb.exec(["sleep", "30"], { signal: ac.signal });
  setTimeout(() => ac.abort(), 200);
  await assert.rejects(run, code("ABORTED"));
  assert.equal(new URL(url).protocol, "http:");
});

test("real work: a small project written, built and committed", async (t) => {
  const sb = await newSandbox(t);
  await sb.writeFile("proj/src/words.txt", "pear\napple\nfig\n");
  await sb.writeFile("proj/build.sh", '#!/bin/sh\nset -e\nmkdir -p out\nsort src/words.txt > out/sorted.txt\nwc -l < out/sorted.txt | tr -d " "\n');
  await sb.setExecutable("proj/build.sh");
  const build = await sb.exec({ args: ["./build.sh"], dir: "proj" });
  assert.equal(build.exitCode, 0, build.stderr);
  assert.equal(build.stdout, "3\n");
  assert.equal(await sb.readFile("proj/out/sorted.txt", "utf8"), "apple\nfig\npear\n");

  if (await has(sb, "node")) {
    await sb.writeFile("proj/sum.js", "const n = require('./data.json'); console.log(n.reduce((a, b) => a + b, 0));\n");
    await sb.writeFile("proj/data.json", "[1, 2, 3, 4]");
    const r = await sb.exec({ args: ["node", "sum.js"], dir: "proj" });
    assert.equal(r.stdout, "10\n", r.stderr);
  }
  if (await has(sb, "python3")) {
    const r = await sb.exec({ args: ["python3", "-c", "import json; print(json.load(open('data.json'))[::-1])"], dir: "proj" });
    if (r.exitCode === 0) assert.equal(r.stdout, "[4, 3, 2, 1]\n");
  }
  if (await has(sb, "git")) {
    const git = await sb.exec({
      args: ["sh", "-c", "git init -q && git add -A && git -c user.email=a@b -c user.name=a commit -qm build && git log --oneline | wc -l && git status --porcelain"],
      dir: "proj",
    });
    assert.equal(git.exitCode, 0, git.stderr);
    assert.equal(git.stdout.trim(), "1");
  }
});
