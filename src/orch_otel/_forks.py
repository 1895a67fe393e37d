"""What orch-otel keeps per process, made anew in a forked child.

``os.fork()`` copies memory, not threads: in the child a lock that another
thread held is held for ever, and the open traces, file names and spool
segments are the parent's. gunicorn ``--preload``, Celery's prefork pool and
``multiprocessing`` (fork) all fork after ``instrument()``. So each holder of
such state registers a reset that runs in every child (``os.register_at_fork``,
holding the object weakly, as the OTel SDK's batch processor does), and the
spans a child ends that its parent had started (the forking thread's run, which
the parent goes on with and writes) are left to the parent (:func:`inherited`).
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry import trace

from ._faults import log_fault

__all__ = ["after_fork_in_child", "inherited"]

_log = logging.getLogger(__name__)
_fork_ns = 0  # when this process was forked (0: not a forked child of an instrumented process)
_inherited_traces: set[int] = set()  # traces the forking thread was in: its parent writes them
_watching = False


def after_fork_in_child(method: Callable[[], Any]) -> None:
    """Call the bound ``method`` in every forked child while its object lives."""
    if not hasattr(os, "register_at_fork"):  # no fork on this system
        return
    _watch_forks()
    weak = weakref.WeakMethod(method)
    owner = type(getattr(method, "__self__", method)).__name__

    def reset() -> None:
        bound = weak()
        if bound is None:
            return
        try:
            bound()
        except Exception:  # never into the app's fork
            log_fault(_log, logging.WARNING, "orch-otel: could not reset %s after a fork", owner)

    os.register_at_fork(after_in_child=reset)


def inherited(span: Any) -> bool:
    """``span`` was started by the parent before this process was forked, in
    the run the forking thread was in: the parent's copy of it is the one
    written and exported (the child's would be a duplicate)."""
    return bool(_fork_ns) and span.context.trace_id in _inherited_traces and (span.start_time or 0) < _fork_ns


def _watch_forks() -> None:
    global _watching
    if not _watching:
        _watching = True
        os.register_at_fork(after_in_child=_forked)  # before any reset registered after it


def _forked() -> None:
    global _fork_ns
    _fork_ns = time.time_ns()
    context = trace.get_current_span().get_span_context()  # the forking thread's, as it goes on in the child
    if context.is_valid:
        _inherited_traces.add(context.trace_id)
