"""Fast path for OTLP JSON (``TracesData`` as the Collector's ``file`` exporter
writes it): walks the ``orjson``-parsed object and builds span records directly.

Accepted as the Collector writes it and as the proto3 JSON mapping allows:
hex ids (base64 ids too), enums as integers (or their names), 64-bit integers
as decimal strings or numbers, ``bytesValue`` as base64, unknown fields
ignored. A span with a wrong-typed field becomes a :class:`Problem` with its
JSON path; the other spans of the line are kept. ``tests/test_offline_readers.py``
checks this path against ``google.protobuf.json_format`` decoding.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterable, Iterator
from typing import Any

from .._jsonvalues import INT64_MAX, INT64_MIN
from ..spans import EventRecord, LinkRecord, SpanRecord
from .records import KINDS, REMOTE_PARENT, BadField, Chunk, Problem, _short, list_field, span_id_of, trace_id_of, uint_of

_STATUS: dict[int | str, str] = {0: "unset", 1: "ok", 2: "error",
           "STATUS_CODE_UNSET": "unset", "STATUS_CODE_OK": "ok", "STATUS_CODE_ERROR": "error"}
_KIND: dict[int | str, str] = {**dict(enumerate(KINDS)), **{f"SPAN_KIND_{k.upper()}": k for k in KINDS},
                               "SPAN_KIND_UNSPECIFIED": "internal"}
_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _int(x: Any) -> int:
    t = type(x)
    if t is str:
        body = x[1:] if x[:1] == "-" else x
        if body.isascii() and body.isdigit():
            x, t = int(x), int
    if t is int:
        if INT64_MIN <= x <= INT64_MAX:
            return x
        raise BadField(f"intValue: {_short(x)} is outside the 64-bit integer range (OTLP intValue is an int64)")
    raise BadField(f"intValue: expected an integer, got {_short(x)}")


def _double(x: Any) -> float:
    t = type(x)
    if t is float or t is int:
        return float(x)
    if t is str:
        if x in _DOUBLES:
            return _DOUBLES[x]
        try:
            return float(x)
        except ValueError:
            pass
    raise BadField(f"doubleValue: expected a number, got {_short(x)}")


def _bool(x: Any) -> bool:
    if type(x) is bool:
        return x
    raise BadField(f"boolValue: expected true or false, got {_short(x)}")


def _string(x: Any) -> str:
    if type(x) is str:
        return x
    raise BadField(f"stringValue: expected a string, got {_short(x)}")


def _bytes(x: Any) -> str:
    if type(x) is str:
        try:
            return base64.b64encode(base64.b64decode(x + "=" * (-len(x) % 4), altchars=b"-_" if "-" in x or "_" in x else None,
                                                     validate=True)).decode("ascii")
        except (ValueError, binascii.Error):
            pass
    raise BadField(f"bytesValue: expected base64 text, got {_short(x)}")


def _array(x: Any) -> tuple:
    if type(x) is not dict:
        raise BadField("arrayValue: expected an object")
    values = x.get("values") or ()
    if type(values) is not list and values != ():
        raise BadField("arrayValue.values: expected a list")
    return tuple(map(any_value, values))


def _kvlist(x: Any) -> dict:
    if type(x) is not dict:
        raise BadField("kvlistValue: expected an object")
    return attributes(x.get("values"))


_ANY = {"stringValue": _string, "intValue": _int, "boolValue": _bool, "doubleValue": _double,
        "arrayValue": _array, "kvlistValue": _kvlist, "bytesValue": _bytes}


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` object as a Python value (arrays as tuples, kvlists as dicts)."""
    if type(v) is not dict:
        raise BadField(f"attribute value: expected an object, got {_short(v)}")
    for key, x in v.items():
        conv = _ANY.get(key)
        if conv is not None:
            return conv(x)
    return None


