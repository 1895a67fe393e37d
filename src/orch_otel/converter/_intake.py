"""The spans of one trace as the walk takes them, checked first:

* **Not orchestration.** A span tree with no orch-otel span in it (an HTTP
  server's request spans, database spans, a peer service's root spans) is
  no run: :class:`NotOrchestration` is raised, and callers count it.
* **Context above the run.** Spans of other instrumentations above the
  orch-otel root (a web framework's server span) are context, not agents:
  they are left out, and the run is rooted at its orch-otel root.
* **Clock steps.** A span that ends before it starts (the wall clock stepped
  back) ends at its start; a time past 2262 (beyond 2^63 ns, no clock's)
  is replaced: a span's end by its start, a start by the trace's earliest.
  Each repair is a problem the caller reports; the run keeps its root and task.
* **Sizes.** Names, reasons and ids longer than ``MAX_NAME_CHARS`` are cut
  (content texts are not: they go to the content store by ref).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..spans import EventRecord, SpanRecord
from ..vocabulary import INSTRUMENTATION_NAME, MAX_NAME_CHARS, Attr, SpanEvent
from ._builder import _CONTENT_TEXTS

_OWN_SCOPES = ("", INSTRUMENTATION_NAME)  # "": records whose source did not say
_OWN_EVENTS = frozenset(v for k, v in vars(SpanEvent).items() if k.isupper() and v != SpanEvent.EXCEPTION)
_LAST_NS = (1 << 63) - 1  # 2262-04-11: past it, a time is no clock's reading


class NotOrchestration(ValueError):
    """The spans hold no orch-otel span (after a foreign log's mapping): no run to write."""


def is_own(span: SpanRecord) -> bool:
    """An orch-otel span: an agent, workflow, tool or model call, or one carrying orchestration events."""
    return span.scope in _OWN_SCOPES and (Attr.OPERATION in span.attributes or any(e.name in _OWN_EVENTS for e in span.events))


def intake(spans: Iterable[SpanRecord], problems: list[str]) -> list[SpanRecord]:
    """The spans to walk (first copy of each id), repaired as the module says; repairs go to ``problems``."""
    by_id: dict[str, SpanRecord] = {}
    for span in spans:
        by_id.setdefault(span.span_id, span)
    if not by_id:
        raise ValueError("a trace needs at least one span")
    own = {sid for sid, span in by_id.items() if is_own(span)}
    if not own:
        raise NotOrchestration(f"no orch-otel span among {len(by_id)} span(s): not an orchestration run")
    if len(own) < len(by_id):
        _drop_context(by_id, own)
    earliest = min((s.start_ns for s in by_id.values() if s.start_ns <= _LAST_NS), default=0)
    out = []
    for span in by_id.values():
        if span.end_ns < span.start_ns or span.end_ns > _LAST_NS or span.start_ns > _LAST_NS:
            span = _clock(span, earliest, problems)
        if _oversized(span):
            span = _capped(span)
        out.append(span)
    return out


def _drop_context(by_id: dict[str, SpanRecord], own: set[str]) -> None:
    """Leave out the spans above (or beside) the run that are not orch-otel's, and
    root the run at its orch-otel root(s). Spans below an orch-otel span stay, and
    so do orphans (their missing parent makes the trace incomplete, as before)."""
    state: dict[str, str] = {}  # span id -> "run" (orch-otel's, or below one), "context", "orphan"
    for sid in by_id:
        chain: list[str] = []
        cur: str | None = sid
        result = "orphan"
        while cur is not None:
            if cur in state:
                result = state[cur]
                break
            span = by_id.get(cur)
            if span is None or cur in chain:  # a missing parent, or a parent cycle
                break
            if cur in own:
                result = "run"
                break
            chain.append(cur)
            if span.parent_id is None or span.parent_is_remote:
                result = "context"
                break
            cur = span.parent_id
        for seen in chain:
            state[seen] = result
        state.setdefault(sid, result)
    for sid in own:
        span = by_id[sid]
        if span.parent_id is not None and state.get(span.parent_id) == "context":
            by_id[sid] = dataclasses.replace(span, parent_is_remote=True)  # the run's root: its parent is context
    for sid, where in state.items():
        if where == "context":
            del by_id[sid]


def _clock(span: SpanRecord, earliest: int, problems: list[str]) -> SpanRecord:
    start, end = span.start_ns, span.end_ns
    if start > _LAST_NS:
        problems.append(f"span {span.span_id}: start time {start} ns is past the year 2262; set to the trace's earliest")
        start = earliest
    if end > _LAST_NS:
        problems.append(f"span {span.span_id}: end time {end} ns is past the year 2262; set to its start")
        end = start
    elif end < start:
        problems.append(f"span {span.span_id}: ends {start - end} ns before it starts (a clock step?); "
                        "its end set to its start")
        end = start
    events = span.events
    if any(e.time_ns > _LAST_NS for e in events):
        events = tuple(EventRecord(e.name, end, e.attributes) if e.time_ns > _LAST_NS else e for e in events)
        problems.append(f"span {span.span_id}: event times past the year 2262 set to its end")
    return dataclasses.replace(span, start_ns=start, end_ns=end, events=events)


def _long_values(attrs: Mapping[str, Any]) -> bool:
    """Any value (or item of a list value) longer than ``MAX_NAME_CHARS``, content texts aside.
    One loop, the length first: almost every value is short (this runs on every span)."""
    for key, value in attrs.items():
        kind = type(value)
        if kind is str:
            if len(value) > MAX_NAME_CHARS and key not in _CONTENT_TEXTS:
                return True
        elif (kind is tuple or kind is list) and key not in _CONTENT_TEXTS \
                and any(type(v) is str and len(v) > MAX_NAME_CHARS for v in value):
            return True
    return False


def _oversized(span: SpanRecord) -> bool:
    if len(span.name) > MAX_NAME_CHARS or _long_values(span.attributes):
        return True
    return any(_long_values(e.attributes) for e in span.events)


def cap(text: str) -> str:
    """``text`` cut to ``MAX_NAME_CHARS`` characters, the last an ellipsis (as the view's ``_inputs.capped``)."""
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "\u2026"


def _capped_value(value: Any) -> Any:
    if type(value) is str:
        return cap(value)
    if type(value) in (tuple, list):
        return type(value)(cap(v) if type(v) is str else v for v in value)
    return value


def _capped_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v if k in _CONTENT_TEXTS else _capped_value(v)) for k, v in attrs.items()}


def _capped(span: SpanRecord) -> SpanRecord:
    events = tuple(EventRecord(e.name, e.time_ns, _capped_attrs(e.attributes)) for e in span.events)
    return dataclasses.replace(span, name=cap(span.name), attributes=_capped_attrs(span.attributes), events=events)
