"""The live exporter: writes one replayable trace per line when a trace's root
span ends. Use it behind the SDK's ``BatchSpanProcessor`` (as ``instrument()``
does) so conversion and file writes stay off the application's threads.

``OTEL_TRACES_EXPORTER=orch_otel`` (zero code) uses its subclass
``orch_otel._zero_code.ZeroCodeExporter``, which adds spooled OTLP export.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import _env as env
from .._assembly import Released, StreamAssembler
from .._faults import log_fault
from ..content import LocalContents
from ..converter import NotOrchestration, content_refs, convert
from ..spans import from_readable_span
from ..tracefiles import TraceWriter

__all__ = ["TraceFileExporter"]

_log = logging.getLogger(__name__)


class TraceFileExporter(SpanExporter):
    """Assembles finished spans per trace and writes each trace as a JSON line
    under ``trace_dir`` (default: ``$ORCH_OTEL_TRACE_DIR`` or ``./orch-traces``)."""

    def __init__(
        self,
        trace_dir: str | os.PathLike[str] | None = None,
        *,
        max_open_traces: int | None = None,
        max_spans_per_trace: int | None = None,
        local_contents: LocalContents | None = None,
    ) -> None:
        limits = env.limits()
        self.local_contents = local_contents  # record for replay: texts that never were on a span
        self.writer = TraceWriter(trace_dir if trace_dir is not None else env.trace_dir())
        self.assembler = StreamAssembler(  # a trace is written as soon as its root ends
            max_open_traces=max_open_traces or limits.max_open_traces,
            max_spans_per_trace=max_spans_per_trace or limits.max_spans_per_trace,
            linger=0,
            remember_span_ids=False,
        )
        self.failed_traces = 0
        self.not_orchestration = 0  # traces with no orch-otel span (an HTTP request's): counted, not written
        self._lock = threading.Lock()
        self._shutdown = False
        self._late_reported = 0

    @property
    def trace_dir(self):
        return self.writer.directory

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        with self._lock:
            add = self.assembler.add
            for span in spans:
                add(from_readable_span(span))
            self._write_released()
            self._report_late()
        return SpanExportResult.SUCCESS

    def _write_released(self) -> None:
        released = self.assembler.released
        for trace in released:
            self._write(trace)
        released.clear()

    def _write(self, released: Released) -> None:
        try:
            result = convert(released.spans.values(), complete=released.complete)
            contents = result.contents
            if self.local_contents is not None:
                contents = {**self.local_contents.take(content_refs(result.trace)), **contents}
            self.writer.write(result.trace, contents)
        except NotOrchestration:
            self.not_orchestration += 1
        except Exception:  # one bad trace must not stop the others; its exception may quote content
            self.failed_traces += 1
            log_fault(_log, logging.WARNING, "orch-otel: could not write trace %s", released.trace_id)

    def _report_late(self) -> None:
        late = self.assembler.stats.late_spans
        if late > self._late_reported:
            _log.warning(
                "orch-otel: %d span(s) ended after their trace's root and were not written (%d so far)",
                late - self._late_reported,
                late,
            )
            self._late_reported = late

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True  # every completed trace is written and flushed when its root ends

    def shutdown(self) -> None:
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            self.assembler.drain()
            self._write_released()
            self.writer.close()
