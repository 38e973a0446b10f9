// A real MCP client, the official TypeScript SDK's, in front of `mcp-host serve --gateway`
// in category mode: run by `cargo xtask interop` (xtask/src/interop.rs).
//
// Usage: node gateway-client.mjs <sdk-prefix> <mcp-host> <gateway-file> stdio|http
//
// It lists the tools (exactly get-category-tools and call-category-tool), loads the
// category `text`, calls its `echo` and `add` tools through call-category-tool, checks that
// a disabled tool is refused, and exits non-zero on any mismatch. Over HTTP the gateway is
// started as docs/gateway.md tells (`--bearer-token-env GATEWAY_TOKEN`): the client sends
// `Authorization: Bearer <token>`, and one without it is refused first.

import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const [sdkPrefix, mcpHost, gatewayFile, transportName] = process.argv.slice(2);
if (!sdkPrefix || !mcpHost || !gatewayFile || !["stdio", "http"].includes(transportName)) {
  console.error("usage: gateway-client.mjs <sdk-prefix> <mcp-host> <gateway-file> stdio|http");
  process.exit(2);
}
// The SDK is installed under target/tools, not beside this script: resolve it from there.
const require = createRequire(join(resolve(sdkPrefix), "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

let failures = 0;
function check(what, ok, detail) {
  if (ok) {
    console.error(`  ok: ${what}`);
  } else {
    failures += 1;
    console.error(`  FAILED: ${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}

/// The structured answer of a gateway tool, else its text parsed as JSON.
function answerOf(result) {
  if (result.structuredContent) return result.structuredContent;
  try {
    return JSON.parse(result.content?.[0]?.text ?? "null");
  } catch {
    return null;
  }
}

/// The token the HTTP gateway requires of its clients.
const token = randomUUID();

/// Starts `mcp-host serve --http 127.0.0.1:0 --bearer-token-env GATEWAY_TOKEN` and resolves
/// with its endpoint, read from the `listening on http://ADDR/mcp` line on its stderr.
function startHttpGateway() {
  const args = ["serve", "--gateway", gatewayFile, "--http", "127.0.0.1:0", "--bearer-token-env", "GATEWAY_TOKEN"];
  const child = spawn(mcpHost, args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, GATEWAY_TOKEN: token },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the gateway printed no address within 60 s")), 60000);
    child.on("exit", (code) => reject(new Error(`the gateway exited with ${code}`)));
    createInterface({ input: child.stderr }).on("line", (line) => {
      const found = line.match(/listening on (http:\/\/\S+)/);
      if (found) {
        clearTimeout(timer);
        resolve({ child, url: new URL(found[1]) });
      }
    });
  });
}

async function main() {
  let httpChild;
  let transport;
  if (transportName === "stdio") {
    transport = new StdioClientTransport({
      command: mcpHost,
      args: ["serve", "--gateway", gatewayFile],
      stderr: "inherit",
    });
  } else {
    const { child, url } = await startHttpGateway();
    httpChild = child;
    console.error(`  gateway at ${url}`);
    const without = new Client({ name: "mcp-host-interop-no-token", version: "0.0.0" });
    const refused = await without.connect(new StreamableHTTPClientTransport(url)).then(
      () => null,
      (error) => ({ code: error?.code, message: String(error?.message ?? error) }),
    );
    await without.close().catch(() => {});
    check("a client without the bearer token is refused with 401", refused?.code === 401, refused);
    transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
  }
  const client = new Client({ name: "mcp-host-interop", version: "0.0.0" });
  try {
    await client.connect(transport);
    check("initialize", client.getServerVersion()?.name === "mcp-host-gateway", client.getServerVersion());

    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    check(
      "exactly get-category-tools and call-category-tool are listed",
      JSON.stringify(names) === JSON.stringify(["call-category-tool", "get-category-tools"]),
      names,
    );
    const get = tools.find((t) => t.name === "get-category-tools");
    check("the category list is in get-category-tools' description", get?.description?.includes("text"), get?.description);

    const loaded = await client.callTool({ name: "get-category-tools", arguments: { category: "text" } });
    const category = answerOf(loaded);
    check("get-category-tools succeeds", !loaded.isError, loaded);
    const loadedNames = Object.keys(category?.tools ?? {}).sort();
    check("the category holds echo and add, not the disabled slow", JSON.stringify(loadedNames) === JSON.stringify(["add", "echo"]), loadedNames);
    check("echo's input schema came through", category?.tools?.echo?.inputSchema?.properties?.text?.type === "string", category?.tools?.echo);
    check("meta names the category and its server", category?.meta?.category === "text" && category?.meta?.sourceServer === "demo", category?.meta);

    const echoed = await client.callTool({
      name: "call-category-tool",
      arguments: { category: "text", name: "echo", args: { text: "through the gateway" } },
    });
    check("call-category-tool echo returns the upstream's result", !echoed.isError && echoed.content?.[0]?.text === "through the gateway", echoed);

    const added = await client.callTool({
      name: "call-category-tool",
      arguments: { category: "text", name: "add", args: { a: 2, b: 40 } },
    });
    check("call-category-tool add returns structured content", !added.isError && added.structuredContent?.sum === 42, added);

    const disabled = await client.callTool({
      name: "call-category-tool",
      arguments: { category: "text", name: "slow", args: {} },
    });
    check("a disabled tool is refused with ToolDisabled", disabled.isError && disabled.content?.[0]?.text?.startsWith("ToolDisabled"), disabled);

    const unknown = await client.callTool({ name: "get-category-tools", arguments: { category: "nope" } });
    check("an unknown category is a tool error", unknown.isError && unknown.content?.[0]?.text?.startsWith("UnknownCategory"), unknown);
  } finally {
    await client.close().catch(() => {});
    if (httpChild) httpChild.kill();
  }
}

main().then(
  () => {
    if (failures > 0) {
      console.error(`${failures} check(s) failed over ${transportName}`);
      process.exit(1);
    }
    console.error(`all checks passed over ${transportName}`);
  },
  (error) => {
    console.error(`gateway client failed over ${transportName}: ${error?.stack ?? error}`);
    process.exit(1);
  },
);
