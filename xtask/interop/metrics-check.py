"""The HTTP gateway's GET /metrics read by prometheus_client's own text parser.

Usage: metrics-check.py BASE_URL TOKEN

Waits for /readyz, makes an MCP session and two tools/call (echo, fail) by hand, then parses
/metrics with prometheus_client.parser.text_string_to_metric_families and checks the families,
their types and the counts those calls made. Exits non-zero with the reason on any mismatch.
"""

import json
import sys
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

BASE, TOKEN = sys.argv[1], sys.argv[2]
AUTH = {"Authorization": "Bearer " + TOKEN}


def fail(why):
    print("metrics-check: " + why, file=sys.stderr)
    sys.exit(1)


def get(path, auth=True):
    req = urllib.request.Request(BASE + path, headers=AUTH if auth else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def post(body, session=None):
    headers = dict(AUTH)
    headers["Content-Type"] = "application/json"
    headers["Accept"] = "application/json, text/event-stream"
    if session:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-06-18"
    req = urllib.request.Request(BASE + "/mcp", data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
        sid = r.headers.get("Mcp-Session-Id")
    # The answer is JSON, or SSE events whose data lines carry it.
    messages = []
    if text.lstrip().startswith("{"):
        messages.append(json.loads(text))
    else:
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                messages.append(json.loads(line[5:]))
    return sid, messages


for _ in range(100):
    status, _, body = get("/readyz")
    if status == 200:
        break
    time.sleep(0.2)
else:
    fail("/readyz never answered 200: %s %s" % (status, body))

status, _, _ = get("/metrics", auth=False)
if status != 401:
    fail("/metrics without the token answered %s, not 401" % status)

sid, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "metrics-check", "version": "0"}}})
if not sid:
    fail("initialize gave no session id")
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
for i, (tool, args) in enumerate([("echo", {"text": "hi"}), ("fail", {})]):
    _, answers = post({"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
                       "params": {"name": tool, "arguments": args}}, sid)
    if not any("result" in a for a in answers):
        fail("tools/call %s got no result: %s" % (tool, answers))

status, headers, text = get("/metrics")
if status != 200:
    fail("/metrics answered %s" % status)
ctype = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
if not ctype.startswith("text/plain; version=0.0.4"):
    fail("/metrics content type %r" % ctype)
if TOKEN in text or sid in text:
    fail("/metrics shows the token or the session id")

families = {f.name: f for f in text_string_to_metric_families(text)}
# The parser names a counter family without its `_total`.
want = {
    "mcp_http_requests": "counter",
    "mcp_http_request_bytes": "counter",
    "mcp_http_response_bytes": "counter",
    "mcp_http_connections": "gauge",
    "mcp_http_connections_refused": "counter",
    "mcp_http_sessions": "gauge",
    "mcp_http_sessions_refused": "counter",
    "mcp_gateway_requests": "counter",
    "mcp_gateway_tool_calls": "counter",
    "mcp_gateway_tool_call_duration_seconds": "histogram",
    "mcp_gateway_upstreams": "gauge",
    "mcp_gateway_ready": "gauge",
}
for name, kind in want.items():
    if name not in families:
        fail("no family %s in:\n%s" % (name, text))
    if families[name].type != kind:
        fail("%s is a %s, not a %s" % (name, families[name].type, kind))


def value(family, sample_name, **labels):
    for s in families[family].samples:
        if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    fail("no sample %s%s in:\n%s" % (sample_name, labels, text))


checks = [
    (value("mcp_gateway_requests", "mcp_gateway_requests_total", method="tools/call", outcome="ok"), 2),
    (value("mcp_gateway_tool_calls", "mcp_gateway_tool_calls_total", upstream="demo", tool="echo", outcome="ok"), 1),
    (value("mcp_gateway_tool_calls", "mcp_gateway_tool_calls_total", upstream="demo", tool="fail", outcome="tool_error"), 1),
    (value("mcp_gateway_tool_call_duration_seconds", "mcp_gateway_tool_call_duration_seconds_count", upstream="demo", tool="echo"), 1),
    (value("mcp_gateway_tool_call_duration_seconds", "mcp_gateway_tool_call_duration_seconds_bucket", upstream="demo", tool="echo", le="+Inf"), 1),
    (value("mcp_gateway_upstreams", "mcp_gateway_upstreams", upstream="demo", state="ready"), 1),
    (value("mcp_gateway_ready", "mcp_gateway_ready"), 1),
    (value("mcp_http_sessions", "mcp_http_sessions"), 1),
]
for got, expected in checks:
    if got != expected:
        fail("a sample is %s, expected %s, in:\n%s" % (got, expected, text))
if value("mcp_http_request_bytes", "mcp_http_request_bytes_total") <= 0:
    fail("no request bytes counted")
print("metrics-check: %d families parsed, counts as expected" % len(families))
