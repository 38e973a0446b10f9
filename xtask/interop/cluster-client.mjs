// The TypeScript SDK's client in front of two `mcp-host serve --gateway --http` replicas that
// share a `cluster` session key, with no affinity: its fetch sends each request to the next
// replica in turn (what a round-robin load balancer does). Run by `cargo xtask interop`
// (xtask/src/interop.rs).
//
// Usage: node cluster-client.mjs <sdk-prefix> <mcp-host> <gateway-file>
//
// The gateway file names the key as ${MCP_SESSION_KEY}; this script gives both replicas the
// same random one. It connects (the handshake's requests land on both replicas), lists the
// tools and calls echo four times, calls the fake server's elicit and sends its answer to the
// elicitation to the replica that did not take the call (it crosses through the file's Redis
// store), kills one replica with SIGKILL, and calls echo four times more: every call must
// succeed with the session it began with. Exits non-zero on any mismatch.

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const [sdkPrefix, mcpHost, gatewayFile] = process.argv.slice(2);
if (!sdkPrefix || !mcpHost || !gatewayFile) {
  console.error("usage: cluster-client.mjs <sdk-prefix> <mcp-host> <gateway-file>");
  process.exit(2);
}
const require = createRequire(join(resolve(sdkPrefix), "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

let failures = 0;
function check(what, ok, detail) {
  if (ok) {
    console.error(`  ok: ${what}`);
  } else {
    failures += 1;
    console.error(`  FAILED: ${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}

const sessionKey = randomBytes(32).toString("base64");

/// Starts one replica and resolves with it and its endpoint.
function startReplica() {
  const args = ["serve", "--gateway", gatewayFile, "--http", "127.0.0.1:0"];
  const child = spawn(mcpHost, args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, MCP_SESSION_KEY: sessionKey },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the replica printed no address within 60 s")), 60000);
    child.on("exit", (code) => reject(new Error(`the replica exited with ${code}`)));
    createInterface({ input: child.stderr }).on("line", (line) => {
      const found = line.match(/listening on (http:\/\/\S+)/);
      if (found) {
        clearTimeout(timer);
        resolve({ child, url: new URL(found[1]) });
      }
    });
  });
}

/// Waits until a replica's /readyz says its upstream is ready.
async function ready(url) {
  for (let i = 0; i < 300; i++) {
    const r = await fetch(new URL("/readyz", url)).catch(() => null);
    if (r?.status === 200) return;
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`${url} never became ready`);
}

async function main() {
  const replicas = [await startReplica(), await startReplica()];
  const alive = replicas.map(() => true);
  const served = replicas.map(() => 0);
  let next = 0;
  // Which replica took the call of elicit, and which the client's answer to its question.
  let elicitAt = -1;
  let answerAt = -1;
  const bodyOf = (init) => {
    try {
      return typeof init?.body === "string" ? JSON.parse(init.body) : null;
    } catch {
      return null;
    }
  };
  // Round robin over the replicas still alive, as a load balancer does once its health
  // check has seen one die; but an answer to the gateway's request goes to the replica that
  // did not take the call it belongs to, so that it must cross.
  const roundRobin = (input, init) => {
    const body = bodyOf(init);
    const isAnswer = body && body.method === undefined && body.id !== undefined;
    for (let tries = 0; tries < replicas.length; tries++) {
      const i = isAnswer && elicitAt >= 0 ? (elicitAt + 1) % replicas.length : next++ % replicas.length;
      if (!alive[i]) continue;
      if (body?.method === "tools/call" && body.params?.name?.endsWith("elicit")) elicitAt = i;
      if (isAnswer) answerAt = i;
      served[i] += 1;
      const url = new URL(input instanceof Request ? input.url : String(input));
      url.host = replicas[i].url.host;
      return fetch(url, init);
    }
    return Promise.reject(new Error("no replica left"));
  };
  const client = new Client(
    { name: "mcp-host-cluster-interop", version: "0.0.0" },
    { capabilities: { elicitation: {} } },
  );
  let asked = 0;
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked += 1;
    return { action: "accept", content: { name: "answered-across" } };
  });
  try {
    await Promise.all(replicas.map((r) => ready(r.url)));
    console.error(`  replicas at ${replicas.map((r) => r.url).join(" and ")}`);
    const transport = new StreamableHTTPClientTransport(replicas[0].url, { fetch: roundRobin });
    await client.connect(transport);
    const session = transport.sessionId;
    check("the session id is sealed", typeof session === "string" && session.startsWith("s1."), session);
    const { tools } = await client.listTools();
    const echo = tools.find((t) => t.name.endsWith("echo") && !t.name.includes("fake"))?.name;
    const elicit = tools.find((t) => t.name.endsWith("elicit"))?.name;
    check("the fake server's elicit is listed", elicit !== undefined, tools.map((t) => t.name));
    check("the demo server's echo is listed", echo !== undefined, tools.map((t) => t.name));
    const calls = async (label) => {
      for (let n = 0; n < 4; n++) {
        const text = `${label} ${n}`;
        const r = await client.callTool({ name: echo, arguments: { text } });
        check(`echo '${text}'`, !r.isError && r.content?.[0]?.text === text, r);
      }
    };
    await calls("both up");
    check("both replicas served requests", served.every((n) => n >= 2), served);
    const asking = await client.callTool({ name: elicit, arguments: {} });
    check("the elicitation was asked once", asked === 1, asked);
    check(
      "the answer went to the replica that did not take the call",
      elicitAt >= 0 && answerAt >= 0 && elicitAt !== answerAt,
      { elicitAt, answerAt },
    );
    check(
      "the call ended with the answer",
      !asking.isError && JSON.stringify(asking.content).includes("answered-across"),
      asking,
    );
    replicas[0].child.kill("SIGKILL");
    alive[0] = false;
    const before = served[1];
    await calls("one killed");
    check("the survivor served the rest", served[1] >= before + 4, served);
    check("the session is the one it began with", transport.sessionId === session, transport.sessionId);
  } finally {
    await client.close().catch(() => {});
    for (const r of replicas) r.child.kill("SIGKILL");
  }
}

main().then(
  () => {
    if (failures > 0) {
      console.error(`${failures} check(s) failed`);
      process.exit(1);
    }
    console.error("all cluster checks passed");
  },
  (error) => {
    console.error(`cluster client failed: ${error?.stack ?? error}`);
    process.exit(1);
  },
);
