"""The one span-record type the converter takes, whatever the spans came from
(the live SDK, OTLP log files, span dumps)."""

from __future__ import annotations

import base64
import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

__all__ = [
    "EventRecord",
    "LinkRecord",
    "SpanRecord",
    "dump_line",
    "from_readable_span",
    "record_from_dict",
    "record_to_dict",
    "to_dump",
    "to_readable_span",
]


@dataclass(slots=True)
class EventRecord:
    name: str
    time_ns: int
    attributes: Mapping[str, Any]


@dataclass(slots=True)
class LinkRecord:
    trace_id: str
    span_id: str
    attributes: Mapping[str, Any]


@dataclass(slots=True)
class SpanRecord:
    """A finished span. Ids are lowercase hex; times are Unix nanoseconds.

    Records are treated as read-only; they are not frozen because a frozen
    dataclass costs several times more to build, and readers build millions."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    status: str = "unset"  # unset | ok | error
    status_message: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[EventRecord, ...] = ()
    links: tuple[LinkRecord, ...] = ()
    resource: Mapping[str, Any] = field(default_factory=dict)
    parent_is_remote: bool = False
    kind: str = "internal"  # internal | server | client | producer | consumer
    scope: str = ""  # instrumentation scope name ("orch_otel" for orch-otel's spans; "" if unknown)
    # instrumentation scope version ("" if unknown); not compared, so a copy from a
    # source that dropped it (span dumps before it was kept) is still a duplicate, not a conflict
    scope_version: str = field(default="", compare=False)

    @property
    def is_local_root(self) -> bool:
        """True for a span that has no parent in this process."""
        return self.parent_id is None or self.parent_is_remote


_STATUS = {StatusCode.UNSET: "unset", StatusCode.OK: "ok", StatusCode.ERROR: "error"}
_KIND = {kind: kind.name.lower() for kind in SpanKind}


def _plain(mapping: Mapping[str, Any] | None) -> dict[str, Any]:
    """A plain-dict copy (the SDK's attribute mappings copy to a dict at C speed)."""
    if not mapping:
        return {}
    copy = getattr(mapping, "copy", None)
    result = copy() if copy is not None else None
    return result if type(result) is dict else dict(mapping)


def from_readable_span(span: ReadableSpan) -> SpanRecord:
    # Each SDK property is read once: ``events`` and ``links`` copy the span's
    # locked lists on every access, and most spans have neither.
    ctx = span.context
    parent = span.parent
    status = span.status
    scope = span.instrumentation_scope
    events = span.events
    links = span.links
    return SpanRecord(
        trace_id=format(ctx.trace_id, "032x"),
        span_id=format(ctx.span_id, "016x"),
        parent_id=format(parent.span_id, "016x") if parent is not None else None,
        parent_is_remote=bool(parent is not None and parent.is_remote),
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or span.start_time or 0,
        status=_STATUS.get(status.status_code, "unset"),
        status_message=status.description or "",
        attributes=_plain(span.attributes),  # plain dicts: fast lookups downstream
        events=tuple(EventRecord(e.name, e.timestamp, _plain(e.attributes)) for e in events) if events else (),
        links=tuple(
            LinkRecord(format(link.context.trace_id, "032x"), format(link.context.span_id, "016x"), link.attributes or {})
            for link in links
        ) if links else (),
        resource=span.resource.attributes if span.resource is not None else {},
        kind=_KIND.get(span.kind, "internal"),
        scope=scope.name if scope is not None else "",
        scope_version=(scope.version or "") if scope is not None else "",
    )


# -- the project's own span-record JSON (span dumps and the durable spool) ---------------
#
# One JSON object per line, written by the span dump exporter, the durable spool and
# ``orch-otel convert``'s quarantine; read strictly by ``orch_otel.offline.records.from_dump``:
#
#     {"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_id": "<16 hex>"|null,
#      "parent_is_remote": false, "name": "...", "start_ns": 1, "end_ns": 2,
#      "status": "unset"|"ok"|"error", "status_message": "", "kind": "internal", "scope": "orch_otel",
#      "scope_version": "0.1.0", "attributes": {...}, "events": [[name, time_ns, {attributes}]],
#      "links": [[trace_id, span_id, {attributes}]], "resource": {...}}
#
# Attribute values are JSON: bytes as base64 text, mapping keys as text.


def _fields(record: SpanRecord) -> dict[str, Any]:
    return {
        "trace_id": record.trace_id,
        "span_id": record.span_id,
        "parent_id": record.parent_id,
        "parent_is_remote": record.parent_is_remote,
        "name": record.name,
        "start_ns": record.start_ns,
        "end_ns": record.end_ns,
        "status": record.status,
        "status_message": record.status_message,
        "attributes": dict(record.attributes),
        "events": [[e.name, e.time_ns, dict(e.attributes)] for e in record.events],
        "links": [[link.trace_id, link.span_id, dict(link.attributes)] for link in record.links],
        "resource": dict(record.resource),
        "kind": record.kind,
        "scope": record.scope,
        "scope_version": record.scope_version,
    }


def _json_value(value: Any) -> Any:
    """orjson's fallback for the values it cannot write itself (it writes tuples,
    dicts and the JSON scalars at C speed and keys as text with OPT_NON_STR_KEYS):
    the same JSON ``to_dump`` makes of them."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(type(value).__name__)


def dump_line(record: SpanRecord) -> bytes:
    """A span record as one span-dump line (newline included): the bytes of
    ``orjson.dumps(to_dump(record))``, without a Python pass over every value
    (what the durable spool writes for each finished span)."""
    return orjson.dumps(_fields(record), default=_json_value, option=orjson.OPT_NON_STR_KEYS) + b"\n"


def record_from_dict(data: dict[str, Any]) -> SpanRecord:
    """A span-dump object read back leniently (the spool's own lines); raises
    KeyError/TypeError/ValueError on bad data. ``offline.records.from_dump`` is
    the strict reader of untrusted dumps."""
    return SpanRecord(
        trace_id=str(data["trace_id"]),
        span_id=str(data["span_id"]),
        parent_id=data.get("parent_id"),
        parent_is_remote=bool(data.get("parent_is_remote", False)),
        name=str(data["name"]),
        start_ns=int(data["start_ns"]),
        end_ns=int(data["end_ns"]),
        status=str(data.get("status", "unset")),
        status_message=str(data.get("status_message", "")),
        attributes=dict(data.get("attributes") or {}),
        events=tuple(EventRecord(str(n), int(t), dict(a or {})) for n, t, a in data.get("events") or ()),
        links=tuple(LinkRecord(str(t), str(s), dict(a or {})) for t, s, a in data.get("links") or ()),
        resource=dict(data.get("resource") or {}),
        kind=str(data.get("kind", "internal")),
        scope=str(data.get("scope", "")),
        scope_version=str(data.get("scope_version") or ""),
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _attrs_out(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k): _jsonable(v) for k, v in attrs.items()}


def to_dump(span: SpanRecord) -> dict[str, Any]:
    """A span record as a span-dump JSON object, every value JSON-ready (to
    embed in other JSON; :func:`dump_line` writes one line faster)."""
    data = _fields(span)
    for key in ("attributes", "resource"):
        data[key] = _attrs_out(data[key])
    data["events"] = [[n, t, _attrs_out(a)] for n, t, a in data["events"]]
    data["links"] = [[t, s, _attrs_out(a)] for t, s, a in data["links"]]
    return data


def record_to_dict(record: SpanRecord) -> dict[str, Any]:
    """Deprecated, removed in the next release: :func:`to_dump`, which it returns."""
    text = "orch_otel.spans.record_to_dict is deprecated and will be removed in the next release; use to_dump"
    try:
        warnings.warn(text, DeprecationWarning, stacklevel=2)
    except Warning:  # a filter made it an error: the app's call still goes on
        logging.getLogger("orch_otel").warning("orch-otel: %s", text)
    return to_dump(record)


_STATUS_CODE = {"unset": StatusCode.UNSET, "ok": StatusCode.OK, "error": StatusCode.ERROR}


def to_readable_span(record: SpanRecord) -> ReadableSpan:
    """Rebuild an SDK span from a record, so any SpanExporter can send it again."""
    flags = TraceFlags(TraceFlags.SAMPLED)
    context = SpanContext(int(record.trace_id, 16), int(record.span_id, 16), is_remote=False, trace_flags=flags)
    parent = (
        SpanContext(int(record.trace_id, 16), int(record.parent_id, 16), is_remote=record.parent_is_remote, trace_flags=flags)
        if record.parent_id
        else None
    )
    return ReadableSpan(
        name=record.name,
        context=context,
        parent=parent,
        resource=Resource(dict(record.resource)),
        attributes=dict(record.attributes),
        events=[Event(e.name, dict(e.attributes), e.time_ns) for e in record.events],
        links=[
            Link(SpanContext(int(link.trace_id, 16), int(link.span_id, 16), is_remote=True, trace_flags=flags), dict(link.attributes))
            for link in record.links
        ],
        kind=SpanKind[record.kind.upper()] if record.kind.upper() in SpanKind.__members__ else SpanKind.INTERNAL,
        status=Status(_STATUS_CODE.get(record.status, StatusCode.UNSET), record.status_message or None),
        start_time=record.start_ns,
        end_time=record.end_ns,
        instrumentation_scope=(InstrumentationScope(record.scope, record.scope_version or None)
                               if record.scope or record.scope_version else None),
    )
