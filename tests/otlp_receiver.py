"""A minimal OTLP trace receiver on loopback, for export tests: it decodes
real ExportTraceServiceRequest messages (OTLP/HTTP protobuf, or OTLP/gRPC with
``protocol="grpc"``) and remembers the spans in arrival order.

``reject_over_bytes=N``: a request larger than N bytes is refused as a
collector with that request size limit does (HTTP 413; gRPC RESOURCE_EXHAUSTED)
and none of its spans is kept.

Faults (OTLP/HTTP): ``status`` other than 200 refuses every request with that
status (503: the exporter retries) and keeps nothing; ``delay_s`` answers each
request only after that long (a slow collector), keeping its spans, whose ids
also go to ``slow_span_ids``: an exporter that gave up on such a request sends
them again (documented at-least-once delivery)."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
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
    def __init__(self, port: int, protocol: str = "http/protobuf", *, reject_over_bytes: int | None = None) -> None:
        assert protocol in ("http/protobuf", "grpc"), protocol
        self.port = port
        self.protocol = protocol
        self.reject_over_bytes = reject_over_bytes
        self.rejected_requests = 0
        self.span_ids: list[str] = []
        self.spans: list = []
        self.scopes: dict[str, tuple[str, str]] = {}  # span id -> (scope name, scope version)
        self.requests = 0
        self.status = 200
        self.delay_s = 0.0
        self.refused = 0
        self.slow_span_ids: set[str] = set()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._grpc_server = None

    @property
    def base_url(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT is set to."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        """The traces URL an OTLP/HTTP exporter posts to."""
        return f"{self.base_url}/v1/traces"

    def _too_large(self, size: int) -> bool:
        if self.reject_over_bytes is None or size <= self.reject_over_bytes:
            return False
        with self._lock:
            self.rejected_requests += 1
        return True

    def names(self) -> Counter:
        return Counter(span.name for span in self.spans)

    def _receive(self, request: ExportTraceServiceRequest, slow: bool = False) -> None:
        with self._lock:
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(span)
                        self.span_ids.append(span.span_id.hex())
                        self.scopes[span.span_id.hex()] = (scope_spans.scope.name, scope_spans.scope.version)
                        if slow:
                            self.slow_span_ids.add(span.span_id.hex())
            self.requests += 1

    def start(self) -> OTLPReceiver:
        if self.protocol == "grpc":
            return self._start_grpc()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver._too_large(len(body)):
                    self.send_response(413)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                delay_s = receiver.delay_s
                if delay_s:
                    time.sleep(delay_s)
                if receiver.status != 200:
                    with receiver._lock:
                        receiver.refused += 1
                    self.send_response(receiver.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                receiver._receive(ExportTraceServiceRequest.FromString(body), slow=bool(delay_s))
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # a slow answer the exporter gave up on
                    pass

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def _start_grpc(self) -> OTLPReceiver:
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        receiver = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):  # noqa: N802 (gRPC service API)
                if receiver._too_large(request.ByteSize()):
                    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "request too large")
                receiver._receive(request)
                return ExportTraceServiceResponse()

        self._grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self._grpc_server)
        self._grpc_server.add_insecure_port(f"127.0.0.1:{self.port}")
        self._grpc_server.start()
        return self

    def stop(self) -> None:
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=None)
            self._grpc_server = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
