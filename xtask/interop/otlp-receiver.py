"""An OTLP/HTTP trace receiver built on the official OTLP protobuf definitions
(`opentelemetry-proto` from PyPI), for the gateway's trace test (crates/mcp-gateway,
tests/it/traces.rs, run by `cargo xtask otlp`).

POST /v1/traces takes an ExportTraceServiceRequest in OTLP/JSON and parses it strictly with
`google.protobuf.json_format` (an unknown field, a wrong type or a malformed id is refused
with 400 and recorded). OTLP/JSON writes trace and span ids in hex where the protobuf JSON
mapping has base64, so ids are checked as hex of the right length and converted first, as
the OTLP specification says a receiver must.

GET /spans answers what was received: {"spans": [...], "errors": [...], "bodies": [...]}.
The first line on stdout is "listening <port>"; it serves on 127.0.0.1 until killed.
"""

import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

IDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
LOCK = threading.Lock()
SPANS = []
ERRORS = []
BODIES = []


def ids_to_base64(span, where):
    for key, size in IDS.items():
        if key not in span:
            continue
        value = span[key]
        if not isinstance(value, str) or len(value) != 2 * size:
            raise ValueError(f"{where}.{key}: not {2 * size} hex digits: {value!r}")
        span[key] = base64.b64encode(bytes.fromhex(value)).decode()


def parse(body):
    doc = json.loads(body)
    for r, resource in enumerate(doc.get("resourceSpans", [])):
        for s, scope in enumerate(resource.get("scopeSpans", [])):
            for i, span in enumerate(scope.get("spans", [])):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                ids_to_base64(span, where)
                for j, link in enumerate(span.get("links", [])):
                    ids_to_base64(link, f"{where}.links[{j}]")
    request = ExportTraceServiceRequest()
    json_format.Parse(json.dumps(doc), request, ignore_unknown_fields=False)
    return request


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def record(request):
    out = []
    for resource_spans in request.resource_spans:
        resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    raise ValueError(f"span {span.name!r}: ids of the wrong length")
                if span.parent_span_id and len(span.parent_span_id) != 8:
                    raise ValueError(f"span {span.name!r}: parent id of the wrong length")
                if span.end_time_unix_nano < span.start_time_unix_nano:
                    raise ValueError(f"span {span.name!r}: ends before it starts")
                out.append({
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "traceState": span.trace_state,
                    "name": span.name,
                    "kind": span.kind,
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "attributes": {a.key: value(a.value) for a in span.attributes},
                    "status": span.status.code,
                })
    return out


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            if self.path != "/v1/traces":
                raise ValueError(f"posted to {self.path}")
            if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
                raise ValueError(f"Content-Type {self.headers.get('Content-Type')!r}")
            spans = record(parse(body))
        except Exception as e:  # noqa: BLE001 - every failure is the test's to see
            with LOCK:
                ERRORS.append(f"{type(e).__name__}: {e}")
            self.answer(400, "text/plain", str(e).encode())
            return
        with LOCK:
            SPANS.extend(spans)
            BODIES.append(body.decode())
        response = json_format.MessageToJson(ExportTraceServiceResponse())
        self.answer(200, "application/json", response.encode())

    def do_GET(self):
        with LOCK:
            doc = {"spans": SPANS, "errors": ERRORS, "bodies": BODIES}
        self.answer(200, "application/json", json.dumps(doc).encode())


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
