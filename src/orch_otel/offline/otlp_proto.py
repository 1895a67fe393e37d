"""OTLP protobuf (``TracesData`` / ``ExportTraceServiceRequest``, the same wire
format) decoded with ``opentelemetry-proto`` into span records."""

from __future__ import annotations

import base64
from typing import Any

from ..spans import EventRecord, LinkRecord, SpanRecord
from .records import KINDS, REMOTE_PARENT, BadField, Chunk, Problem

_STATUS = {0: "unset", 1: "ok", 2: "error"}


def _traces_data_type() -> Any:
    try:
        from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("reading OTLP protobuf needs opentelemetry-proto: pip install 'orch-otel[otlp]'") from exc
    return TracesData


def any_value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(any_value(x) for x in v.array_value.values)
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    return getattr(v, kind)


def attributes(items: Any) -> dict[str, Any]:
    return {kv.key: (any_value(kv.value) if kv.HasField("value") else None) for kv in items}


def _id(raw: bytes, size: int, what: str) -> str:
    if len(raw) != size or not any(raw):
        raise BadField(f"{what}: expected {size} bytes (not all zero), got {len(raw)}")
    return raw.hex()


def span_of(s: Any, resource: dict[str, Any], scope: str = "", scope_version: str = "") -> SpanRecord:
    parent_id = _id(s.parent_span_id, 8, "parent_span_id") if s.parent_span_id else None
    start = s.start_time_unix_nano
    end = s.end_time_unix_nano or start
    if not 0 <= s.kind < len(KINDS):
        raise BadField(f"kind: expected a SpanKind (0-5), got {s.kind}")
    status = _STATUS.get(s.status.code)
    if status is None:
        raise BadField(f"status.code: expected 0, 1 or 2, got {s.status.code}")
    return SpanRecord(
        _id(s.trace_id, 16, "trace_id"),
        _id(s.span_id, 8, "span_id"),
        parent_id,
        s.name,
        start,
        end,
        status,
        s.status.message,
        attributes(s.attributes),
        tuple(EventRecord(e.name, e.time_unix_nano, attributes(e.attributes)) for e in s.events),
        tuple(LinkRecord(_id(link.trace_id, 16, "links.trace_id"), _id(link.span_id, 8, "links.span_id"),
                         attributes(link.attributes)) for link in s.links),
        resource,
        parent_id is not None and bool(s.flags & REMOTE_PARENT),
        KINDS[s.kind],
        scope,
        scope_version,
    )


def decode_message(payload: bytes, chunk: Chunk) -> None:
    """Add the spans of one serialized ``TracesData`` message to ``chunk``."""
    from google.protobuf.message import DecodeError

    data = _traces_data_type()()
    try:
        data.ParseFromString(payload)
    except DecodeError as exc:
        chunk.problems.append(Problem(chunk.where, f"undecodable OTLP protobuf message: {exc}",
                                      base64.b64encode(payload).decode("ascii")))
        return
    for r, rs in enumerate(data.resource_spans):
        resource = attributes(rs.resource.attributes)
        for c, ss in enumerate(rs.scope_spans):
            for k, s in enumerate(ss.spans):
                try:
                    chunk.add(span_of(s, resource, ss.scope.name, ss.scope.version))
                except BadField as exc:
                    raw = base64.b64encode(s.SerializeToString()).decode("ascii")
                    chunk.problems.append(Problem(chunk.where, f"resource_spans[{r}].scope_spans[{c}].spans[{k}]: {exc}",
                                                  raw, is_span=True))
