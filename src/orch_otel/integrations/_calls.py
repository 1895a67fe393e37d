"""What the integrations' wrappers share: a wrapped call's argument, and a
context made current for a block."""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context


class attached:
    """Make ``ctx`` current for a block (a tiny, allocation-light context manager)."""

    __slots__ = ("_ctx", "_token")

    def __init__(self, ctx: otel_context.Context) -> None:
        self._ctx = ctx
        self._token: object | None = None

    def __enter__(self) -> None:
        self._token = otel_context.attach(self._ctx)

    def __exit__(self, *exc: Any) -> None:
        otel_context.detach(self._token)  # type: ignore[arg-type]


def arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    """A wrapped call's argument, passed by position or by keyword."""
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)
