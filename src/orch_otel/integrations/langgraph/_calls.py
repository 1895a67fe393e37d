"""Tool and model-call callbacks of the LangGraph handler (a mixin of
``OrchestrationHandler``): ``execute_tool`` and ``chat`` spans, handoff tools,
and the promotion of a node that calls a model to an agent."""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langgraph.errors import GraphBubbleUp, GraphDrained, GraphInterrupt, ParentCommand
from langgraph.types import Command
from opentelemetry import context as otel_context
from opentelemetry import trace

from ..._faults import log_fault
from ..._invocation import CANCELLED, ERROR, HANDOFF, INTERRUPTED, MODEL_CALL, OK, Route
from ...recorder import Recorder
from .._providers import langchain_provider
from . import _extract as ex
from ._runs import CALLS_LLM, LLM, NODE, SYSTEM, TOOL, WORKFLOW, Run

_log = logging.getLogger(__name__)

# The run whose private context (LangGraph's per-step context copy) is current.
private_run: ContextVar[Run | None] = ContextVar("orch_otel_langgraph_run", default=None)


def outcome_of(error: BaseException) -> str:
    if isinstance(error, GraphBubbleUp):  # control flow first: no error work for it
        if isinstance(error, ParentCommand):
            return HANDOFF
        if isinstance(error, (GraphInterrupt, GraphDrained)):
            return INTERRUPTED
        return OK
    if isinstance(error, asyncio.CancelledError):
        return CANCELLED
    return ERROR


