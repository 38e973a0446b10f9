// A real task client, the official TypeScript SDK's (2025-11-25 experimental tasks), against
// `mcp-conformance-server` over Streamable HTTP: run by `cargo xtask interop`
// (xtask/src/interop.rs).
//
// Usage: node tasks-client.mjs <sdk-prefix> <url>
//
// It calls `slow_compute` as a task (the SDK's callToolStream: created, polled with tasks/get,
// the result fetched with tasks/result), lists the session's tasks, runs `confirm_delete` as a
// task whose question comes as an elicitation tied to it, starts a long one and cancels it,
// and checks the status notifications the server sent; non-zero on any mismatch.

import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const [sdkPrefix, url] = process.argv.slice(2);
if (!sdkPrefix || !url) {
  console.error("usage: tasks-client.mjs <sdk-prefix> <url>");
  process.exit(2);
}
// The SDK is installed under target/tools, not beside this script: resolve it from there.
const require = createRequire(join(resolve(sdkPrefix), "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { CallToolResultSchema, ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

let failures = 0;
function check(what, ok, detail) {
  if (ok) {
    console.error(`  ok: ${what}`);
  } else {
    failures += 1;
    console.error(`  FAILED: ${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}

const client = new Client(
  { name: "tasks-client", version: "1.0.0" },
  { capabilities: { tasks: { list: {}, cancel: {} }, elicitation: {} } },
);
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params._meta?.["io.modelcontextprotocol/related-task"]?.taskId);
  return { action: "accept", content: { confirm: true } };
});
const statuses = [];
client.fallbackNotificationHandler = async (n) => {
  if (n.method === "notifications/tasks/status") statuses.push(`${n.params.taskId}:${n.params.status}`);
};
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const tasks = client.experimental.tasks;
const caps = client.getServerCapabilities().tasks;
check("the server declares tasks for tools/call", caps?.requests?.tools?.call !== undefined, caps);

// A one-second task, run to its end.
const kinds = [];
let result;
let first;
for await (const m of tasks.callToolStream(
  { name: "slow_compute", arguments: { seconds: 1, label: "ts-sdk" } },
  CallToolResultSchema,
  { task: { ttl: 60000 } },
)) {
  kinds.push(m.type);
  if (m.type === "taskCreated") first = m.task;
  if (m.type === "result") result = m.result;
  if (m.type === "error") check("no error from the task stream", false, m.error);
}
check("the call made a task, polled it, then got its result", kinds[0] === "taskCreated" && kinds.includes("taskStatus") && kinds.at(-1) === "result", kinds);
check("the result is the tool's", /Computed ts-sdk/.test(result?.content?.[0]?.text ?? ""), result);
check("the task has a TTL and a polling interval", first?.ttl > 0 && first?.pollInterval > 0, first);
const listed = await tasks.listTasks();
check("tasks/list shows the finished task", listed.tasks.some((t) => t.taskId === first?.taskId && t.status === "completed"), listed);

// A task that asks a question: the elicitation comes tied to the task.
let asking;
let answered;
for await (const m of tasks.callToolStream(
  { name: "confirm_delete", arguments: { filename: "notes.txt" } },
  CallToolResultSchema,
  { task: { ttl: 60000 } },
)) {
  if (m.type === "taskCreated") asking = m.task;
  if (m.type === "result") answered = m.result;
  if (m.type === "error") check("no error from the asking task", false, m.error);
}
check("the task's question came as an elicitation tied to it", elicited.length === 1 && elicited[0] === asking?.taskId, elicited);
check("the answer reached the task", answered?.content?.[0]?.text === "Deleted notes.txt", answered);

// A long task, cancelled.
let long;
for await (const m of tasks.callToolStream(
  { name: "slow_compute", arguments: { seconds: 60, label: "long" } },
  CallToolResultSchema,
  { task: { ttl: 60000 } },
)) {
  if (m.type === "taskCreated") {
    long = m.task;
    break;
  }
}
const cancelled = await tasks.cancelTask(long.taskId);
check("tasks/cancel answers the task as cancelled", cancelled.status === "cancelled", cancelled);
const after = await tasks.getTask(long.taskId);
check("tasks/get then says cancelled", after.status === "cancelled", after);
let refused;
try {
  await tasks.cancelTask(long.taskId);
} catch (e) {
  refused = e.code;
}
check("cancelling it again is refused with -32602", refused === -32602, refused);

// The notifications are sent as the statuses change; give the last one time to arrive.
for (let i = 0; i < 50 && !statuses.includes(`${long.taskId}:cancelled`); i++) {
  await new Promise((r) => setTimeout(r, 20));
}
check("notifications/tasks/status told of each ending", statuses.includes(`${first?.taskId}:completed`) && statuses.includes(`${long.taskId}:cancelled`), statuses);

await client.close();
if (failures > 0) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
