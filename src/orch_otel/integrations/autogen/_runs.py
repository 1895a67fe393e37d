"""Runs and turns: ``BaseGroupChat.run_stream`` (``run`` goes through it),
standalone ``BaseChatAgent.run`` / ``run_stream``, and
``ChatAgentContainer.handle_request`` (one agent turn inside a team).

A run's span is current only while each step of the wrapped async generator
runs, never across a ``yield``: the team's embedded runtime starts during the
first step, so every handler, tool and model call it runs inherits the run's
context, and the consumer may iterate from any task.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, SpanContext

from ..._invocation import CANCELLED, ERROR, OK, in_run
from ..._task import root_task_id
from ...recorder import Recorder
from ...vocabulary import RESUME_LINK, Attr, StopReason, Topology
from .._calls import arg, attached
from ._clients import agent_provider
from ._firstsight import Sightings
from ._state import RUNS, SYSTEM, RunState, current_state, telemetry_failed


def _finish(recorder: Recorder, state: RunState, error: BaseException | None, result_reason: str | None) -> None:
    """Record the stop decision of a run and end its span."""
    try:
        _record_end(recorder, state, error, result_reason)
    except Exception:
        telemetry_failed("run end")


def _record_end(recorder: Recorder, state: RunState, error: BaseException | None, result_reason: str | None) -> None:
    inv = state.invocation
    content: dict[str, Any] | None = None
    forced = True  # cancelled, error: not a choice
    if error is None:
        outcome, reason = OK, state.stop or result_reason or StopReason.END.value
        forced = state.stop_forced
    elif isinstance(error, GeneratorExit):  # the consumer stopped iterating
        outcome, reason = (OK, state.stop) if state.stop else (CANCELLED, StopReason.CANCELLED.value)
        forced = state.stop_forced if state.stop else True
    else:
        outcome = recorder.classify(error)
        reason = StopReason.CANCELLED.value if outcome == CANCELLED else StopReason.ERROR.value
        if outcome == ERROR and state.error_type:
            content = {"error_type": state.error_type}
    # The stop belongs to this run only: a nested run does not stop the enclosing run.
    inv.stop(reason, content=content, source=state.stop_source if outcome == OK else None, forced=forced)
    if error is None or outcome != ERROR:
        inv.end(outcome=outcome)
    else:
        inv.fail(error)


Begin = Callable[[], "tuple[RunState, Callable[[], None] | None] | None"]


async def _traced_steps(recorder: Recorder, agen: Any, begin: Begin, result_type: type) -> AsyncIterator[Any]:
    """Iterate ``agen`` with the run's context current during each step.

    ``begin`` runs at the first step (where the framework's own generator
    starts) and returns the run's state and a clean-up, or None to pass the
    stream through untraced. One generator layer only: closing it closes the
    framework's stream right away.
    """
    try:
        begun = begin()
    except Exception:
        telemetry_failed("run start")
        begun = None
    if begun is None:
        try:
            async for item in agen:
                yield item
        finally:
            await agen.aclose()
        return
    state, on_end = begun
    result_reason: str | None = None
    try:
        while True:
            with attached(state.ctx):
                try:
                    item = await agen.__anext__()
                except StopAsyncIteration:
                    break
            if isinstance(item, result_type):
                result_reason = getattr(item, "stop_reason", None)
            try:
                yield item
            except BaseException:  # closed or thrown into by the consumer: close the framework's stream too
                with attached(state.ctx):
                    await agen.aclose()
                raise
    except BaseException as exc:
        _finish(recorder, state, exc, result_reason)
        raise
    else:
        _finish(recorder, state, None, result_reason)
    finally:
        if on_end is not None:
            on_end()


def _topology(team: Any, nested_types: tuple[type, ...]) -> str:
    if any(isinstance(p, nested_types) for p in getattr(team, "_participants", ())):
        return Topology.HIERARCHICAL.value
    if type(team).__name__ == "Swarm":
        return Topology.SWARM.value
    return Topology.CENTRALIZED.value


def _human_answer(task: Any, handoff_type: type, participants: list[str]) -> Any:
    """The ``HandoffMessage`` in a run's task that someone outside the team (a
    human, after a handoff to them) sends back to a participant, if any."""
    messages: Any = task if isinstance(task, (list, tuple)) else (task,)
    for message in messages:
        if isinstance(message, handoff_type) and getattr(message, "source", None) not in participants:
            return message
    return None


HANDED_OUT: OrderedDict[str, tuple[SpanContext, str, str | None]] = OrderedDict()
"""Root runs that ended handing off out of the team, by team id: their span,
the human they handed off to (the team's next run with that human's answer
resumes them) and their task id, if named. Bounded: the oldest are forgotten first."""

_HANDED_OUT_LIMIT = 1024


def _hand_out(team_id: str, span: Any, target: str) -> None:
    task_id = (getattr(span, "attributes", None) or {}).get(Attr.TASK_ID)
    HANDED_OUT[team_id] = (span.get_span_context(), target, str(task_id) if task_id else None)
    HANDED_OUT.move_to_end(team_id)
    while len(HANDED_OUT) > _HANDED_OUT_LIMIT:
        HANDED_OUT.popitem(last=False)


def team_run_stream(recorder: Recorder, sightings: Sightings, result_type: type,
                    nested_types: tuple[type, ...], handoff_type: type) -> Callable[..., Any]:
    """``BaseGroupChat.run_stream``: one span per run (the trace root unless nested)."""

    def begin(team: Any, task: Any) -> tuple[RunState, Callable[[], None]] | None:
        team_id = getattr(team, "_team_id", None)
        if getattr(team, "_is_running", False) or team_id is None:  # AutoGen will refuse this run
            return None
        sightings.discover_team(team)
        parent = current_state()
        name = team.name
        human: Any = None
        previous: tuple[SpanContext, str, str | None] | None = None
        if parent is None:
            human = _human_answer(task, handoff_type, team._participant_names)
            previous = HANDED_OUT.pop(team_id, None) if human is not None else None
            if previous is not None and previous[1] != human.source:
                previous = None  # answered by someone else than the run handed off to
        # In a team, or in a run the app (or another framework) started, the team is spawned by whoever runs it.
        nested = parent is not None or in_run()
        if nested:
            fan = parent.fanout.pop(name, None) if parent is not None else None
            if parent is None or trace.get_current_span() is not parent.span:  # not a team participant's turn
                recorder.spawn(name)
            inv = recorder.agent(
                name, agent_id=team_id, role=type(team).__name__, description=team.description, spawned=True,
                fanout_index=fan[0] if fan else None, fanout_size=fan[1] if fan else None,
            )
        else:
            # no task named here: the converter falls back to the conversation id, the team's
            inv = recorder.workflow(
                name, task_id=root_task_id(resumed=previous[2] if previous else None), conversation_id=team_id,
                system=SYSTEM,
                topology=_topology(team, nested_types), input=_task(recorder, task),
                links=[Link(previous[0], {Attr.LINK: RESUME_LINK})] if previous else None,
            )
        inv.start(attach=False)
        state = RUNS[team_id] = RunState(name, inv, nested=nested, parent=parent)
        if parent is not None:  # a team participant's run is its turn in the enclosing run
            parent.add_turn(name, inv)
        elif human is not None:  # the human answers the handoff that ended an earlier run
            recorder.human_intervention(getattr(human, "content", None), recipients=[human.target], span=inv.span,
                                        resume_of=format(previous[0].trace_id, "032x") if previous else None)

        def forget() -> None:
            if RUNS.get(team_id) is state:
                del RUNS[team_id]
            if parent is None and state.handed_to is not None:  # the run ended handing off to a human
                try:
                    _hand_out(team_id, inv.span, state.handed_to)
                except Exception:
                    telemetry_failed("run hand-out")

        return state, forget

    def traced(agen: Any, team: Any, task: Any) -> AsyncIterator[Any]:
        return _traced_steps(recorder, agen, lambda: begin(team, task), result_type)

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        return traced(wrapped(*args, **kwargs), instance, arg(args, kwargs, 0, "task"))

    return wrapper


def _task(recorder: Recorder, task: Any) -> dict[str, Any] | None:
    """A run's task as a replay feeds it again (content: only while captured)."""
    return {"task": task} if task is not None and recorder.content.capture else None


