"""SIGTERM: how systemd, Docker, Kubernetes and ``multiprocessing.Pool.terminate``
stop a process. Its default action ends the process at once, without atexit,
so spans still queued for the collector would wait in the spool for a replay.

``instrument()`` installs a handler only where SIGTERM has that default action
(nothing in the process handles it) and only from the main thread. The handler
does what exit would (the open runs written, marked incomplete; the queued spans
sent, waiting for the collector at most ``ORCH_OTEL_SHUTDOWN_TIMEOUT_MS``; the
spool closed), then restores the default action and raises SIGTERM again: the
process ends as it would have, killed by SIGTERM, its parent sees the same
status. A second SIGTERM meanwhile ends it at once. A forked child gets the
default action back (:func:`_reset_in_forked_children`). Where the app or its server
has a handler of its own (uvicorn, gunicorn, Celery), nothing is installed:
that handler decides how the process ends, and orch-otel's trace files, written
as each run ends, and the spool's acknowledgements lose nothing either way.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable

from ._faults import log_fault

_log = logging.getLogger(__name__)
_stop: Callable[[], None] | None = None
_wait_s = 0.0


def install(stop: Callable[[], None], wait_s: float) -> bool:
    """Run ``stop`` (waiting at most ``wait_s``) before SIGTERM's default action; True if installed."""
    global _stop, _wait_s
    if not hasattr(signal, "SIGTERM") or threading.current_thread() is not threading.main_thread():
        return False
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return False  # someone handles it: theirs to decide
        _stop, _wait_s = stop, wait_s
        signal.signal(signal.SIGTERM, _on_sigterm)
        _reset_in_forked_children()
        return True
    except (ValueError, OSError):  # not the main interpreter, say
        return False


def uninstall() -> None:
    """Give SIGTERM back its default action, if the handler is still ours."""
    global _stop
    _stop = None
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError):
        pass


_child_reset_registered = False


def _reset_in_forked_children() -> None:
    """A forked child (a ``multiprocessing`` pool worker, say) gets SIGTERM's
    default action back. A Python handler runs only when the main thread runs
    Python code: a pool worker waiting in C on its task queue's lock, with
    another thread alive to take the signal, would live on after
    ``Pool.terminate()`` (seen: the pool's join hung). Its runs are written as
    they end, so the default action, an instant end as without orch-otel,
    loses no trace file; spans still queued for the collector wait in the
    spool for ``orch-otel spool replay``."""
    global _child_reset_registered
    if _child_reset_registered or not hasattr(os, "register_at_fork"):
        return
    _child_reset_registered = True
    os.register_at_fork(after_in_child=_restore_default_in_child)


def _restore_default_in_child() -> None:
    global _stop
    try:
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            _stop = None
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError):  # never into the app's fork
        pass


def _on_sigterm(signum: int, frame: object) -> None:
    stop = _stop
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    if stop is not None:
        # on a helper thread: the interrupted code may hold a lock the flush needs
        done = threading.Event()

        def run() -> None:
            try:
                stop()
            except Exception:
                log_fault(_log, logging.WARNING, "orch-otel: flushing at SIGTERM failed")
            finally:
                done.set()

        try:
            threading.Thread(target=run, name="orch-otel-sigterm", daemon=True).start()
            done.wait(_wait_s)
        except RuntimeError:  # no new threads at interpreter shutdown
            pass
    signal.raise_signal(signum)  # the default action, as if no one had been in the way
