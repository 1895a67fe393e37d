"""The in-app floor: bare SDK spans through the thinnest possible LangChain handler.

The tight-loop floor (``start_as_current_span`` with 5 attributes) runs with
warm caches and nothing else allocating. Inside a LangGraph app the same SDK
span costs several times more, and reaching it through callbacks adds
LangChain's dispatch. This handler measures that: one bare SDK span (5
attributes, parent found by ``parent_run_id``) for every graph, node, model
and tool run, and nothing else: no classification, no events, no content
refs, no export beyond a simple processor. No callback instrumentation of a
LangGraph app can record a span for less.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import trace


class BareSpanHandler(BaseCallbackHandler):
    run_inline = True  # called in the event loop, like orch-otel's handler
    raise_error = False

    def __init__(self, tracer: Any) -> None:
        super().__init__()
        self._tracer = tracer
        self._contexts: dict[Any, Any] = {}  # open run -> the context its children start in
        self._spans: dict[Any, Any] = {}

    def _start(self, name: str, run_id: Any, parent_run_id: Any) -> None:
        parent = self._contexts.get(parent_run_id)
        span = self._tracer.start_span(name, parent, attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "gen_ai.agent.id": name,
            "orch.agent.role": "worker", "orch.fanout.index": 0,
        })
        self._spans[run_id] = span
        self._contexts[run_id] = trace.set_span_in_context(span, parent)

    def _end(self, run_id: Any) -> None:
        self._contexts.pop(run_id, None)
        span = self._spans.pop(run_id, None)
        if span is not None:
            span.end()

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, parent_run_id: Any = None,
                       tags: list[str] | None = None, **kwargs: Any) -> None:
        is_node = tags is not None and any(tag.startswith("graph:step:") for tag in tags)
        if parent_run_id is None or is_node:
            self._start(str(kwargs.get("name") or "chain"), run_id, parent_run_id)
        elif parent_run_id in self._contexts:  # not a span: its children belong to its parent's span
            self._contexts[run_id] = self._contexts[parent_run_id]

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, parent_run_id: Any = None,
                            **kwargs: Any) -> None:
        self._start("chat", run_id, parent_run_id)

    def on_tool_start(self, serialized: Any, input_str: Any, *, run_id: Any, parent_run_id: Any = None,
                      **kwargs: Any) -> None:
        self._start("execute_tool", run_id, parent_run_id)

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._end(run_id)

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._end(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._end(run_id)

    def on_tool_end(self, output: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._end(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._end(run_id)
