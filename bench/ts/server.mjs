// The benchmark's server on the TypeScript SDK (@modelcontextprotocol/sdk, pinned by
// `cargo xtask bench`), run by bench/src/driver.rs.
//
// Usage: node server.mjs <sdk-prefix> stdio|http [--port P] [--tools N]
//
// The SDK's low-level `Server` with handlers for tools/list and tools/call: `echo` answers its
// text, `big` answers 1 MiB of text, and N generated tools follow, 500 to a page (the same
// tools in the same order as every other implementation). Over HTTP: the SDK's stateful
// Streamable HTTP transport, one per session as its documentation shows, on node:http at /mcp.

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const [sdkPrefix, transportName, ...rest] = process.argv.slice(2);
const flags = {};
for (let i = 0; i + 1 < rest.length; i += 2) flags[rest[i]] = Number(rest[i + 1]);
const require = createRequire(join(resolve(sdkPrefix), "package.json"));
const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } = require("@modelcontextprotocol/sdk/types.js");

const PAGE_SIZE = 500;
const BIG = "x".repeat(1 << 20);
const TOOLS = [
  {
    name: "echo",
    description: "Returns its text.",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
  { name: "big", description: "Returns 1 MiB of text.", inputSchema: { type: "object" } },
];
for (let i = 0; i < (flags["--tools"] ?? 0); i++) {
  TOOLS.push({
    name: `tool_${String(i).padStart(5, "0")}`,
    description: `Generated tool number ${i} of the tools/list benchmark.`,
    inputSchema: { type: "object", properties: { value: { type: "string" } } },
  });
}

function makeServer() {
  const server = new Server({ name: "mcp-bench-ts", version: "0.0.0" }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const start = Math.min(Number(request.params?.cursor ?? 0), TOOLS.length);
    const end = Math.min(start + PAGE_SIZE, TOOLS.length);
    const result = { tools: TOOLS.slice(start, end) };
    if (end < TOOLS.length) result.nextCursor = String(end);
    return result;
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params;
    let text;
    if (name === "echo") text = String(args?.text ?? "");
    else if (name === "big") text = BIG;
    else throw new Error(`unknown tool ${name}`);
    return { content: [{ type: "text", text }] };
  });
  return server;
}

if (transportName === "stdio") {
  await makeServer().connect(new StdioServerTransport());
} else {
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    try {
      let body;
      if (req.method === "POST") {
        const chunks = [];
        for await (const chunk of req) chunks.push(chunk);
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      }
      const id = req.headers["mcp-session-id"];
      let transport = id === undefined ? undefined : sessions.get(id);
      if (transport === undefined && id === undefined && isInitializeRequest(body)) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => sessions.set(sid, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await makeServer().connect(transport);
      }
      if (transport === undefined) {
        res.writeHead(id === undefined ? 400 : 404).end();
        return;
      }
      await transport.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    }
  });
  http.listen(flags["--port"], "127.0.0.1");
}