def _agent_invocation(recorder: Recorder, agent: Any, nested: bool, task: Any = None):
    name = agent.name
    return recorder.agent(
        name, role=type(agent).__name__, description=agent.description, spawned=nested,
        provider=agent_provider(agent), system=None if nested else SYSTEM,
        input=None if nested else _task(recorder, task), task_id=None if nested else root_task_id(),
    )


def agent_run(recorder: Recorder, sightings: Sightings) -> Callable[..., Any]:
    """Standalone ``BaseChatAgent.run`` (not in a team): one agent span; inside
    a run (for example an ``AgentTool``, or the app's own) the agent is a spawned sub-agent."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            sightings.discover_agent(instance)
            parent = current_state()
            nested = parent is not None or in_run()
            inv = _agent_invocation(recorder, instance, nested, arg(args, kwargs, 0, "task")).start(attach=False)
            state = RunState(instance.name, inv, nested=nested, parent=parent)
        except Exception:
            telemetry_failed("agent run start")
            return await wrapped(*args, **kwargs)
        try:
            with attached(state.ctx):
                result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _finish(recorder, state, exc, None)
            raise
        _finish(recorder, state, None, None)
        return result

    return wrapper


def agent_run_stream(recorder: Recorder, sightings: Sightings, result_type: type) -> Callable[..., Any]:
    """Standalone ``BaseChatAgent.run_stream``, like :func:`agent_run`."""

    def begin(agent: Any, task: Any) -> tuple[RunState, None]:
        sightings.discover_agent(agent)
        parent = current_state()
        nested = parent is not None or in_run()
        inv = _agent_invocation(recorder, agent, nested, task).start(attach=False)
        return RunState(agent.name, inv, nested=nested, parent=parent), None

    def traced(agen: Any, agent: Any, task: Any) -> AsyncIterator[Any]:
        return _traced_steps(recorder, agen, lambda: begin(agent, task), result_type)

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        return traced(wrapped(*args, **kwargs), instance, arg(args, kwargs, 0, "task"))

    return wrapper


def handle_request(recorder: Recorder, team_type: type, human_type: type) -> Callable[..., Any]:
    """``ChatAgentContainer.handle_request``: one turn of a participant. A team
    participant gets no turn span of its own: its nested run is the turn. Nor
    does a ``UserProxyAgent``: a human answers, and the answer is recorded as a
    human intervention (``_managers.agent_response``), never as an agent's turn."""

    def _turn(state: RunState, instance: Any) -> Any:
        agent = instance._agent
        name = agent.name
        if isinstance(agent, team_type):
            state.seen.add(name)
            return None
        if isinstance(agent, human_type):
            state.seen.add(name)
            state.add_human(name)
            return None
        fan = state.fanout.pop(name, None)
        spawned = state.nested and name not in state.seen  # a nested team's agents come to life with it
        state.seen.add(name)
        inv = recorder.agent(
            name, agent_id=str(instance.id), role=type(agent).__name__, description=agent.description,
            spawned=spawned, provider=agent_provider(agent), fanout_index=fan[0] if fan else None,
            fanout_size=fan[1] if fan else None,
        )
        inv.start(attach=True, parent=state.ctx)
        state.add_turn(name, inv)
        return inv

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            state = RUNS.get(instance.id.key)
            inv = None if state is None else _turn(state, instance)
        except Exception:
            telemetry_failed("agent turn")
            state = inv = None
        if inv is None:
            if state is None:
                return await wrapped(*args, **kwargs)
            with attached(state.ctx):  # a team participant (its nested run is the turn), or a human
                return await wrapped(*args, **kwargs)
        with inv:  # fails it on an exception (re-raised untouched), else ends it
            return await wrapped(*args, **kwargs)

    return wrapper


__all__ = ["team_run_stream", "agent_run", "agent_run_stream", "handle_request"]
