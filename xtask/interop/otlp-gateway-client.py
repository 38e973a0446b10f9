"""A Streamable HTTP client, with the standard library only, in front of `mcp-host serve
--gateway --http` started with the OTEL_* variables pointing at xtask/interop/otlp-receiver.py
(run by `cargo xtask interop`, xtask/src/otlp.rs): it calls a tool with a `traceparent` in
`_meta`, then reads what the receiver got and checks that the gateway's spans joined that
trace under the names and attributes of the OpenTelemetry MCP conventions.

Usage: otlp-gateway-client.py <gateway /mcp URL> <receiver /spans URL>
Exits non-zero, saying what failed.
"""

import json
import sys
import time
import urllib.request

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
SECRET_ARGUMENT = "argument-that-must-not-be-exported"


class Session:
    def __init__(self, url):
        self.url = url
        self.session = None
        self.version = None

    def post(self, message):
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        request = urllib.request.Request(
            self.url, data=json.dumps(message).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            self.session = response.headers.get("Mcp-Session-Id") or self.session
            kind = response.headers.get("Content-Type", "")
            body = response.read().decode()
        if "id" not in message:
            return None
        if kind.startswith("text/event-stream"):
            for line in body.splitlines():
                # A priming event has an empty `data`.
                if line.startswith("data:") and line[5:].strip():
                    data = json.loads(line[5:].strip())
                    if data.get("id") == message["id"]:
                        return data
            raise SystemExit(f"no answer to {message['method']} in the stream: {body!r}")
        return json.loads(body)


def check(ok, what):
    if not ok:
        raise SystemExit(f"otlp: FAILED: {what}")


def main():
    url, spans_url = sys.argv[1], sys.argv[2]
    client = Session(url)
    init = client.post({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "otlp-leg", "version": "0"},
        },
    })
    check("result" in init, f"initialize: {init}")
    client.version = init["result"]["protocolVersion"]
    client.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = client.post({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"text": SECRET_ARGUMENT},
            "_meta": {"traceparent": f"00-{TRACE}-{CLIENT_SPAN}-01"},
        },
    })
    check("result" in call and not call["result"].get("isError"), f"tools/call: {call}")

    deadline = time.monotonic() + 20
    while True:
        with urllib.request.urlopen(spans_url, timeout=10) as response:
            received = json.loads(response.read())
        ours = [s for s in received["spans"] if s["traceId"] == TRACE]
        if len(ours) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    check(received["errors"] == [], f"the receiver refused an export: {received['errors']}")
    servers = [s for s in ours if s["kind"] == 2]
    clients = [s for s in ours if s["kind"] == 3]
    check(len(servers) == 1 and len(clients) == 1, f"one server and one client span: {ours}")
    server, upstream = servers[0], clients[0]
    check(server["name"] == "tools/call echo", f"server span name {server['name']!r}")
    check(server["parentSpanId"] == CLIENT_SPAN, f"server span parent {server['parentSpanId']}")
    check(upstream["parentSpanId"] == server["spanId"], "the client span is the server span's child")
    check(server["resource"].get("service.name") == "mcp-host-otlp-leg", f"{server['resource']}")
    attributes = server["attributes"]
    for key, value in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "tcp"),
        ("jsonrpc.request.id", "2"),
        ("mcp.protocol.version", client.version),
    ]:
        check(attributes.get(key) == value, f"server span {key} = {attributes.get(key)!r}")
    session_id = attributes.get("mcp.session.id") or ""
    check(session_id.startswith("session-"), f"server span mcp.session.id {session_id!r}")
    check(client.session, "the gateway gave an Mcp-Session-Id")
    check(client.session not in json.dumps(received["bodies"]), "the Mcp-Session-Id was exported")
    check(upstream["attributes"].get("network.transport") == "pipe", f"{upstream['attributes']}")
    check(SECRET_ARGUMENT not in json.dumps(received["bodies"]), "an argument was exported")
    check(SECRET_ARGUMENT in json.dumps(call), "the call went through")
    print("otlp: the gateway's spans joined the client's trace in the receiver")


if __name__ == "__main__":
    main()
