"""Instrument a framework when the app imports it, not before.

``instrument()`` (and ``opentelemetry-instrument``) run in processes that may
never use LangGraph or AutoGen; importing them there costs most of a second
and loads ``pydantic.v1``. So an instrumentor patches its framework at once
only if the framework is already imported; otherwise it registers a wrapt
post-import hook that patches on the first import, right after the
framework's module body ran and before the importing code gets any name from
it (class and module attribute patches need nothing earlier).

The hook runs inside the app's import statement, so it never raises: a fault
is logged (type name only), what was patched before it is undone, and the
framework stays uninstrumented. An eager patch that fails is undone as far as
it went too, then raises (``BaseInstrumentor`` never calls ``uninstrument()``
after a failed ``instrument()``). wrapt cannot take a hook back, so
``cancel()`` marks it inert instead.

:class:`LazyInstrumentor` is the shape every orch-otel instrumentor shares: a
contrib-style ``BaseInstrumentor`` whose parts (a module to wait for and the
function that patches through a ``Patches`` record) each run so.
"""

from __future__ import annotations

import logging
import sys
import threading
from abc import abstractmethod
from collections.abc import Callable, Sequence
from functools import partial
from types import ModuleType
from typing import Any, NamedTuple

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor

from .._faults import log_fault
from ._patch import Patches

_log = logging.getLogger(__name__)

PENDING, APPLIED, FAILED, CANCELLED = "pending", "applied", "failed", "cancelled"


class WhenImported:
    """Run ``apply`` exactly once: now if ``module`` is imported, else on its
    first import; ``cancel()`` stops a pending run. If ``apply`` fails,
    ``undo`` takes back what it did. ``what`` names the framework in log lines."""

    def __init__(self, module: str, apply: Callable[[], None], undo: Callable[[], None], what: str) -> None:
        self.module = module
        self._apply = apply
        self._undo = undo
        self._what = what
        self._lock = threading.Lock()
        self.state = PENDING

    def start(self) -> None:
        """Apply now if the module is imported (a fault raises to the caller,
        as an eager ``instrument()`` does), else wait for its import."""
        if self.module in sys.modules:
            with self._lock:
                if self.state != PENDING:
                    return
                try:
                    self._apply()
                except BaseException:
                    self.state = FAILED
                    self._undo_failed()
                    raise
                self.state = APPLIED
            return
        # wrapt calls the hook at once if another thread imported it meanwhile.
        wrapt.register_post_import_hook(self._on_import, self.module)

    def cancel(self) -> bool:
        """Stop a pending hook; True if ``apply`` had already run (then the
        caller undoes it), even if it failed (then it was undone already).
        Waits for an ``apply`` in progress."""
        with self._lock:
            if self.state == PENDING:
                self.state = CANCELLED
            return self.state in (APPLIED, FAILED)

    def _on_import(self, module: ModuleType) -> None:
        try:
            with self._lock:
                if self.state != PENDING:
                    return
                self.state = FAILED  # unless apply returns
                try:
                    self._apply()
                except Exception:
                    self._undo_failed()
                    raise
                self.state = APPLIED
        except Exception:  # the app's import must succeed whatever happens here
            log_fault(_log, logging.WARNING, "orch-otel: could not instrument %s on its import; it is not traced",
                      self._what)

    def _undo_failed(self) -> None:
        try:
            self._undo()
        except Exception:
            log_fault(_log, logging.WARNING, "orch-otel: could not undo a failed instrumentation of %s", self._what)


class OnImport(NamedTuple):
    """One part of an instrumentor: ``apply(patches)`` patches the framework
    once ``module`` is imported; ``what`` names the framework in log lines."""

    module: str
    apply: Callable[[Patches], None]
    what: str


class LazyInstrumentor(BaseInstrumentor):
    """An instrumentor that patches its framework on the framework's first import.

    A subclass declares the versions it supports (``instrumentation_dependencies``)
    and its parts (``_parts``); each part patches through a ``Patches`` record
    of its own, so ``uninstrument()`` (cancelling the parts still waiting,
    undoing the applied ones, latest first), a failed part and a failed
    ``instrument()`` take back exactly what was applied."""

    _hooks: tuple[tuple[WhenImported, Patches], ...] = ()

    @abstractmethod
    def _parts(self, **kwargs: Any) -> Sequence[OnImport]:
        """What ``instrument(**kwargs)`` patches, and when (none: nothing)."""

    def _instrument(self, **kwargs: Any) -> None:
        for part in self._parts(**kwargs):
            patches = Patches()
            hook = WhenImported(part.module, partial(part.apply, patches), patches.remove, part.what)
            self._hooks += ((hook, patches),)
            try:
                hook.start()
            except BaseException:
                self._uninstrument()  # the parts before it too: BaseInstrumentor never uninstruments a failed instrument()
                raise

    def _uninstrument(self, **kwargs: Any) -> None:
        hooks, self._hooks = self._hooks, ()
        for hook, patches in reversed(hooks):
            hook.cancel()  # waits for a patch in progress; what it applied is in its record
            patches.remove()
