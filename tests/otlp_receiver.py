"""A minimal OTLP/HTTP trace receiver on loopback, for export tests: it decodes
real ExportTraceServiceRequest bodies and remembers span ids in arrival order."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OTLPReceiver:
    def __init__(self, port: int) -> None:
        self.port = port
        self.span_ids: list[str] = []
        self.spans: list = []
        self.requests = 0
        self._server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def start(self) -> OTLPReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            receiver.spans.append(span)
                            receiver.span_ids.append(span.span_id.hex())
                receiver.requests += 1
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
