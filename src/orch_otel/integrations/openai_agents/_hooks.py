"""The run hooks orch-otel passes to each run: they record the run's agent
segments, model calls and handoffs, then call the app's own run hooks (if
any) with the same arguments, so the app sees every callback it saw before.

The SDK calls run hooks for every model call with exactly the input the model
gets (after handoff input filters), whatever the model class, and whether or
not the SDK's own tracing is on.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..._invocation import ERROR, INTERRUPTED
from ...vocabulary import StopReason
from ._hosted import record_calls as record_hosted_calls
from ._local import started as local_tool_started
from ._state import RunState, model_name, plain, telemetry_failed


def agent_started(state: RunState, agent: Any) -> None:
    """A new agent segment: the run's first agent, or the one a handoff chose
    (a resumed run's agent has its segment already: its approved tools ran first)."""
    if state.resumed:
        state.resumed = False
        if state.segment is not None and state.segment_name == agent.name:
            return
    if state.segment is not None:
        state.segment.end()
    spawned = state.nested and state.segments == 0  # a nested run's first agent is its caller's sub-agent
    if spawned and state.spawner is not None:  # inside the app's run: that run's span decided to spawn it
        state.recorder.spawn(agent.name, span=state.spawner)
    state.segments += 1
    state.segment_name = agent.name
    state.segment = state.recorder.agent(
        agent.name, role="agent", description=getattr(agent, "handoff_description", None), spawned=spawned,
    ).start(attach=False, parent=state.parent)


def llm_started(state: RunState, agent: Any, system_prompt: Any, input_items: Any) -> None:
    recorder = state.recorder
    messages = tools = None
    if recorder.content.capture:  # the input is the whole conversation so far: no ref per call (as AutoGen, LangGraph)
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        if isinstance(input_items, str):
            messages.append({"role": "user", "content": input_items})
        else:
            messages.extend(plain(list(input_items or ())))
        tools = [*state.tools, *state.handoff_tools] or None
    parent = state.segment.context if state.segment is not None else state.parent
    state.llm = recorder.llm(model_name(agent, state.run_config), input_messages=messages,
                             tools=tools).start(attach=False, parent=parent)


def llm_ended(state: RunState, response: Any) -> None:
    llm, state.llm = state.llm, None
    output = _without_logprobs(plain(list(getattr(response, "output", None) or ())))
    state.calls = {item["name"]: (str(item.get("call_id") or ""), item.get("arguments"))
                   for item in output if isinstance(item, dict) and item.get("type") == "function_call"
                   and isinstance(item.get("name"), str)}
    if llm is None:
        record_hosted_calls(state, output, state.segment.context if state.segment is not None else state.parent)
        return
    usage = getattr(response, "usage", None)
    llm.set_response(output, input_tokens=getattr(usage, "input_tokens", None),
                     output_tokens=getattr(usage, "output_tokens", None))
    record_hosted_calls(state, output, llm.context)  # they ran inside this call, at the provider
    llm.end()


def _without_logprobs(items: list[Any]) -> list[Any]:
    """A reply's items as recorded: the logprobs the SDK puts on its text parts
    are token data, kept only in the local token store (token capture), never
    on a span."""
    for item in items:
        parts = item.get("content") if isinstance(item, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                part.pop("logprobs", None)
    return items


def handed_off(state: RunState, to_agent: Any) -> None:
    """The handing-off agent's delegation (its enabled handoffs as options) and
    its handoff call; then its segment ends."""
    segment, state.segment = state.segment, None
    if segment is None:
        return
    recorder = state.recorder
    target = to_agent.name
    recorder.delegate(target, options=[name for _, name in state.offered], span=segment.span)
    tool = next((t for t, name in state.offered if name == target), f"transfer_to_{target}")
    call_id, arguments = state.calls.get(tool, (None, None))
    call = recorder.tool(tool, call_id=call_id, arguments=arguments, tool_type="handoff")
    call.start(attach=False, parent=segment.context)
    call.set_result({"assistant": target})
    call.end()
    segment.end()


def agent_ended(state: RunState) -> None:
    """The run's final output: the agent's own stop (an answer, or a tool its
    tool_use_behavior stops at), unless an error handler wrote it for a limit."""
    segment = state.segment
    if segment is None or state.limit is not None:
        return
    if state.tool_stop is not None:
        reason, tool = state.tool_stop
        segment.stop(reason, source=tool)
    else:
        segment.stop(StopReason.END.value)


def resumed(state: RunState, agent: Any, approvals: Any = None) -> None:
    """A run resumed from a ``RunState`` (after a human's approvals): the
    human's intervention (the call ids approved and rejected; the decisions
    as content), and the segment of the agent that was interrupted, which runs
    the approved tools before its next turn."""
    if state.root is None and agent is not None:  # no root: the human's input reaches the resumed agent
        agent_started(state, agent)
    target = state.root.span if state.root is not None else state.segment.span if state.segment is not None else None
    state.recorder.human_intervention(
        approvals.content() if approvals is not None else None, resume_of=state.resume_of, span=target,
        approved=approvals.approved if approvals is not None else None,
        rejected=approvals.rejected if approvals is not None else None)
    if agent is not None:
        if state.root is not None:
            agent_started(state, agent)
        state.resumed = True


def close_open(state: RunState, error: BaseException | None, interrupted: bool = False) -> None:
    """End what a run left open: its model call (cancelled or failed) and its
    agent (failed with the run, marked by the limit an error handler met, or
    ``interrupted``: a run inside the app's run, whose agent awaits approvals)."""
    llm, state.llm = state.llm, None
    if llm is not None:
        llm.fail(error) if error is not None else llm.end()
    segment, state.segment = state.segment, None
    if segment is None:
        return
    if error is not None:
        segment.fail(error)
    elif state.limit is not None:
        segment.end(outcome=ERROR, error=state.limit_error)
    elif interrupted:
        segment.end(outcome=INTERRUPTED)
    else:
        segment.end()


def _record(what: str, fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        telemetry_failed(what)


def hooks_class(run_hooks: type) -> type:
    """A ``RunHooks`` subclass that records into a run's state and forwards
    every callback to the app's hooks. Callbacks orch-otel does not use
    (tool end, and any a later SDK adds) are forwarded as they are."""

    class OrchOtelRunHooks(run_hooks):
        def __init__(self, state: RunState, user: Any) -> None:
            self._orch_otel_state = state
            self._orch_otel_user = user

        async def on_agent_start(self, context: Any, agent: Any) -> None:
            _record("agent start", agent_started, self._orch_otel_state, agent)
            if self._orch_otel_user is not None:
                await self._orch_otel_user.on_agent_start(context, agent)

        async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
            _record("model call", llm_started, self._orch_otel_state, agent, system_prompt, input_items)
            if self._orch_otel_user is not None:
                await self._orch_otel_user.on_llm_start(context, agent, system_prompt, input_items)

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            _record("model reply", llm_ended, self._orch_otel_state, response)
            if self._orch_otel_user is not None:
                await self._orch_otel_user.on_llm_end(context, agent, response)

        async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
            _record("handoff", handed_off, self._orch_otel_state, to_agent)
            if self._orch_otel_user is not None:
                await self._orch_otel_user.on_handoff(context=context, from_agent=from_agent, to_agent=to_agent)

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            _record("tool start", local_tool_started, tool)
            if self._orch_otel_user is not None:
                await self._orch_otel_user.on_tool_start(context, agent, tool)

        async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
            _record("agent end", agent_ended, self._orch_otel_state)
            if self._orch_otel_user is not None:
                await self._orch_otel_user.on_agent_end(context, agent, output)

    for name, _member in inspect.getmembers(run_hooks, inspect.iscoroutinefunction):
        if name.startswith("on_") and name not in vars(OrchOtelRunHooks):
            setattr(OrchOtelRunHooks, name, _forward(name))
    return OrchOtelRunHooks


def _forward(name: str) -> Any:
    async def forward(self: Any, *args: Any, **kwargs: Any) -> None:
        if self._orch_otel_user is not None:
            await getattr(self._orch_otel_user, name)(*args, **kwargs)

    forward.__name__ = name
    return forward
