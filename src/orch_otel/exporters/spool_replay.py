"""``orch-otel spool replay``: re-send the spool segments a dead process left.

Oldest first. A segment whose writer still runs is skipped: always when the
writer holds its lock (:mod:`.spool_dir`), and, for segments of writers that
took no lock (older versions), when a process with the writer's pid runs,
unless ``include_live`` (a pid reused by another process). Spans the writer
noted as taken by the collector are not sent again. A span the collector refuses for good is set aside in ``rejected.aside`` and
unreadable lines are moved to ``unreadable.aside`` (segment and line named),
so the rest goes on; a segment is deleted once all of it was sent or set
aside. Replay stops, leaving the rest, when the collector is unavailable.
Delivery is at least once: a replay may repeat spans the collector already has.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter

from .._faults import log_fault
from ..spans import to_readable_span
from .rejections import Refusal, SetAside, deliver, quarantine_lines
from .spool import CLOSED, _size, acked_in, segment_lines, spool_files, writer_pid
from .spool_dir import DirectoryBytes, clear_dead_locks, writer_holds

_log = logging.getLogger(__name__)


@dataclass
class ReplayResult:
    sent: int = 0
    files_done: int = 0
    files_left: int = 0
    skipped_live: int = 0
    bad_lines: list[str] = field(default_factory=list)
    quarantined: int = 0  # unreadable lines moved to unreadable.aside
    set_aside: dict[str, int] = field(default_factory=dict)  # refused spans put in rejected.aside, by reason


def _pid_alive(pid: int) -> bool:
    if pid <= 0:  # os.kill(0, ...) would signal our own process group
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def replay(directory: str | os.PathLike[str], exporter: SpanExporter, *, include_live: bool = False,
           batch_size: int = 512) -> ReplayResult:
    """Re-send the spool of dead processes, oldest first. A span the collector
    refuses for good is set aside (``rejected.aside``) and unreadable lines are
    moved to ``unreadable.aside`` (segment and line named); a segment is deleted
    once all of it was sent or set aside. Stops, leaving the rest, when the
    collector is unavailable."""
    result = ReplayResult()
    root = Path(directory)
    try:
        _replay_files(root, exporter, include_live, batch_size, result)
    finally:
        clear_dead_locks(root)
        DirectoryBytes(root, lambda: sum(_size(p) for p in spool_files(root))).recount()
    return result


def _live(path: Path, include_live: bool) -> bool:
    if CLOSED in path.name:
        return False
    held = writer_holds(path)
    if held is not None:
        return held
    return not include_live and _pid_alive(writer_pid(path))


def _replay_files(root: Path, exporter: SpanExporter, include_live: bool, batch_size: int,
                  result: ReplayResult) -> None:
    aside = SetAside(root)
    files = spool_files(root)
    for index, path in enumerate(files):
        if _live(path, include_live):
            result.skipped_live += 1
            continue
        acked = acked_in(path)
        batch: list[ReadableSpan] = []
        unreadable: list[tuple[int, bytes, str]] = []
        ok = True
        for lineno, raw, record, problem in segment_lines(path):
            if record is not None and record.span_id in acked:
                continue  # the collector has it
            span = None
            if problem is None:
                try:
                    span = to_readable_span(record)  # type: ignore[arg-type]
                except (KeyError, TypeError, ValueError) as exc:  # e.g. ids that are not hex
                    problem = f"{type(exc).__name__}: {exc}"
            if span is None:
                unreadable.append((lineno, raw, problem))  # type: ignore[arg-type]
                result.bad_lines.append(f"{path}:{lineno}: {problem}")
                continue
            batch.append(span)
            if len(batch) == batch_size:
                ok = _replay_batch(exporter, batch, result, aside)
                if not ok:
                    break
        if ok and batch:
            ok = _replay_batch(exporter, batch, result, aside)
        if ok and unreadable:
            try:
                quarantine_lines(root, path.name, unreadable)
                result.quarantined += len(unreadable)
            except OSError:
                log_fault(_log, logging.WARNING, "orch-otel: could not move unreadable lines aside; %s is kept", path)
                ok = False
        if not ok:
            result.files_left = len(files) - index
            return
        path.unlink()
        result.files_done += 1


def _replay_batch(exporter: SpanExporter, batch: list[ReadableSpan], result: ReplayResult, aside: SetAside) -> bool:
    """Send one batch (refused spans set aside); False when some of it is neither sent nor set aside."""
    refused = not_kept = 0

    def set_aside(span: ReadableSpan, refusal: Refusal) -> None:
        nonlocal refused, not_kept
        refused += 1
        try:
            aside.add_span(span, refusal)
        except OSError:
            log_fault(_log, logging.WARNING, "orch-otel: could not set aside a refused span in %s", aside.path)
            not_kept += 1
            return
        result.set_aside[refusal.reason] = result.set_aside.get(refusal.reason, 0) + 1

    unsent = deliver(exporter.export, batch, set_aside=set_aside)
    result.sent += len(batch) - len(unsent) - refused
    batch.clear()
    return not unsent and not not_kept
