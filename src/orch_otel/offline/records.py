"""What the readers hand the pipeline: span records plus problems, one chunk per
input line (JSON) or message (protobuf), and the strict span-dump reader.

The span dump format is :mod:`orch_otel.spans`'s (:func:`orch_otel.spans.to_dump`
writes it). :func:`from_dump` reads it from untrusted input: every field is
type-checked, and arrays read back as tuples (as the SDK holds them).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._jsonvalues import UINT64_MAX, json_bytes
from ..spans import EventRecord, LinkRecord, SpanRecord, to_dump
from ..tracefiles import Problem as BaseProblem

_TRACE_ID = re.compile(r"[0-9a-f]{32}\Z")
_SPAN_ID = re.compile(r"[0-9a-f]{16}\Z")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16
_STATUSES = frozenset({"unset", "ok", "error"})
KINDS = ("internal", "internal", "server", "client", "producer", "consumer")  # by OTLP SpanKind number
REMOTE_PARENT = 0x200  # OTLP span flags: SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK


class BadField(ValueError):
    """A field of a record has the wrong type or value; the message says which."""


@dataclass
class Problem(BaseProblem):
    """A record that could not be used, and why (``where``, ``reason``: the
    shared :class:`orch_otel.tracefiles.Problem`); ``raw`` is JSON-ready
    (text, object, or base64 bytes)."""

    raw: Any = None
    span: SpanRecord | None = None  # a decoded span that could not be used (late, conflicting, unconvertible)
    is_span: bool = False  # True when this problem is one span (counted in the span balance)
    trace_id: str | None = None  # the bad span's trace, when its id could be read (``--jobs``: its owner reports it)

    def to_line(self) -> bytes:
        """This problem as one JSON line (without the newline); never raises,
        and keeps ``where`` and ``reason`` whatever the input it carries."""
        data = self.to_json()
        key = "span" if "span" in data else "raw" if "raw" in data else None
        head = orjson.dumps({k: data[k] for k in ("where", "reason", "kind")})
        if key is None:
            return head
        return head[:-1] + b',"' + key.encode() + b'":' + json_bytes(data[key]) + b"}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"where": self.where, "reason": self.reason, "kind": "span" if self.is_span else "record"}
        if self.span is not None:
            out["span"] = to_dump(self.span)
        elif self.raw is not None:
            out["raw"] = self.raw
        return out


# Attribute values a quarantined span keeps when content capture is off: names,
# kinds and models (no message, tool argument or result, no exception text).
# Numbers and booleans are kept whatever their key; every other string is left out.
KEPT_TEXT_KEYS = frozenset({
    "gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.agent.id", "gen_ai.workflow.name", "gen_ai.tool.name",
    "gen_ai.tool.call.id", "gen_ai.request.model", "gen_ai.response.model", "gen_ai.system", "gen_ai.provider.name",
    "gen_ai.conversation.id", "openinference.span.kind", "llm.model_name", "llm.provider", "llm.system", "tool.name",
    "traceloop.span.kind", "traceloop.entity.name", "service.name", "orch.task.id", "orch.topology", "orch.decision",
    "orch.stop.reason", "orch.agent.role", "orch.system",
})
LEFT_OUT = "(left out: content capture is off)"


def without_content(record: dict[str, Any]) -> dict[str, Any]:
    """A quarantine record (:meth:`Problem.to_json`) whose span keeps only what
    holds no content: ids, names, kinds, times, numbers and the values of
    :data:`KEPT_TEXT_KEYS`; every other attribute value, a status message and
    undecoded protobuf bytes are replaced by a note. ``orch-otel convert``
    writes this unless ``--capture-content`` was given."""
    if record.get("kind") != "span":
        return record
    out = dict(record)
    for key in ("raw", "span"):
        if key in out:
            out[key] = LEFT_OUT if isinstance(out[key], str) else _scrub(out[key])
    return out


def _kept(key: Any, value: Any) -> Any:
    if value is None or type(value) in (bool, int, float):
        return value
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("boolValue", "intValue", "doubleValue"):
        return value  # an OTLP JSON AnyValue holding a number
    if key in KEPT_TEXT_KEYS and (type(value) is str or (isinstance(value, dict) and "stringValue" in value)):
        return value
    return LEFT_OUT


def _scrub(value: Any, parent: str = "") -> Any:
    """The span (OTLP JSON, or a span dump) with content left out, as :func:`without_content` says."""
    if isinstance(value, list):
        if parent in ("events", "links") and value and all(isinstance(v, list) and len(v) == 3 for v in value):
            return [[v[0], v[1], _scrub(v[2], "attributes")] for v in value]  # span dump: [name|ids, time|id, attrs]
        return [_scrub(v, parent) for v in value]
    if not isinstance(value, dict):
        return value
    if parent == "attributes" and set(value) <= {"key", "value"} and "key" in value:  # OTLP JSON KeyValue
        return {"key": value["key"], "value": _kept(value["key"], value.get("value"))}
    if parent in ("attributes", "resource"):  # span dump: a plain mapping
        return {k: _kept(k, v) for k, v in value.items()}
    out = {}
    for k, v in value.items():
        if k in ("message", "status_message") and isinstance(v, str) and v:
            out[k] = LEFT_OUT
        elif k in ("attributes", "resource", "events", "links", "status"):
            out[k] = _scrub(v, k if k != "status" else "")
        elif isinstance(v, (dict, list)):
            out[k] = _scrub(v, parent)
        else:
            out[k] = v
    return out


@dataclass
class Chunk:
    """The spans and problems of one input line or message. Spans of traces
    that ``keep`` rejects (``--jobs``: another job's) are left out and counted
    in ``skipped``."""

    where: str
    spans: list[SpanRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    keep: Callable[[str], bool] | None = None
    skipped: int = 0

    def add(self, span: SpanRecord) -> None:
        if self.keep is None or self.keep(span.trace_id):
            self.spans.append(span)
        else:
            self.skipped += 1


# -- ids and numbers shared by the JSON readers ---------------------------------------------


def trace_id_of(value: Any, what: str = "traceId") -> str:
    if type(value) is str:
        if len(value) == 32:
            v = value.lower()
            if _TRACE_ID.match(v) and v != _ZERO_TRACE:
                return v
        elif len(value) == 24:  # base64 of 16 bytes (proto3 canonical JSON)
            return _b64_id(value, 16, what)
    raise BadField(f"{what}: expected 32 hex digits (not all zero), got {_short(value)}")


def span_id_of(value: Any, what: str = "spanId") -> str:
    if type(value) is str:
        if _SPAN_ID.match(value) and value != _ZERO_SPAN:  # already lowercase hex: no copy
            return value
        if len(value) == 16:
            v = value.lower()
            if _SPAN_ID.match(v) and v != _ZERO_SPAN:
                return v
        elif len(value) == 12:  # base64 of 8 bytes
            return _b64_id(value, 8, what)
    raise BadField(f"{what}: expected 16 hex digits (not all zero), got {_short(value)}")


def _b64_id(value: str, size: int, what: str) -> str:
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        raw = b""
    if len(raw) != size or not any(raw):
        raise BadField(f"{what}: expected {size * 2} hex digits, got {_short(value)}")
    return raw.hex()


def uint_of(value: Any, what: str) -> int:
    t = type(value)
    if t is int and 0 <= value <= UINT64_MAX:
        return value
    if t is str and value.isascii() and value.isdigit() and (len(value) < 20 or int(value) <= UINT64_MAX):
        return int(value)
    raise BadField(f"{what}: expected a non-negative 64-bit integer, got {_short(value)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- the span dump reader (the format is orch_otel.spans's) -----------------------------------


def _attrs_in(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if type(value) is not dict:
        raise BadField(f"{what}: expected an object")
    return {k: (tuple(v) if type(v) is list else v) for k, v in value.items()}


def _str(obj: dict, key: str, default: str = "") -> str:
    value = obj.get(key, default)
    if value is None:
        return default
    if type(value) is not str:
        raise BadField(f"{key}: expected a string, got {_short(value)}")
    return value


def list_field(obj: dict, key: str, path: str = "") -> list:
    """``obj[key]`` as a list (absent: empty); anything else is a bad field."""
    value = obj.get(key)
    if value is None:
        return []
    if type(value) is not list:
        raise BadField(f"{path}.{key}: expected a list" if path else f"{key}: expected a list")
    return value


def _triple(item: Any, what: str) -> tuple[Any, Any, Any]:
    if type(item) is not list or len(item) != 3:
        raise BadField(f"{what}: expected [name or ids..., attributes] (3 items)")
    return item[0], item[1], item[2]


def from_dump(obj: dict[str, Any]) -> SpanRecord:
    """Parse one span-dump object; raises :class:`BadField` saying what is wrong."""
    parent = obj.get("parent_id")
    start = uint_of(obj.get("start_ns"), "start_ns")
    end = uint_of(obj.get("end_ns", start), "end_ns")
    status = _str(obj, "status", "unset")
    if status not in _STATUSES:
        raise BadField(f"status: expected unset, ok or error, got {_short(status)}")
    kind = _str(obj, "kind", "internal")
    if kind not in KINDS:
        raise BadField(f"kind: expected one of {', '.join(KINDS[1:])}, got {_short(kind)}")
    remote = obj.get("parent_is_remote", False)
    if type(remote) is not bool:
        raise BadField("parent_is_remote: expected true or false")
    events = []
    for i, item in enumerate(list_field(obj, "events")):
        name, time_ns, attrs = _triple(item, f"events[{i}]")
        if type(name) is not str:
            raise BadField(f"events[{i}]: name must be a string")
        events.append(EventRecord(name, uint_of(time_ns, f"events[{i}] time"), _attrs_in(attrs, f"events[{i}] attributes")))
    links = []
    for i, item in enumerate(list_field(obj, "links")):
        link_trace, link_span, attrs = _triple(item, f"links[{i}]")
        links.append(LinkRecord(trace_id_of(link_trace, f"links[{i}] trace id"), span_id_of(link_span, f"links[{i}] span id"),
                                _attrs_in(attrs, f"links[{i}] attributes")))
    return SpanRecord(
        trace_id=trace_id_of(obj.get("trace_id"), "trace_id"),
        span_id=span_id_of(obj.get("span_id"), "span_id"),
        parent_id=None if parent is None else span_id_of(parent, "parent_id"),
        parent_is_remote=remote and parent is not None,
        name=_str(obj, "name"),
        start_ns=start,
        end_ns=end,
        status=status,
        status_message=_str(obj, "status_message"),
        attributes=_attrs_in(obj.get("attributes"), "attributes"),
        events=tuple(events),
        links=tuple(links),
        resource=_attrs_in(obj.get("resource"), "resource"),
        kind=kind,
        scope=_str(obj, "scope"),
        scope_version=_str(obj, "scope_version"),
    )
