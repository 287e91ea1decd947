// The SDK's added latency per call: median and p99 of readFile of a small file through the SDK
// against the same request made with bare fetch, and of an exec of `true` both ways, measured in
// the same run on the same sandbox (interleaved in random order, so load on the machine hits
// both alike).
//
//   sandboxerd serve &   # or any server; SANDBOXER_URL, SANDBOXER_TOKEN as for the SDK
//   node sdk/typescript/bench/exec.mjs [iterations]
import { SandboxerClient } from "../dist/index.js";

const n = Number(process.argv[2] ?? 300);
const client = new SandboxerClient();
const headers = process.env.SANDBOXER_TOKEN ? { Authorization: `Bearer ${process.env.SANDBOXER_TOKEN}` } : {};
const sb = await client.createSandbox({ adapter: process.env.SANDBOXER_ADAPTER });

function stats(ms) {
  const s = [...ms].sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)].toFixed(3)} ms, p99 ${s[Math.floor(s.length * 0.99)].toFixed(3)} ms`;
}

async function time(f) {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

try {
  await sb.writeFile("bench.txt", "x".repeat(100));
  const fileUrl = `${client.baseUrl}/v1/sandboxes/${sb.id}/files?path=bench.txt`;
  const execUrl = `${client.baseUrl}/v1/sandboxes/${sb.id}/exec`;
  const cases = {
    "readFile, SDK": () => sb.readFile("bench.txt"),
    "readFile, fetch": async () => {
      const r = await fetch(fileUrl, { headers });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      await r.arrayBuffer();
    },
    "exec true, SDK": () => sb.exec(["true"]),
    "exec true, fetch": async () => {
      const r = await fetch(execUrl, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: '{"args":["true"]}' });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      await r.json();
    },
  };
  const ms = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let i = 0; i < 20; i++) for (const f of Object.values(cases)) await f(); // warm up
  // A new order each round: a call right after an exec would otherwise always pay for the
  // exec's clean-up on the server.
  const order = Object.entries(cases);
  for (let i = 0; i < n; i++) {
    for (let j = order.length - 1; j > 0; j--) {
      const r = Math.floor(Math.random() * (j + 1));
      [order[j], order[r]] = [order[r], order[j]];
    }
    for (const [k, f] of order) ms[k].push(await time(f));
  }
  console.log(`${sb.info.adapter} adapter, ${n} calls each, node ${process.version}`);
  for (const [k, v] of Object.entries(ms)) console.log(`${k.padEnd(18)} ${stats(v)}`);
} finally {
  await sb.delete();
}
