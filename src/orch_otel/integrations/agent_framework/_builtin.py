"""Agent Framework's own spans while orch-otel instruments it.

The framework traces to the global tracer provider (orch-otel's, once
``instrument()`` ran) through ``agent_framework.observability.get_tracer``,
which every span helper of the framework looks up as a module global at call
time. Left alone, ``instrument()`` would write trace files made only of its
spans (no agent, model, tool or decision of orch-otel's) and one stray
one-span trace per ``workflow.build()``.

So, while instrumented, that function hands the framework (the
``agent_framework`` tracer name only; a tracer the app asks for under its own
name is untouched):

- by default a no-op tracer. Its spans do not record and carry the parent's
  context, so when the framework re-activates its span around each stream
  pull, orch-otel's span stays the effective parent. This is not the
  framework's ``disable_instrumentation()`` (sticky for the process, and it
  also stops its metrics): ``uninstrument()`` gives the framework its spans
  back.
- with ``runtime_spans=True`` a tracer that keeps the framework's spans made
  inside an orch-otel run or agent invocation (they nest under orch-otel's:
  the hooks sit above the framework's telemetry layers) and drops those made
  outside one (``workflow.build``, a client used directly), which would each
  be a trace of their own.

Both apply only while the global provider (where the framework traces) is
the one orch-otel records to: given ``instrument(tracer_provider=...)`` of
another provider, the framework's spans never reach orch-otel's exporters and
are left exactly as the framework makes them, for the app's own backends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context

from ._state import current_scope

FRAMEWORK_TRACER = "agent_framework"  # the framework's default tracer name (get_tracer's first argument)
_NOOP = trace.NoOpTracer()


class _InRunTracer(trace.Tracer):
    """The framework's tracer, recording only inside an orch-otel scope."""

    def __init__(self, real: trace.Tracer) -> None:
        self._real = real

    def _pick(self, context: Context | None) -> trace.Tracer:
        return self._real if current_scope(context) is not None else _NOOP

    def start_span(self, name: str, context: Context | None = None, *args: Any, **kwargs: Any) -> trace.Span:
        return self._pick(context).start_span(name, context, *args, **kwargs)

    @contextlib.contextmanager  # the API's own decorator is private
    def start_as_current_span(self, name: str, context: Context | None = None, *args: Any,  # type: ignore[override]
                              **kwargs: Any) -> Iterator[trace.Span]:
        with self._pick(context).start_as_current_span(name, context, *args, **kwargs) as span:
            yield span


def tracer_wrapper(keep: bool, own_provider: Any = None) -> Any:
    """A wrapt wrapper of ``agent_framework.observability.get_tracer``;
    ``own_provider``: the provider orch-otel records to (None: the global one)."""

    def get_tracer(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        name = args[0] if args else kwargs.get("instrumenting_module_name", FRAMEWORK_TRACER)
        if name != FRAMEWORK_TRACER or (own_provider is not None and trace.get_tracer_provider() is not own_provider):
            return wrapped(*args, **kwargs)
        return _InRunTracer(wrapped(*args, **kwargs)) if keep else _NOOP

    return get_tracer
