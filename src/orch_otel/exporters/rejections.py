"""Spans the collector refuses: find them, set them aside, go on.

A collector that refuses one batch for good (HTTP 413 for an oversized span,
another non-retryable 4xx, or the exporter's own max request size) must not
stop export. :func:`deliver` sends a batch; when it fails and the collector
still takes an empty request, the batch is halved until each refused span is
alone, and those spans are handed back to be set aside (``rejected.aside`` in
the spool directory). When the collector is unavailable (connection refused,
timeouts, 429/502/503/504, or it refuses even an empty request) nothing is set
aside: the spans stay spooled and are retried.

Why a probe: the OTel SDK's OTLP exporters only return FAILURE. For OTLP/HTTP
exporters built by :func:`observed_http_session` users (``configure.otlp_exporter``)
the HTTP status is seen through a requests transport adapter (public requests
API, no SDK internals), so retryable statuses and connection errors are known
without a probe and the set-aside record names the status. For any other
exporter (OTLP/gRPC keeps its channel private) the empty-request probe decides;
the gRPC exporter orch-otel builds does not retry RESOURCE_EXHAUSTED itself
(:func:`grpc_retryable_codes`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from .._faults import log_fault
from ..spans import SpanRecord, from_readable_span, to_dump
from ..tracefiles import private_opener

_log = logging.getLogger(__name__)
REJECTED_FILE = "rejected.aside"  # not a converter input suffix: `convert DIR` does not pick it up
UNREADABLE_FILE = "unreadable.aside"
RETRYABLE_HTTP = frozenset({429, 502, 503, 504})  # the OTLP/HTTP specification's retryable statuses


# -- what one HTTP export attempt saw (filled in on the exporting thread) -------------------

class _Seen(threading.local):
    status: int | None = None
    transport_error: bool = False


_seen = _Seen()


def observed_http_session() -> Any:
    """A ``requests.Session`` for ``OTLPSpanExporter(session=...)`` that notes, per
    thread, how the last of its requests ended: an HTTP status or a connection failure
    (the exporter retries, so only the last attempt says why the export failed)."""
    import requests
    from requests.adapters import HTTPAdapter

    class _ObservingAdapter(HTTPAdapter):
        def send(self, *args: Any, **kwargs: Any) -> Any:
            try:
                response = super().send(*args, **kwargs)
            except Exception:
                _seen.status, _seen.transport_error = None, True
                raise
            _seen.status, _seen.transport_error = response.status_code, False
            return response

    session = requests.Session()
    session.mount("http://", _ObservingAdapter())
    session.mount("https://", _ObservingAdapter())
    return session


def grpc_retryable_codes() -> frozenset[Any]:
    """The OTLP/gRPC exporter's retryable codes (its defaults) without RESOURCE_EXHAUSTED.

    RESOURCE_EXHAUSTED is what a message over the collector's size limit gets; the
    SDK retries it until its timeout, each time the spool halves a batch. The spool
    retries outages itself, and the empty-request probe tells an overloaded
    collector (it refuses that too) from a refused span."""
    from grpc import StatusCode

    return frozenset({StatusCode.CANCELLED, StatusCode.DEADLINE_EXCEEDED, StatusCode.ABORTED,
                      StatusCode.OUT_OF_RANGE, StatusCode.UNAVAILABLE, StatusCode.DATA_LOSS})


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str
    http_status: int | None = None


def _attempt(send: Callable[[Sequence[ReadableSpan]], SpanExportResult],
             spans: Sequence[ReadableSpan]) -> tuple[bool, int | None, bool]:
    """(sent, HTTP status seen or None, transport error seen)."""
    _seen.status, _seen.transport_error = None, False
    try:
        ok = send(spans) is SpanExportResult.SUCCESS
    except Exception:
        log_fault(_log, logging.WARNING, "orch-otel: the exporter raised; the spans stay in the spool")
        ok = False
    return ok, _seen.status, _seen.transport_error


def _try(send: Callable[[Sequence[ReadableSpan]], SpanExportResult],
         spans: Sequence[ReadableSpan]) -> tuple[bool, Refusal | None]:
    """(True, None) when sent; (False, Refusal) when the collector refuses these
    spans but takes others; (False, None) when it is unavailable (retry later)."""
    ok, status, transport_error = _attempt(send, spans)
    if ok:
        return True, None
    if transport_error or status in RETRYABLE_HTTP:
        return False, None
    if not _attempt(send, [])[0]:  # refuses even an empty request: down, or refusing everything (auth)
        return False, None
    if status is not None:
        return False, Refusal(f"the collector refused it (HTTP {status})", status)
    return False, Refusal("refused without an HTTP status (over the exporter's max request size, or a gRPC "
                          "refusal) while the collector took an empty request")


def deliver(send: Callable[[Sequence[ReadableSpan]], SpanExportResult], spans: Sequence[ReadableSpan], *,
            set_aside: Callable[[ReadableSpan, Refusal], None],
            give_up: Callable[[], bool] = lambda: False) -> list[ReadableSpan]:
    """Send ``spans`` in order; a refused batch is halved until each refused span
    is alone, and that span goes to ``set_aside``. Returns the spans not sent
    because the collector is unavailable (empty: all sent or set aside)."""
    pending: list[Sequence[ReadableSpan]] = [spans] if spans else []
    while pending:
        batch = pending.pop()
        sent, refusal = (False, None) if give_up() else _try(send, batch)
        if sent:
            continue
        if refusal is None:
            return [span for part in reversed([*pending, batch]) for span in part]
        if len(batch) == 1:
            set_aside(batch[0], refusal)
            continue
        middle = len(batch) // 2
        pending += [batch[middle:], batch[:middle]]  # first half next: order kept
    return []


# -- the set-aside files -----------------------------------------------------------------

class SetAside:
    """``rejected.aside`` in the spool directory: one line per refused span, a span
    dump (``to_dump``) plus ``set_aside``: {reason, http_status, at_ns}.
    A span already there is not added again (replay may meet it twice)."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / REJECTED_FILE
        self._ids: set[str] | None = None
        self._lock = threading.Lock()

    def add(self, record: SpanRecord, refusal: Refusal) -> bool:
        """Write the span; False when it was set aside before."""
        with self._lock:
            if self._ids is None:
                self._ids = {span_id for entry in _entries(self.path) if isinstance(span_id := entry.get("span_id"), str)}
            if record.span_id in self._ids:
                return False
            line = to_dump(record)
            line["set_aside"] = {"reason": refusal.reason, "http_status": refusal.http_status, "at_ns": time.time_ns()}
            with open(self.path, "ab", opener=private_opener) as handle:
                handle.write(orjson.dumps(line, default=str) + b"\n")
            self._ids.add(record.span_id)
            return True

    def add_span(self, span: ReadableSpan, refusal: Refusal) -> bool:
        return self.add(from_readable_span(span), refusal)


