// A real task server, the official TypeScript SDK's (2025-11-25 experimental tasks:
// McpServer.experimental.tasks.registerToolTask over an InMemoryTaskStore), for our host as
// a task client: run by `cargo xtask interop` (xtask/src/tasks_peer.rs).
//
// Usage: node task-server.mjs <sdk-prefix> <port>
//
// Streamable HTTP at /mcp, stateless (no session id), so that a task one `mcp-host` process
// started is seen by the next: the SDK's store keeps a task created in a session from every
// other session. Tools:
//   build {name}  taskSupport required: completes after ~1.5 s with "built <name>"
//   sleep         taskSupport required: never completes by itself (to be cancelled)
//   maybe         taskSupport optional: completes at once with "maybe done"

import { createServer } from "node:http";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const [sdkPrefix, port] = process.argv.slice(2);
if (!sdkPrefix || !port) {
  console.error("usage: task-server.mjs <sdk-prefix> <port>");
  process.exit(2);
}
// The SDK is installed under target/tools, not beside this script: resolve it from there.
const require = createRequire(join(resolve(sdkPrefix), "package.json"));
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { InMemoryTaskStore, InMemoryTaskMessageQueue } = require(
  "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js",
);
const z = require("zod/v4");

// One store for every request's server: the tasks outlive the request that made them.
const taskStore = new InMemoryTaskStore();
const taskMessageQueue = new InMemoryTaskMessageQueue();

function text(t) {
  return { content: [{ type: "text", text: t }] };
}

function makeServer() {
  const server = new McpServer(
    { name: "ts-task-peer", version: "1.0.0" },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore,
      taskMessageQueue,
    },
  );
  const taskTool = (work) => ({
    async createTask(args, { taskStore: store, taskRequestedTtl }) {
      const task = await store.createTask({ ttl: taskRequestedTtl ?? 600000, pollInterval: 200 });
      work(args, task.taskId);
      return { task };
    },
    async getTask(_args, { taskId, taskStore: store }) {
      return await store.getTask(taskId);
    },
    async getTaskResult(_args, { taskId, taskStore: store }) {
      return await store.getTaskResult(taskId);
    },
  });
  server.experimental.tasks.registerToolTask(
    "build",
    {
      description: "Builds NAME; takes a while",
      inputSchema: { name: z.string().default("it") },
      execution: { taskSupport: "required" },
    },
    taskTool(({ name }, taskId) => {
      setTimeout(() => {
        taskStore
          .storeTaskResult(taskId, "completed", text(`built ${name}`))
          .catch(() => {});
      }, 1500);
    }),
  );
  server.experimental.tasks.registerToolTask(
    "sleep",
    {
      description: "Never ends by itself",
      inputSchema: {},
      execution: { taskSupport: "required" },
    },
    taskTool(() => {}),
  );
  server.experimental.tasks.registerToolTask(
    "maybe",
    {
      description: "Quick; may run as a task",
      inputSchema: {},
      execution: { taskSupport: "optional" },
    },
    taskTool((_args, taskId) => {
      taskStore.storeTaskResult(taskId, "completed", text("maybe done")).catch(() => {});
    }),
  );
  return server;
}

const http = createServer(async (req, res) => {
  if (!req.url || !req.url.startsWith("/mcp")) {
    res.writeHead(404).end();
    return;
  }
  let body;
  if (req.method === "POST") {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400).end();
      return;
    }
  }
  const server = makeServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  } catch (e) {
    console.error(`request failed: ${e}`);
    if (!res.headersSent) res.writeHead(500).end();
  }
});
http.listen(Number(port), "127.0.0.1", () => {
  console.error(`ts-task-peer listening on http://127.0.0.1:${port}/mcp`);
});