def attributes(items: Any) -> dict[str, Any]:
    if not items:
        return {}
    if type(items) is not list:
        raise BadField("attributes: expected a list")
    out: dict[str, Any] = {}
    for kv in items:
        if type(kv) is not dict:
            raise BadField("attributes: expected objects with key and value")
        key = kv.get("key", "")  # proto3 JSON omits default (empty) values
        if type(key) is not str:
            raise BadField(f"attributes: key must be a string, got {_short(key)}")
        value = kv.get("value")
        if type(value) is dict and len(value) == 1:  # fast path for the common scalar values
            ((kind, x),) = value.items()
            t = type(x)
            if kind == "stringValue" and t is str or kind == "boolValue" and t is bool:
                out[key] = x
                continue
            if kind == "intValue" and t is str and len(x) < 19 and x.isascii() and x.isdigit():  # < 19 digits: an int64
                out[key] = int(x)
                continue
        try:
            out[key] = None if value is None else any_value(value)
        except BadField as exc:  # name the attribute: "attributes[gen_ai.usage.input_tokens]: intValue: ..."
            raise BadField(f"attributes[{key}]: {exc}") from None
    return out


def _text(span: dict, key: str) -> str:
    value = span.get(key)
    if value is None:
        return ""
    if type(value) is not str:
        raise BadField(f"{key}: expected a string, got {_short(value)}")
    return value


def _events(items: Any) -> tuple[EventRecord, ...]:
    if not items:
        return ()
    if type(items) is not list:
        raise BadField("events: expected a list")
    out = []
    for e in items:
        if type(e) is not dict:
            raise BadField("events: expected objects")
        out.append(EventRecord(_text(e, "name"), uint_of(e.get("timeUnixNano", 0), "events.timeUnixNano"),
                               attributes(e.get("attributes"))))
    return tuple(out)


def _links(items: Any) -> tuple[LinkRecord, ...]:
    if not items:
        return ()
    if type(items) is not list:
        raise BadField("links: expected a list")
    out = []
    for link in items:
        if type(link) is not dict:
            raise BadField("links: expected objects")
        out.append(LinkRecord(trace_id_of(link.get("traceId"), "links.traceId"),
                              span_id_of(link.get("spanId"), "links.spanId"), attributes(link.get("attributes"))))
    return tuple(out)


def trace_id_in(s: Any, trace_ids: dict[str, str]) -> str:
    """A span object's trace id, normalised. ``trace_ids`` remembers ids already
    checked (raw -> normalised): the spans of a batch share a few traces."""
    if type(s) is not dict:
        raise BadField(f"span: expected an object, got {_short(s)}")
    raw = s.get("traceId")
    if type(raw) is not str:
        return trace_id_of(raw)  # raises BadField, naming the field
    trace_id = trace_ids.get(raw)
    if trace_id is None:
        trace_id = trace_ids[raw] = trace_id_of(raw)
    return trace_id


def span_of(s: dict[str, Any], resource: dict[str, Any], scope: str, trace_id: str, scope_version: str = "") -> SpanRecord:
    """One OTLP JSON span object (its trace id read by :func:`trace_id_in`) as a span record."""
    get = s.get
    parent = get("parentSpanId")
    parent_id = span_id_of(parent, "parentSpanId") if parent else None
    start = uint_of(get("startTimeUnixNano", 0), "startTimeUnixNano")
    end = uint_of(get("endTimeUnixNano", 0), "endTimeUnixNano") or start
    status = get("status")
    code, message = "unset", ""
    if status:
        if type(status) is not dict:
            raise BadField("status: expected an object")
        known = _STATUS.get(status.get("code", 0))
        if known is None:
            raise BadField(f"status.code: expected 0, 1 or 2, got {_short(status.get('code'))}")
        code = known
        message = _text(status, "message")
    kind = _KIND.get(get("kind", 0))
    if kind is None:
        raise BadField(f"kind: expected a SpanKind (0-5), got {_short(get('kind'))}")
    flags = get("flags", 0)
    if type(flags) is not int:
        raise BadField(f"flags: expected an integer, got {_short(flags)}")
    events, links = get("events"), get("links")
    return SpanRecord(
        trace_id,
        span_id_of(get("spanId")),
        parent_id,
        _text(s, "name"),
        start,
        end,
        code,
        message,
        attributes(get("attributes")),
        _events(events) if events else (),
        _links(links) if links else (),
        resource,
        parent_id is not None and bool(flags & REMOTE_PARENT),
        kind,
        scope,
        scope_version,
    )


