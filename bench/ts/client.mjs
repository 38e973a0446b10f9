// The benchmark's client on the TypeScript SDK (@modelcontextprotocol/sdk, pinned by
// `cargo xtask bench`), run by bench/src/driver.rs.
//
// Usage: node client.mjs <sdk-prefix> <spec json>
//
// The same workloads as bench/src/workload.rs, with the SDK's `Client` over
// `StdioClientTransport` or `StreamableHTTPClientTransport`: it connects as the spec says,
// runs one workload and prints one JSON line.

import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const [sdkPrefix, specText] = process.argv.slice(2);
const spec = JSON.parse(specText);
const require = createRequire(join(resolve(sdkPrefix), "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const BIG_BYTES = 1 << 20;
const ECHO_TEXT = "hello";
const now = () => process.hrtime.bigint();

async function connect() {
  const client = new Client({ name: "mcp-bench", version: "0.0.0" });
  const transport =
    spec.transport === "stdio"
      ? new StdioClientTransport({ command: spec.server[0], args: spec.server.slice(1), stderr: "inherit" })
      : new StreamableHTTPClientTransport(new URL(spec.url));
  await client.connect(transport);
  return client;
}

async function call(client, big) {
  const result = big
    ? await client.callTool({ name: "big", arguments: {} })
    : await client.callTool({ name: "echo", arguments: { text: ECHO_TEXT } });
  return result.content[0].text.length;
}

async function listAll(client) {
  let n = 0;
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    n += page.tools.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return n;
}

function pct(sorted, p) {
  if (sorted.length === 0) return 0;
  const i = Math.ceil(((sorted.length - 1) * p) / 100);
  return Number(sorted[i]) / 1000;
}

async function phase(client, c, ms) {
  const start = now();
  const deadline = start + BigInt(ms) * 1000000n;
  const worker = async () => {
    const lat = [];
    while (now() < deadline) {
      const t = now();
      const n = await call(client, false);
      lat.push(now() - t);
      if (n !== ECHO_TEXT.length) throw new Error(`echo answered ${n} bytes`);
    }
    return [lat, now()];
  };
  const done = await Promise.all(Array.from({ length: c }, worker));
  const lat = done.flatMap((d) => d[0]);
  const end = done.reduce((m, d) => (d[1] > m ? d[1] : m), start);
  return [lat, Number(end - start) / 1e9];
}

const sortBig = (a) => a.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));

// VmRSS (resident now) or VmHWM (the peak) of this process, in KiB.
function statusKib(field = "VmRSS") {
  const status = require("node:fs").readFileSync("/proc/self/status", "utf8");
  return Number(status.match(new RegExp(`${field}:\\s+(\\d+)`))[1]);
}

let out;
if (spec.workload === "call") {
  const client = await connect();
  const phases = [];
  for (const c of spec.concurrency) {
    await phase(client, c, spec.warmup_ms);
    const [lat, secs] = await phase(client, c, spec.measure_ms);
    sortBig(lat);
    phases.push({ c, calls: lat.length, secs, p50_us: pct(lat, 50), p99_us: pct(lat, 99) });
  }
  await client.close();
  out = { phases };
} else if (spec.workload === "big" || spec.workload === "list") {
  const big = spec.workload === "big";
  const want = big ? BIG_BYTES : spec.tools + 2;
  const client = await connect();
  const connected = statusKib("VmRSS");
  const lat = [];
  const start = now();
  while (lat.length < 3 || Number(now() - start) / 1e6 < spec.measure_ms) {
    const t = now();
    const n = big ? await call(client, true) : await listAll(client);
    lat.push(now() - t);
    if (n !== want) throw new Error(`got ${n}, expected ${want}`);
  }
  const peak = statusKib("VmHWM");
  await client.close();
  sortBig(lat);
  out = { runs: lat.length, p50_us: pct(lat, 50), connected_kib: connected, peak_kib: peak };
} else if (spec.workload === "connect" || spec.workload === "idle") {
  const start = now();
  const clients = await Promise.all(
    Array.from({ length: spec.count }, async () => {
      const client = await connect();
      return [client, await listAll(client)];
    }),
  );
  const wall = Number(now() - start) / 1000;
  const tools = clients.reduce((s, [, n]) => s + n, 0);
  if (tools !== spec.count * 2) throw new Error(`listed ${tools} tools in all`);
  if (spec.workload === "connect") {
    out = { wall_us: Math.round(wall) };
  } else {
    await new Promise((r) => setTimeout(r, 500));
    out = { rss_kib: statusKib("VmRSS") };
  }
  await Promise.all(clients.map(([c]) => c.close()));
} else {
  throw new Error(`unknown workload ${spec.workload}`);
}
console.log(JSON.stringify(out));
process.exit(0);
