"""How an instrumentor changes a framework and takes the change back.

Every change goes through one ``Patches`` record, made by ``instrument()``
and emptied by ``uninstrument()``: wrapt wrappers of class and module
attributes (``wrap``), and anything set up through a framework's own hooks
(``record`` its undo). Each change is recorded the moment it is in place, so
an ``instrument()`` that fails part way (the framework changed, or the patch
ran on the framework's first import and hit a fault) is undone exactly as
far as it went, in reverse order.

An undo puts back what the class or module held before, unless something
else wrapped the attribute after us: then its wrapper stays (taking it away
would break that other tool) and ours, inside it, passes every call straight
through, as all of a record's wrappers do once it is removed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import wrapt

from .._faults import log_fault
from ..recorder import Recorder, get_recorder

_log = logging.getLogger(__name__)

_MISSING = object()

Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]  # wrapt's (wrapped, instance, args, kwargs)


class BoundFunctionWrapper(wrapt.BoundFunctionWrapper):
    """orch-otel's wrapper as a method of a class or instance."""

    @property
    def __orch_otel_original__(self) -> Any:
        return self._self_parent.__wrapped__


class FunctionWrapper(wrapt.FunctionWrapper):
    """A wrapt wrapper that orch-otel installed; ``__orch_otel_original__`` is
    what the class or module held before (wrapt forwards every other
    attribute to it). It keeps wrapt's class name: it is one."""

    __bound_function_wrapper__ = BoundFunctionWrapper

    @property
    def __orch_otel_original__(self) -> Any:
        return self.__wrapped__


class Patches:
    """The changes one ``instrument()`` applied; ``remove()`` undoes them in reverse order."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._wrapped: list[tuple[Any, str]] = []
        # wrapt reads a wrapper's ``enabled`` on every call, in C; a non-empty list is true. Emptied by
        # remove(), so a wrapper that could not be taken out (wrapped again by another tool) does nothing.
        self._on: list[bool] = [True]

    def wrap(self, owner: Any, name: str, wrapper: Wrapper) -> bool:
        """Wrap ``owner.name`` (a class or module attribute) with a wrapt
        ``wrapper``; False (logged) if it cannot be. An attribute a class only
        inherits is wrapped on that class and deleted again on ``remove()``,
        so the base class is never touched. Once ``remove()`` ran, nothing
        more is wrapped (a run still in flight may find a new model client)."""
        if not self._on:
            return False
        try:
            own = vars(owner).get(name, _MISSING)
            installed = wrapt.wrap_object(owner, name, FunctionWrapper, (wrapper,), {"enabled": self._on})
        except Exception:  # a changed framework must not break the host
            log_fault(_log, logging.WARNING, "orch-otel: could not patch %r.%s", owner, name)
            return False
        self._wrapped.append((owner, name))
        self._undo.append(lambda: _unwrap(owner, name, own, installed))
        return True

    def record(self, undo: Callable[[], None]) -> None:
        """Note a change made by other means (a framework hook, a
        registration) by the call that takes it back."""
        self._undo.append(undo)

    def is_wrapped(self, owner: Any, name: str) -> bool:
        return any(o is owner and n == name for o, n in self._wrapped)

    def remove(self) -> None:
        self._on.clear()
        self._wrapped.clear()
        while self._undo:
            undo = self._undo.pop()
            try:
                undo()
            except Exception:
                log_fault(_log, logging.DEBUG, "orch-otel: could not undo a patch")


def _unwrap(owner: Any, name: str, own: Any, installed: Any) -> None:
    if vars(owner).get(name, _MISSING) is not installed:
        _log.debug("orch-otel: %r.%s was wrapped again after orch-otel; left in place, inert", owner, name)
    elif own is _MISSING:
        delattr(owner, name)  # it was inherited: expose the base's again
    else:
        setattr(owner, name, own)


def after(hook: Callable[[Any, tuple[Any, ...], dict[str, Any]], None], what: str) -> Wrapper:
    """A wrapper that calls the wrapped function, then ``hook(instance, args,
    kwargs)``; a failing hook is logged (``what`` and the fault's type, no
    content) and never reaches the host."""

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        try:
            hook(instance, args, kwargs)
        except Exception:  # telemetry never raises into the host
            log_fault(_log, logging.DEBUG, "orch-otel: %s failed", what)
        return result

    return wrapper


def recorder_for(tracer_provider: Any) -> Recorder:
    """The recorder an instrumentor records with: orch-otel's own, or, given
    ``instrument(tracer_provider=...)``, one on that provider with orch-otel's
    content policy."""
    recorder = get_recorder()
    if tracer_provider is None:
        return recorder
    return Recorder(tracer_provider=tracer_provider, content=recorder.content)
