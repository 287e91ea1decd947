// Bearer tokens: run by sdk/typescript_test.go against a server with --tokens, whose tokens it
// passes in SANDBOXER_TOKEN (name "ci") and SANDBOXER_OTHER_TOKEN (name "other", at most one
// sandbox). Skipped without them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { SandboxerClient } from "../dist/index.js";
import { code, url } from "./helpers.mjs";

const token = process.env.SANDBOXER_TOKEN;
const other = process.env.SANDBOXER_OTHER_TOKEN;
const skip = !token || !other ? "needs a server with tokens (SANDBOXER_TOKEN, SANDBOXER_OTHER_TOKEN)" : false;

test("the token is sent, and kept out of what a client prints", { skip }, async (t) => {
  const c = new SandboxerClient({ baseUrl: url, token });
  const sb = await c.createSandbox();
  t.after(() => sb.delete());
  assert.equal(sb.info.owner, "ci");
  assert.ok((await c.listSandboxes()).some((s) => s.id === sb.id));
  assert.equal((await sb.exec(["echo", "ok"])).stdout, "ok\n");
  assert.ok(!inspect(c, { depth: 10 }).includes(token));
  assert.ok(!inspect(sb, { depth: 10 }).includes(token));
});

test("a wrong token, or none, is UNAUTHORIZED", { skip }, async () => {
  const wrong = new SandboxerClient({ baseUrl: url, token: "sbx_not-a-token-of-this-server" });
  await assert.rejects(wrong.listSandboxes(), code("UNAUTHORIZED", 401));
  await assert.rejects(wrong.createSandbox(), code("UNAUTHORIZED", 401));
  const none = new SandboxerClient({ baseUrl: url, token: "" });
  await assert.rejects(none.listSandboxes(), code("UNAUTHORIZED", 401));
  // Health needs no token.
  assert.equal((await none.health()).ok, true);
});

test("another token's sandbox does not exist for this one; quotas refuse", { skip }, async (t) => {
  const ci = new SandboxerClient({ baseUrl: url, token });
  const o = new SandboxerClient({ baseUrl: url, token: other });
  const mine = await ci.createSandbox();
  t.after(() => mine.delete());
  await assert.rejects(o.getSandbox(mine.id), code("SANDBOX_UNAVAILABLE", 404));
  await assert.rejects(o.sandbox(mine.id).delete(), code("SANDBOX_UNAVAILABLE", 404));
  assert.ok(!(await o.listSandboxes()).some((s) => s.id === mine.id));

  const first = await o.createSandbox();
  t.after(() => first.delete());
  await assert.rejects(o.createSandbox(), (err) => {
    code("LIMIT_EXCEEDED", 429)(err);
    assert.equal(err.details.quota, "maxSandboxes");
    return true;
  });
});