def quarantine_lines(directory: str | Path, segment: str, lines: Sequence[tuple[int, bytes, str]]) -> None:
    """Move unreadable segment lines aside: ``unreadable.aside``, one JSON line
    each with the segment file name, line number, reason and the raw text."""
    with open(Path(directory) / UNREADABLE_FILE, "ab", opener=private_opener) as handle:
        for lineno, raw, reason in lines:
            entry = {"segment": segment, "line": lineno, "reason": reason,
                     "raw": raw.decode("utf-8", "backslashreplace").rstrip("\n")}
            handle.write(orjson.dumps(entry) + b"\n")


def _entries(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return
    with handle:
        for raw in handle:
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if type(entry) is dict:
                yield entry


@dataclass
class AsideSummary:
    rejected: int = 0
    reasons: dict[str, int] | None = None
    unreadable: int = 0


def summarize(directory: str | Path) -> AsideSummary:
    """What was set aside in a spool directory: refused spans by reason, unreadable lines."""
    reasons: dict[str, int] = {}
    seen: set[Any] = set()
    for entry in _entries(Path(directory) / REJECTED_FILE):
        if entry.get("span_id") in seen:
            continue
        seen.add(entry.get("span_id"))
        about = entry.get("set_aside")
        if type(about) is not dict:
            about = {}
        reason = str(about.get("reason", "unknown"))
        reasons[reason] = reasons.get(reason, 0) + 1
    unreadable = sum(1 for _ in _entries(Path(directory) / UNREADABLE_FILE))
    return AsideSummary(sum(reasons.values()), reasons, unreadable)
