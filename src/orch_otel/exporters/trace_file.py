"""The live exporter: writes one replayable trace per line when a trace's root
span ends. ``instrument()`` puts it behind :class:`TraceFileProcessor`, a batch
processor that writes a trace before its root span's end returns, so a process
that leaves without running atexit (``multiprocessing`` pool workers, SIGTERM
re-raised by uvicorn, ``os._exit``) has written every run that ended; the
other spans are batched off the application's threads.

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
from .._forks import after_fork_in_child
from ..content import LocalContents
from ..converter import NotOrchestration, content_refs, convert
from ..spans import from_readable_span
from ..tracefiles import TraceWriter
from .batching import AccountedBatchSpanProcessor

__all__ = ["TraceFileExporter", "TraceFileProcessor"]

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
        token_contents: LocalContents | None = None,
    ) -> None:
        limits = env.limits()
        self.local_contents = local_contents  # record for replay: texts that never were on a span
        self.token_contents = token_contents  # token capture: ids and logprobs, never on a span
        self.writer = TraceWriter(trace_dir if trace_dir is not None else env.trace_dir())
        self._limits = (max_open_traces or limits.max_open_traces, max_spans_per_trace or limits.max_spans_per_trace)
        self.failed_traces = 0
        self.not_orchestration = 0  # traces with no orch-otel span (an HTTP request's): counted, not written
        self._shutdown = False
        self._start()
        after_fork_in_child(self._forked)

    def _start(self) -> None:
        self.assembler = StreamAssembler(  # a trace is written as soon as its root ends
            max_open_traces=self._limits[0],
            max_spans_per_trace=self._limits[1],
            linger=0,
            remember_span_ids=False,
        )
        self._lock = threading.Lock()
        self._late_reported = 0

    def _forked(self) -> None:
        """A forked child starts with no open trace (those are its parent's to
        write) and files of its own; a lock held across the fork is dropped."""
        self._start()
        self.writer.forked()

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
            local = [store for store in (self.local_contents, self.token_contents) if store is not None]
            if local:
                refs = content_refs(result.trace)
                contents = {k: v for store in local for k, v in store.take(refs).items()} | contents
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


class TraceFileProcessor(AccountedBatchSpanProcessor):
    """The batch processor in front of :class:`TraceFileExporter`: when a root
    span ends (no parent, or a remote one), its trace is written before
    ``on_end`` returns, on the ending thread; every other span is only queued.
    A run's end therefore costs its app the conversion and one line write, and
    nothing a process does after a run ended can lose that run."""

    def on_end(self, span: ReadableSpan) -> None:
        super().on_end(span)
        parent = span.parent
        if (parent is None or parent.is_remote) and span.context.trace_flags.sampled:
            self.force_flush()  # the SDK exports the queue on this thread, under its export lock
