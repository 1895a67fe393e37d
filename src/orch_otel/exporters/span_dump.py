"""The span dump exporter: every finished span as one JSON line, in the span
dump format (:mod:`orch_otel.spans`), which ``orch-otel convert``
reads back into replayable traces.

Use it to keep raw spans beside (or instead of) converted traces, e.g. to
re-convert later with a newer converter::

    provider.add_span_processor(BatchSpanProcessor(SpanDumpExporter("spans/")))
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..spans import dump_line, from_readable_span
from ..tracefiles import private_mkdir, private_opener

__all__ = ["SpanDumpExporter"]


class SpanDumpExporter(SpanExporter):
    """Appends spans to ``path``: a file, or a directory that gets
    ``spans-<time>-<pid>.jsonl``. Each batch is written and flushed whole."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        target = Path(path)
        if target.is_dir() or not target.suffix:
            target = target / f"spans-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
        self.path = target
        self._handle: IO[bytes] | None = None
        self._lock = threading.Lock()
        self._shutdown = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        data = b"".join(dump_line(from_readable_span(s)) for s in spans)
        try:
            with self._lock:
                if self._handle is None:
                    private_mkdir(self.path.parent)
                    self._handle = open(self.path, "ab", opener=private_opener)
                self._handle.write(data)
                self._handle.flush()
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True  # each batch is flushed as it is written

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown = True
            if self._handle is not None:
                self._handle.close()
                self._handle = None
