"""An OTLP/HTTP trace receiver for the tests: what a collector receives, decoded.

Listens on 127.0.0.1 (an ephemeral port unless --port), prints `listening on <base URL>`
once it listens, and accepts `POST /v1/traces` with an `ExportTraceServiceRequest` in protobuf, as
the OpenTelemetry protocol sends it (`application/x-protobuf`, optionally gzip). It decodes
each request with the official `opentelemetry-proto` bindings and keeps every span; `GET
/spans` answers them as JSON: the trace, span and parent ids in hexadecimal, the name, the
kind, the status, the attributes and the resource's attributes. Anything else is refused,
as a collector would.
"""

import argparse
import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

MAX_BODY = 16 * 1024 * 1024

spans = []
lock = threading.Lock()


def value_of(any_value):
    """An attribute's value as JSON, whatever its type."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("array_value", "kvlist_value"):
        return MessageToDict(getattr(any_value, kind))
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def attributes(pairs):
    return {kv.key: value_of(kv.value) for kv in pairs}


def received(request):
    """The spans of one export, flattened."""
    out = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append(
                    {
                        "traceId": span.trace_id.hex(),
                        "spanId": span.span_id.hex(),
                        "parentSpanId": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "status": span.status.code,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "events": [e.name for e in span.events],
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                    }
                )
    return out


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        if self.path != "/v1/traces":
            return self.answer(404, b"not found", "text/plain")
        if self.headers.get("content-type", "").split(";")[0] != "application/x-protobuf":
            return self.answer(415, b"protobuf only", "text/plain")
        length = int(self.headers.get("content-length", "0"))
        if length > MAX_BODY:
            return self.answer(413, b"too large", "text/plain")
        body = self.rfile.read(length)
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception:  # noqa: BLE001 - a body that is not the message is the client's error
            return self.answer(400, b"not an ExportTraceServiceRequest", "text/plain")
        with lock:
            spans.extend(received(request))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.answer(200, reply, "application/x-protobuf")

    def do_GET(self):
        if self.path != "/spans":
            return self.answer(404, b"not found", "text/plain")
        with lock:
            body = json.dumps(spans).encode()
        self.answer(200, body, "application/json")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