class CallsMixin:
    """Tool and model callbacks; needs ``enabled``, ``recorder`` and ``_runs``."""

    enabled: bool
    _runs: dict[UUID, Run]

    @property
    def recorder(self) -> Recorder:  # pragma: no cover - overridden
        raise NotImplementedError

    def _handoff_options(self, tool_run: Run, scope: Run) -> list[str] | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _direct_handoff(self, tool_run: Run, output: Any) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def _handoff_route(self, tool_run: Run) -> Route | None:  # pragma: no cover - overridden
        raise NotImplementedError

    # -- tools ------------------------------------------------------------------------------

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, parent_run_id: UUID | None = None,
                      tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
                      inputs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not self.enabled:
            return
        try:
            parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
            name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
            run = Run(run_id, parent, str(name))
            run.kind = TOOL
            self._runs[run_id] = run
            context = self._parent_context(parent)
            if context is None:
                return
            run.handoff_to = (metadata or {}).get("__handoff_destination")
            run.inv = self.recorder.tool(
                run.name, call_id=kwargs.get("tool_call_id"), arguments=inputs if inputs is not None else input_str,
                tool_type="function",
            ).start(attach=False, parent=context)
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: langgraph on_tool_start failed")

    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None or run.inv is None:
            return
        try:
            if isinstance(output, Command):
                self._tool_handoff(run, output)
            else:
                run.inv.set_result(ex.tool_output(output))  # type: ignore[attr-defined]
                self._direct_handoff(run, output)
            run.inv.end()
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: langgraph on_tool_end failed")

    def _tool_handoff(self, run: Run, command: Any) -> None:
        names, _ = ex.goto_targets(command.goto)
        target = run.handoff_to or (names[0] if len(names) == 1 else None)
        if target is not None and command.graph == Command.PARENT:  # the tool hands the parent graph over
            run.inv.transfer(target)  # type: ignore[union-attr]
        scope = run.parent.scope() if run.parent is not None else None
        if target is None or scope is None:
            return
        span = scope.inv.span  # type: ignore[union-attr]
        recorder = self.recorder
        recorder.delegate(target, options=self._handoff_options(run, scope), span=span, route=self._handoff_route(run))
        update = command.update
        messages = update.get("messages") if isinstance(update, dict) else None
        content = ex.message_view(messages[-1]) if messages else None
        recorder.message(content, recipients=[target], sender=_agent_name(scope), message_type="handoff", span=span)
        if command.graph == Command.PARENT and run.parent is not None:
            run.parent.handoff_done = True

    def on_tool_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None,
                      **kwargs: Any) -> None:
        self._end_failed_call(run_id, error)

    def _end_failed_call(self, run_id: UUID, error: BaseException) -> None:
        """A tool or model call raised: end its span with the outcome the error stands for."""
        run = self._runs.pop(run_id, None)
        if run is None or run.inv is None:
            return
        _release_model_call(run)
        try:
            outcome = outcome_of(error)
            if outcome == INTERRUPTED:  # as for chains: the run stops interrupted
                run.root.interrupted = True
            run.inv.end(outcome=outcome, error=error if outcome == ERROR else None)
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: langgraph tool or model call error handling failed")

    # -- model calls --------------------------------------------------------------------------

    def on_chat_model_start(self, serialized: Any, messages: list[list[Any]], *, run_id: UUID,
                            parent_run_id: UUID | None = None, tags: list[str] | None = None,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self.enabled:
            self._llm_start(serialized, messages, True, run_id, parent_run_id, metadata, kwargs)

    def on_llm_start(self, serialized: Any, prompts: list[str], *, run_id: UUID, parent_run_id: UUID | None = None,
                     tags: list[str] | None = None, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self.enabled:
            self._llm_start(serialized, prompts, False, run_id, parent_run_id, metadata, kwargs)

    def _llm_start(self, serialized: Any, prompt: Any, chat: bool, run_id: UUID, parent_run_id: UUID | None,
                   metadata: dict[str, Any] | None, kwargs: dict[str, Any]) -> None:
        try:
            parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
            run = Run(run_id, parent, "llm")
            run.kind = LLM
            self._runs[run_id] = run
            if parent is not None:
                self._promote_llm_node(parent)
            context = self._parent_context(parent)
            if context is None:
                return
            md = metadata or {}
            params = kwargs.get("invocation_params")
            model = ex.model_name(md, serialized, params)
            recorder = self.recorder
            prompt_view = tools = None
            if recorder.content.capture:  # a prompt is the whole conversation so far: no ref per call
                prompt_view = ex.messages_view(prompt) if chat else list(prompt)
                tools = ex.tool_definitions(params)
            run.inv = recorder.llm(model, provider=langchain_provider(md.get("ls_provider")),
                                   input_messages=prompt_view, tools=tools).start(attach=False, parent=context)
            if recorder.content.tokens is not None:  # the model's request (openai SDK) finds its call here
                MODEL_CALL.set(run.inv)
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: langgraph llm start failed")

    def _promote_llm_node(self, parent: Run) -> None:
        """A node that calls a model is an agent (unless it is a prebuilt agent's own step)."""
        run: Run | None = parent
        while run is not None and run.inv is None:
            if run.kind == NODE:
                graph = run.parent
                if graph is None or graph.prebuilt or run.name.startswith("__"):
                    return
                scope = graph.scope()
                run.inv = self.recorder.agent(run.name, role="agent", spawned=True, system=SYSTEM).start(
                    attach=False, parent=context_of(scope, graph.root)
                )
                run.why = CALLS_LLM
                run.agent_name = run.name
                current = private_run.get()
                if current is not None and current.within(run):
                    # The rest of the node's code runs in this private context: let it see the agent.
                    otel_context.attach(run.inv.context)  # type: ignore[arg-type]
                return
            if run.kind == TOOL:
                return
            run = run.parent

    def on_llm_end(self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None or run.inv is None:
            return
        _release_model_call(run)
        try:
            message = ex.first_generation_message(response)
            tokens_in, tokens_out, model = ex.usage(response, message)
            output = ex.message_view(message) if message is not None and not isinstance(message, str) else message
            run.inv.set_response(output, input_tokens=tokens_in, output_tokens=tokens_out,  # type: ignore[attr-defined]
                                 response_model=model)
            run.inv.end()
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: langgraph on_llm_end failed")

    def on_llm_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None,
                     **kwargs: Any) -> None:
        self._end_failed_call(run_id, error)

    # -- context ------------------------------------------------------------------------------

    def _parent_context(self, parent: Run | None) -> otel_context.Context | None:
        """The context to start a tool or model span in; None when nothing is traced."""
        scope = parent.scope() if parent is not None else None
        if scope is not None:
            return scope.inv.context  # type: ignore[union-attr]
        context = otel_context.get_current()
        return context if trace.get_current_span(context).is_recording() else None



def _release_model_call(run: Run) -> None:
    if MODEL_CALL.get() is run.inv:
        MODEL_CALL.set(None)


def _agent_name(run: Run) -> str | None:
    if run.why == WORKFLOW:
        return run.name
    return run.agent_name or run.node_key or run.name


def context_of(scope: Run | None, root: Run) -> otel_context.Context | None:
    if scope is not None:
        return scope.inv.context  # type: ignore[union-attr]
    return root.ambient
