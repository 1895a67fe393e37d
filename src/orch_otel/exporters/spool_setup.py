"""Where the durable spool goes: the configured directory, else (it cannot be
made or written: a read-only working directory, say) this user's directory
under the system temp directory, else no spool at all. Setting up export
never raises into the app.

A temp directory keeps what the spool is for (spans survive a collector
outage and a crash, and ``orch-otel spool replay`` finds them: the warning
names the directory), where dropping the spool would lose every span the
collector does not take at once.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

from .._faults import log_fault
from .batching import AccountedBatchSpanProcessor
from .durable import DurableBatchSpanProcessor

_log = logging.getLogger(__name__)


def spooled_export(exporter: SpanExporter, spool_dir: str | os.PathLike[str], *, max_spool_bytes: int,
                   max_queue_size: int, rebuild: Callable[[], SpanExporter] | None = None) -> SpanProcessor:
    """OTLP export through a :class:`DurableBatchSpanProcessor` spooling in
    ``spool_dir``. When that directory cannot be made or written (``./orch-spool``
    under a read-only working directory, say), the spool goes to a directory of
    this user's under the system temp directory instead, named in one warning, so
    spans still survive a collector outage and a crash; if even that fails,
    spans are exported without a spool (one warning). ``rebuild`` makes the
    exporter anew in a forked child. Never raises."""
    wanted = Path(spool_dir)
    for directory in (wanted, fallback_spool_dir()):
        if directory is None or not _usable_dir(directory, private=directory != wanted):
            continue
        try:
            processor = DurableBatchSpanProcessor(exporter, directory, max_spool_bytes=max_spool_bytes,
                                                  max_queue_size=max_queue_size, rebuild=rebuild)
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: could not open the spool in %s", directory)
            continue
        if directory != wanted:
            _log.warning("orch-otel: cannot write the spool directory %s; spooling in %s instead "
                         "(set ORCH_OTEL_SPOOL_DIR to choose)", wanted, directory)
        return processor
    _log.warning("orch-otel: cannot write the spool directory %s nor one under %s; OTLP export goes on without "
                 "a spool, so spans the collector does not take are lost (counted)", wanted, tempfile.gettempdir())
    return AccountedBatchSpanProcessor(exporter, max_queue_size=max_queue_size)


def fallback_spool_dir() -> Path | None:
    """This user's spool under the system temp directory (``$TMPDIR/orch-spool-<uid>``)."""
    try:
        uid = os.getuid() if hasattr(os, "getuid") else None
        return Path(tempfile.gettempdir()) / (f"orch-spool-{uid}" if uid is not None else "orch-spool")
    except Exception:  # no usable temp directory at all
        return None


def _usable_dir(directory: Path, *, private: bool) -> bool:
    """``directory`` exists (made now if need be) and we can write it; ``private``
    (in the shared temp directory): made only for us, and not someone else's."""
    try:
        directory.mkdir(mode=0o700 if private else 0o777, parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK | os.X_OK):
            return False
        return not (private and hasattr(os, "getuid") and directory.stat().st_uid != os.getuid())
    except OSError:
        return False
