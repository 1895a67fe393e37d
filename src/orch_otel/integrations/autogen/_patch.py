"""One place that applies and removes wrapt patches, so every
``wrap_function_wrapper`` has exactly one matching undo."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import wrapt

from ...faults import log_fault

_log = logging.getLogger(__name__)

_MISSING = object()


class Patches:
    """Patches applied by one ``instrument()``; ``remove()`` undoes them in reverse order."""

    def __init__(self) -> None:
        self._applied: list[tuple[Any, str, Any]] = []  # (owner, attribute, what was in owner.__dict__)

    def wrap(self, owner: Any, name: str, wrapper: Callable[..., Any]) -> bool:
        """Wrap ``owner.name`` (a class or module attribute). An attribute a
        class only inherits is wrapped on that class and deleted again on
        ``remove()``, so the base class is never touched."""
        try:
            own = vars(owner).get(name, _MISSING)
            wrapt.wrap_function_wrapper(owner, name, wrapper)
        except Exception:  # a changed framework must not break the host
            log_fault(_log, logging.WARNING, "orch-otel: could not patch %r.%s", owner, name)
            return False
        self._applied.append((owner, name, own))
        return True

    def is_wrapped(self, owner: Any, name: str) -> bool:
        return any(o is owner and n == name for o, n, _ in self._applied)

    def remove(self) -> None:
        while self._applied:
            owner, name, own = self._applied.pop()
            try:
                if own is _MISSING:
                    delattr(owner, name)  # it was inherited: expose the base's again
                else:
                    setattr(owner, name, own)
            except Exception:
                log_fault(_log, logging.DEBUG, "orch-otel: could not unpatch %r.%s", owner, name)
