"""Helpers for the offline tests: record runs, encode spans as the Collector's
file exporter would write them (OTLP JSON lines, length-prefixed protobuf, zstd)."""

from __future__ import annotations

import asyncio
import base64
import random
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson
import zstandard
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orch_otel import demo
from orch_otel.content import ContentPolicy
from orch_otel.exporters import TraceFileExporter
from orch_otel.recorder import Recorder, get_recorder, set_recorder
from orch_otel.spans import SpanRecord
from orch_otel.tracefiles import load_contents, read_lines


def record_demo_runs(trace_dir: Path, runs: int = 2) -> tuple[list[dict], dict[str, str], list[ReadableSpan]]:
    """Run the bundled demo ``runs`` times with content capture, exporting live
    (TraceFileExporter) and keeping the ReadableSpans; returns (live traces,
    live contents, spans)."""
    provider = TracerProvider()
    live = TraceFileExporter(trace_dir)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(live))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    previous = get_recorder()
    set_recorder(Recorder(tracer_provider=provider, content=ContentPolicy(capture=True)))
    try:
        for i in range(runs):
            asyncio.run(demo.run(task_id=f"task-{i}"))
    finally:
        set_recorder(previous)
    provider.shutdown()
    traces = [line.trace for line in read_lines(live.writer.trace_path)]
    return traces, load_contents(trace_dir), list(memory.get_finished_spans())


def _hex_ids(obj: dict) -> dict:
    """proto3 JSON writes ids as base64; the Collector writes hex."""
    for rs in obj.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        link[key] = base64.b64decode(link[key]).hex()
    return obj


def collector_json(message: TracesData) -> dict:
    """A TracesData message as the Collector's JSON: hex ids, int enums, int64 as strings."""
    return _hex_ids(json_format.MessageToDict(message, use_integers_for_enums=True))


def traces_data(spans: Sequence[ReadableSpan]) -> TracesData:
    request = encode_spans(spans)
    return TracesData(resource_spans=request.resource_spans)


def json_lines(batches: Iterable[Sequence[ReadableSpan]]) -> bytes:
    return b"".join(orjson.dumps(collector_json(traces_data(b))) + b"\n" for b in batches)


def framed(payloads: Iterable[bytes], compress: bool = False) -> bytes:
    """Length-prefixed messages, each zstd-compressed when ``compress`` (Collector ``compression: zstd``)."""
    out = b""
    for payload in payloads:
        if compress:
            payload = zstandard.ZstdCompressor().compress(payload)
        out += len(payload).to_bytes(4, "big") + payload
    return out


def proto_file(batches: Iterable[Sequence[ReadableSpan]], compress: bool = False) -> bytes:
    return framed((traces_data(b).SerializeToString() for b in batches), compress)


def zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


# -- OTLP JSON for hand-made span records -------------------------------------------------------


def _any(value) -> dict:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    return {"stringValue": str(value)}


def _attrs(attrs) -> list[dict]:
    return [{"key": k, "value": _any(v)} for k, v in attrs.items()]


def otlp_span(s: SpanRecord) -> dict:
    kind = ["internal", "server", "client", "producer", "consumer"].index(s.kind) + 1
    out = {"traceId": s.trace_id, "spanId": s.span_id, "name": s.name, "kind": kind,
           "startTimeUnixNano": str(s.start_ns), "endTimeUnixNano": str(s.end_ns),
           "attributes": _attrs(s.attributes), "status": {"code": {"unset": 0, "ok": 1, "error": 2}[s.status]},
           "flags": 0x300 if s.parent_is_remote else 0x100}
    if s.parent_id:
        out["parentSpanId"] = s.parent_id
    if s.events:
        out["events"] = [{"timeUnixNano": str(e.time_ns), "name": e.name, "attributes": _attrs(e.attributes)} for e in s.events]
    return out


def otlp_line(spans: Iterable[SpanRecord]) -> bytes:
    data = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": ""},
                                                                               "spans": [otlp_span(s) for s in spans]}]}]}
    return orjson.dumps(data) + b"\n"


def demo_logs(tmp_path: Path, *, runs: int, seed: int, batch: int) -> Path:
    """``tmp_path/logs`` holding ``runs`` demo runs' spans, shuffled, in batches of
    ``batch``: even batches as OTLP JSON lines (``a.json``), odd ones as
    length-prefixed protobuf (``b.pb``)."""
    _, _, spans = record_demo_runs(tmp_path / "live", runs=runs)
    random.Random(seed).shuffle(spans)
    batches = [spans[i:i + batch] for i in range(0, len(spans), batch)]
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.json").write_bytes(json_lines(batches[::2]))
    (folder / "b.pb").write_bytes(proto_file(batches[1::2]))
    return folder
