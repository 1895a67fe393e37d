"""Replay of an OpenAI Agents SDK app: run the starting agent again on a
recorded run's input, and answer its model and tool calls from the
recording (``orch_otel._serving``).

The seams (installed with the instrumentation, idle outside a replay): the
model each turn resolves (``run_loop.get_model``) is wrapped
in a ``Model`` that asks the replay's server first, with the prompt the
instrumentation's model-call span has just recorded; a function tool's body
(``_invoke_function_tool_with_metadata``) is answered from the recording
inside the tool's span, and so are the local tools that are no function
tools (``_replay_local``). An agent used as a tool runs for real, so its own
model calls are answered in turn. A streamed call (``stream_response``) is
answered with the events the SDK's streamed run loop rebuilds a response
from: the output items one by one, then ``response.completed`` carrying the
whole response and its usage. A run recorded streamed is replayed streamed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, RunConfig, Runner
from agents.models.interface import Model
from agents.run_internal import run_loop, tool_execution
from agents.tool import _FunctionToolInvocationResult
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseOutputItem,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseUsage,
)
from pydantic import TypeAdapter

from ..._serving import ACTIVE, ModelCall, Served, ToolCall
from ...vocabulary import Attr
from .._patch import Patches
from . import OpenAIAgentsInstrumentor, _replay_local
from ._state import DEFAULT_WORKFLOW, RUN, TOOL, pending_id

_ITEMS = TypeAdapter(list[ResponseOutputItem])
# The last replayed run of each app that stopped for approvals: the run its recorded resume goes on from.
_INTERRUPTED: dict[int, Any] = {}


def accepts(app: Any) -> bool:
    return isinstance(app, Agent)


def instrumentor() -> OpenAIAgentsInstrumentor:
    return OpenAIAgentsInstrumentor()


def install(patches: Patches) -> None:
    """Nothing to add: the instrumentation installs the seams (:func:`seams`).
    An interrupted run kept for its resume is let go when the replay ends."""
    patches.record(_INTERRUPTED.clear)


def seams(patches: Patches) -> None:
    """The replay's seams, installed with the instrumentation and idle outside
    a replay (one context-variable read per call), so an SDK run inside a
    replayed ``@orch_otel.workflow`` function is served too."""
    patches.wrap(run_loop, "get_model", _serve_models)
    patches.wrap(tool_execution, "_invoke_function_tool_with_metadata", _serve_tools)
    _replay_local.seams(patches)  # shell, computer, apply_patch and custom tools


async def run(app: Any, run_input: Any) -> Any:
    """Run the starting agent once on a recorded input (``_runs._run_input``'s
    form): the run's input, or, for a resume, the human's decisions applied to
    the state of the interrupted run replayed just before it."""
    if not isinstance(run_input, dict) or not ({"input", "resume"} & run_input.keys()):
        raise ValueError("the recorded run input is not an OpenAI Agents SDK run input ({'input': ...} or "
                         "{'resume': [...]})")
    config = RunConfig(workflow_name=str(run_input.get("workflow") or DEFAULT_WORKFLOW))
    given = _resumed_state(app, run_input["resume"]) if "resume" in run_input else run_input["input"]
    result: Any
    if not run_input.get("streamed"):
        result = await Runner.run(app, given, run_config=config)
    else:
        result = Runner.run_streamed(app, given, run_config=config)
        async for _event in result.stream_events():  # raises what the run raised, once it ends
            pass
    if getattr(result, "interruptions", None):
        _INTERRUPTED[id(app)] = result
    return result


def check_inputs(inputs: list[Any]) -> None:
    """A resume goes on from the run before it in the chain: it cannot come first."""
    if inputs and isinstance(inputs[0], dict) and "resume" in inputs[0]:
        raise ValueError("the first run given resumes an interrupted run (its input is a human's approvals): "
                         "replay it after that run, as one chain [interrupted, resumed] (`orch-otel replay` "
                         "chains the runs of a folder by resume_of)")


def _resumed_state(app: Any, decisions: Any) -> Any:
    interrupted = _INTERRUPTED.pop(id(app), None)
    if interrupted is None:
        raise ValueError("a resumed run replays after the run it resumes: replay the chain (the interrupted "
                         "trace, then its resume)")
    state = interrupted.to_state()
    decided = {str(d.get("call_id")): d for d in decisions or () if isinstance(d, dict)}
    for item in interrupted.interruptions:
        decision = decided.get(pending_id(item.raw_item))  # a hosted MCP approval request by its own id
        if decision is None:
            continue  # left undecided, as recorded: the SDK asks again
        if decision.get("approved"):
            state.approve(item)
        else:
            state.reject(item, rejection_message=decision.get("message"))
    return state


def _serve_models(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    model = wrapped(*args, **kwargs)
    return _ServedModel(model) if ACTIVE.get() is not None else model


class _ServedModel(Model):
    """The turn's model, answering from the recording while a replay is active."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        served = _served_reply()
        if served is None:
            return await self._model.get_response(*args, **kwargs)
        from agents.items import ModelResponse

        prompt, completion = served.input_tokens or 0, served.output_tokens or 0
        return ModelResponse(output=_ITEMS.validate_python(served.output or []), response_id=None,
                             usage=Usage(requests=1, input_tokens=prompt, output_tokens=completion,
                                         total_tokens=prompt + completion))

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        served = _served_reply()  # asked now: the call's prompt is recorded, and a fork's later calls go live
        if served is None:
            return self._model.stream_response(*args, **kwargs)
        return _served_stream(served)

    def get_retry_advice(self, request: Any) -> Any:
        return self._model.get_retry_advice(request)