def scope_spans(obj: Any, chunk: Chunk) -> Iterator[tuple[str, Any, dict[str, Any], str, str, list]]:
    """The well-formed ``scopeSpans`` of one OTLP JSON ``TracesData`` object, as
    (JSON path, raw resource attributes, resource, scope name, scope version,
    span objects); each malformed container becomes a problem in ``chunk``."""
    problems, where = chunk.problems, chunk.where
    try:
        resource_spans = list_field(obj, "resourceSpans", "")
    except BadField as exc:
        problems.append(Problem(where, str(exc), obj))
        return
    for r, rs in enumerate(resource_spans):
        path = f"resourceSpans[{r}]"
        try:
            if type(rs) is not dict:
                raise BadField(f"{path}: expected an object")
            res = rs.get("resource") or {}
            if type(res) is not dict:
                raise BadField(f"{path}.resource: expected an object")
            raw_resource = res.get("attributes")
            resource = attributes(raw_resource)
            scope_spans = list_field(rs, "scopeSpans", path)
            if "instrumentationLibrarySpans" in rs and not scope_spans:  # pre-1.0 OTLP name
                scope_spans = list_field(rs, "instrumentationLibrarySpans", path)
        except BadField as exc:
            problems.append(Problem(where, f"{path}: {exc}" if not str(exc).startswith(path) else str(exc), rs))
            continue
        for c, ss in enumerate(scope_spans):
            spath = f"{path}.scopeSpans[{c}]"
            try:
                if type(ss) is not dict:
                    raise BadField(f"{spath}: expected an object")
                items = list_field(ss, "spans", spath)
                scope = ss.get("scope") or {}
                scope_name = scope.get("name", "") if type(scope) is dict else None
                if type(scope_name) is not str:
                    raise BadField(f"{spath}.scope: expected an object with a string name")
                scope_version = scope.get("version") or ""
                if type(scope_version) is not str:
                    raise BadField(f"{spath}.scope.version: expected a string")
            except BadField as exc:
                problems.append(Problem(where, str(exc), ss))
                continue
            yield spath, raw_resource, resource, scope_name, scope_version, items


def decode_spans(spath: str, items: Iterable[tuple[int, Any]], resource: dict[str, Any], scope_name: str,
                 scope_version: str, chunk: Chunk, trace_ids: dict[str, str]) -> None:
    """Add the span objects ``items`` (each with its index in ``spath``'s spans) to ``chunk``."""
    spans, problems, where, keep = chunk.spans, chunk.problems, chunk.where, chunk.keep
    for k, s in items:
        trace_id = None
        try:
            trace_id = trace_id_in(s, trace_ids)
            if keep is not None and not keep(trace_id):  # before decoding: the span is another job's
                chunk.skipped += 1
                continue
            spans.append(span_of(s, resource, scope_name, trace_id, scope_version))
        except BadField as exc:
            problems.append(Problem(where, f"{spath}.spans[{k}]: {exc}", s, is_span=True, trace_id=trace_id))


def decode_traces_data(obj: Any, chunk: Chunk) -> None:
    """Add the spans (and problems) of one OTLP JSON ``TracesData`` object to ``chunk``."""
    trace_ids: dict[str, str] = {}
    for spath, _, resource, scope_name, scope_version, items in scope_spans(obj, chunk):
        decode_spans(spath, enumerate(items), resource, scope_name, scope_version, chunk, trace_ids)


def decode_fragment(fragment: list, chunk: Chunk) -> None:
    """Add the spans of a fragment of a ``TracesData`` object to ``chunk``: a list of
    [JSON path, raw resource attributes, scope name, scope version, [[index, span], ...]]
    (``--engine ray`` ships spans between its stages this way), with the same
    spans and problems as :func:`decode_traces_data` on the whole object."""
    trace_ids: dict[str, str] = {}
    for spath, raw_resource, scope_name, scope_version, items in fragment:
        decode_spans(spath, items, attributes(raw_resource), scope_name, scope_version, chunk, trace_ids)
