"""Classes patched on first sight: model clients and workbenches are
interfaces an app (or another package) implements, so their concrete classes
are patched where they define the hooked method, once per class: those loaded
when AutoGen is patched, and any other the first time a run meets one of its
objects."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._patch import Patches, Wrapper


class ClassPatcher:
    """Wraps ``wrappers``' methods (name -> wrapper) on each subclass of ``base``
    that defines them, except on ``base`` itself, abstract methods, and the
    classes in ``skip``."""

    def __init__(self, patches: Patches, base: type, wrappers: dict[str, Wrapper], skip: tuple[type, ...] = (),
                 on_patch: Callable[[type], None] | None = None) -> None:
        self._patches = patches
        self._base = base
        self._wrappers = wrappers
        self._skip = skip
        self._on_patch = on_patch  # more to patch for a newly wrapped class (e.g. its module's built-in spans)
        self._seen: set[type] = set()

    def patch_loaded(self) -> None:
        """Every subclass imported so far."""
        pending: list[type] = list(self._base.__subclasses__())
        while pending:
            cls = pending.pop()
            pending.extend(cls.__subclasses__())
            self.patch_class(cls)

    def patch_class(self, cls: type) -> None:
        if cls in self._seen:
            return
        self._seen.add(cls)
        for method, wrapper in self._wrappers.items():
            owner = next((c for c in cls.__mro__ if method in vars(c)), None)
            if owner is None or owner is self._base or owner in self._skip \
                    or getattr(vars(owner)[method], "__isabstractmethod__", False):
                continue
            if not self._patches.is_wrapped(owner, method) and self._patches.wrap(owner, method, wrapper) \
                    and self._on_patch is not None:
                self._on_patch(owner)

    def discover(self, obj: Any) -> None:
        if obj is not None and type(obj) not in self._seen and isinstance(obj, self._base):
            self.patch_class(type(obj))


class Sightings:
    """Where a run meets the objects to patch: each patcher's ``discover_agent``
    on the team (a selector's own model client) and on every participant."""

    def __init__(self, patchers: Iterable[Any]) -> None:
        self._patchers = tuple(patchers)

    def discover_agent(self, agent: Any) -> None:
        for patcher in self._patchers:
            patcher.discover_agent(agent)

    def discover_team(self, team: Any) -> None:
        self.discover_agent(team)
        for participant in getattr(team, "_participants", ()):
            self.discover_agent(participant)