async def _served_stream(served: Served) -> AsyncIterator[Any]:
    """A recorded reply as a stream: each output item added and done, then the
    completed response (the one event the SDK builds its ``ModelResponse`` from)."""
    items = _ITEMS.validate_python(served.output or [])
    prompt, completion = served.input_tokens or 0, served.output_tokens or 0
    response = Response(id="", created_at=time.time(), model=served.model or "", object="response", output=[],
                        parallel_tool_calls=True, tool_choice="auto", tools=[], status="in_progress")
    yield ResponseCreatedEvent(type="response.created", response=response, sequence_number=0)
    sequence = 1
    for index, item in enumerate(items):
        yield ResponseOutputItemAddedEvent(type="response.output_item.added", item=item, output_index=index,
                                           sequence_number=sequence)
        yield ResponseOutputItemDoneEvent(type="response.output_item.done", item=item, output_index=index,
                                          sequence_number=sequence + 1)
        sequence += 2
    empty = Usage()  # the SDK's own zero details: their required fields vary with the openai version
    usage = ResponseUsage(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion,
                          input_tokens_details=empty.input_tokens_details,
                          output_tokens_details=empty.output_tokens_details)
    done = response.model_copy(update={"output": items, "usage": usage, "status": "completed"})
    yield ResponseCompletedEvent(type="response.completed", response=done, sequence_number=sequence)


def _served_reply() -> Served | None:
    server, state = ACTIVE.get(), RUN.get()
    if server is None or state is None or state.llm is None:
        return None
    attributes = getattr(state.llm.span, "attributes", None) or {}
    requested = attributes.get(Attr.REQUEST_MODEL)
    served = server.model(ModelCall(request_ref=attributes.get(Attr.INPUT_REF), model=requested))
    if served is not None and served.model and served.model != requested:  # the provider's name for it
        state.llm.set_response(response_model=served.model)
    return served


async def _serve_tools(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    server, run = ACTIVE.get(), TOOL.get()
    tool = kwargs.get("function_tool")
    if server is None or run is None or getattr(tool, "_is_agent_tool", False):
        return await wrapped(*args, **kwargs)
    attributes = getattr(run.invocation.span, "attributes", None) or {}
    served = server.tool(ToolCall(name=str(attributes.get(Attr.TOOL_NAME)),
                                  call_id=attributes.get(Attr.TOOL_CALL_ID), args_ref=attributes.get(Attr.INPUT_REF)))
    if served is None:
        return await wrapped(*args, **kwargs)
    return _FunctionToolInvocationResult(served.output)
