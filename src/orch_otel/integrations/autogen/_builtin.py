"""AutoGen's built-in spans while orch-otel instruments AutoGen.

- GenAI spans (``create_agent``, ``invoke_agent``, ``execute_tool`` from
  autogen-core's ``_telemetry``) are **suppressed**: orch-otel records the
  same moments with the same span names and ``gen_ai.*`` attributes plus the
  orchestration facts, and two ``invoke_agent`` spans per turn would be read
  as two turns. ``create_agent`` spans (made when an agent object is built,
  usually outside any run) would each be a stray one-span trace.
- Runtime messaging spans (``autogen send|publish|process|ack ...``) are
  **suppressed** by default: about 35 spans per short run, each carrying the
  full serialized message. With ``runtime_spans=True`` they are **adopted**:
  kept, and parented to the run they belong to (found by team id), so they
  join the run's trace even on a user-supplied runtime. Both apply only to a
  runtime tracing to the global provider or orch-otel's: a runtime given its
  own ``tracer_provider`` keeps its spans exactly as AutoGen makes them.

MCP's workbench opens AutoGen's ``execute_tool`` span in its ``call_tool``;
once that class is patched (``_workbenches``), orch-otel's span of the call
replaces it (``suppress`` in the workbench's module).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from opentelemetry import trace

from .._calls import attached
from ._state import RUNS


class _NoSpan:
    """Stands in for a built-in span context manager: yields a non-recording span."""

    __slots__ = ()

    def __enter__(self) -> trace.Span:
        return trace.INVALID_SPAN

    def __exit__(self, *exc: Any) -> Literal[False]:
        return False


_NO_SPAN = _NoSpan()

GENAI_SPAN_SITES = (  # (module, function imported there by name)
    ("autogen_core.tools._base", "trace_tool_span"),
    ("autogen_agentchat.agents._base_chat_agent", "trace_create_agent_span"),
    ("autogen_agentchat.agents._base_chat_agent", "trace_invoke_agent_span"),
    ("autogen_agentchat.teams._group_chat._chat_agent_container", "trace_invoke_agent_span"),
)


def suppress(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return _NO_SPAN


class _InRun:
    __slots__ = ("_attached", "_inner")

    def __init__(self, ctx: Any, inner: Any) -> None:
        self._attached = attached(ctx)
        self._inner = inner

    def __enter__(self) -> Any:
        self._attached.__enter__()
        try:
            return self._inner.__enter__()
        except BaseException:
            self._attached.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self._inner.__exit__(*exc)
        finally:
            self._attached.__exit__(None, None, None)


def adopt_runtime_span(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """``TraceHelper.trace_block(operation, destination, parent, ...)`` under the run
    that owns ``destination`` (an AgentId keyed by team id, or a topic sourced by it)."""
    destination = args[1] if len(args) > 1 else kwargs.get("destination")
    key = getattr(destination, "key", None) or getattr(destination, "source", None)
    state = RUNS.get(key) if key is not None else None
    if state is None:
        return wrapped(*args, **kwargs)
    return _InRun(state.ctx, wrapped(*args, **kwargs))


def traces_to_us(helper: Any, own_provider: Any) -> bool:
    """Whether a ``TraceHelper`` traces to the global provider (AutoGen's default
    when a runtime is given none; the proxy if it was built before one was set)
    or to orch-otel's own, rather than to a provider the app gave its runtime."""
    provider = getattr(helper, "tracer_provider", None)
    if provider is None or isinstance(provider, trace.ProxyTracerProvider):
        return True
    return provider is trace.get_tracer_provider() or (own_provider is not None and provider is own_provider)


def runtime_span_wrapper(adopt: bool, own_provider: Any = None) -> Callable[..., Any]:
    """``TraceHelper.trace_block``: suppressed (or adopted) on the global or
    orch-otel's provider, untouched on the app's own."""
    handle = adopt_runtime_span if adopt else suppress

    def runtime_span(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not traces_to_us(instance, own_provider):
            return wrapped(*args, **kwargs)
        return handle(wrapped, instance, args, kwargs)

    return runtime_span
