"""The one span-record type the converter takes, whatever the spans came from
(the live SDK, OTLP log files, span dumps)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode


@dataclass(frozen=True, slots=True)
class EventRecord:
    name: str
    time_ns: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class LinkRecord:
    trace_id: str
    span_id: str
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """A finished span. Ids are lowercase hex; times are Unix nanoseconds."""

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

    @property
    def is_local_root(self) -> bool:
        """True for a span that has no parent in this process."""
        return self.parent_id is None or self.parent_is_remote


_STATUS = {StatusCode.UNSET: "unset", StatusCode.OK: "ok", StatusCode.ERROR: "error"}


def from_readable_span(span: ReadableSpan) -> SpanRecord:
    ctx = span.context
    parent = span.parent
    return SpanRecord(
        trace_id=format(ctx.trace_id, "032x"),
        span_id=format(ctx.span_id, "016x"),
        parent_id=format(parent.span_id, "016x") if parent is not None else None,
        parent_is_remote=bool(parent is not None and parent.is_remote),
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or span.start_time or 0,
        status=_STATUS.get(span.status.status_code, "unset"),
        status_message=span.status.description or "",
        attributes=span.attributes or {},
        events=tuple(EventRecord(e.name, e.timestamp, e.attributes or {}) for e in span.events),
        links=tuple(
            LinkRecord(format(link.context.trace_id, "032x"), format(link.context.span_id, "016x"), link.attributes or {})
            for link in span.links
        ),
        resource=span.resource.attributes if span.resource is not None else {},
    )
