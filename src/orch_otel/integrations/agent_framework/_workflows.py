"""Workflows: runs, routing along edges, fan-in, and the run's stop.

Hooks:

- ``Workflow._run_core`` (the async generator behind every ``Workflow.run``,
  streaming or not, fresh or a ``responses=`` / ``checkpoint_id=``
  continuation): one ``invoke_workflow`` span per run, the trace root (a
  workflow run inside an agent is a spawned ``invoke_agent`` instead). Its
  context is current only while each step of the generator runs, never
  across a ``yield`` (the framework does the same with its own span).
- each edge runner's ``send_message`` (single, fan-out and switch-case,
  fan-in) and ``Edge.should_route``: which targets a message's edges let
  through, known before any of them runs;
- ``EdgeRunner._execute_on_target``: before the first target of a delivery
  runs, the workflow's ``delegate`` decision (targets = the agents the edges
  chose, options = the agent targets of the edge group, one decision for a
  whole fan-out); a fan-in delivery is the workflow's ``aggregate`` of the
  agents whose replies it combines; a fan-out target's position is its agent
  span's fan-out index.

Messages that an orchestration executor addresses to one participant
(Handoff, GroupChat, Magentic) are not the workflow's routing: the choice
was the agent's or the manager's, recorded where it was made. A participant
that only caches a broadcast (``AgentExecutorRequest(should_respond=False)``)
does not run and is not a target.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, SpanContext

from ..._invocation import CANCELLED, ERROR, INTERRUPTED, OK, in_run
from ..._task import root_task_id
from ...recorder import Recorder
from ...vocabulary import Attr, StopReason, Topology
from .._calls import attached
from ._messages import messages_view
from ._state import DELIVERY, FANOUT, GENERATED_WORKFLOW_NAME, SYSTEM, Delivery, Scope, current_scope, telemetry_failed

PENDING_REQUESTS = "IDLE_WITH_PENDING_REQUESTS"
_ORCHESTRATIONS = "agent_framework_orchestrations"

# What a later run may resume, with the task id and run span it continues: a request a run left
# pending (its id is stable across checkpoints), a checkpoint a run wrote. Bounded: the oldest go first.
_RESUMABLE: OrderedDict[str, tuple[str, SpanContext, str | None]] = OrderedDict()  # key -> (task id, run, asker)
_RESUMABLE_MAX = 4096
_RESUMABLE_LOCK = threading.Lock()  # runs on several event loops (threads) share it


def _remember(keys: list[str], task_id: str, span_context: SpanContext, askers: list[str | None] | None = None) -> None:
    """``askers``: per key, the agent whose request it is (a person's answer goes back to it)."""
    with _RESUMABLE_LOCK:
        for n, key in enumerate(keys):
            _RESUMABLE[key] = (task_id, span_context, askers[n] if askers else None)
            _RESUMABLE.move_to_end(key)
        while len(_RESUMABLE) > _RESUMABLE_MAX:
            _RESUMABLE.popitem(last=False)


def _resumed(responses: Any, checkpoint_id: Any) -> tuple[str, SpanContext, list[str]] | None:
    """The run that asked what ``responses`` answer (forgotten once answered), and the agents
    that asked, else the run that wrote the checkpoint ``checkpoint_id``, if this process saw it."""
    found, askers = None, []
    with _RESUMABLE_LOCK:
        for request_id in list(responses or ()):
            entry = _RESUMABLE.pop(f"request:{request_id}", None)
            if entry is not None:
                found = entry
                if entry[2] and entry[2] not in askers:
                    askers.append(entry[2])
        if found is None and checkpoint_id is not None:
            found = _RESUMABLE.get(f"checkpoint:{checkpoint_id}")
    return (found[0], found[1], askers) if found is not None else None


def in_app_run(recorder: Recorder, name: str, asked: tuple[str, SpanContext, list[str]] | None
               ) -> tuple[str, str | None]:
    """A run (or agent run) started inside a span orch-otel started (the app's
    workflow or agent): that span's spawn decision; the task an interrupt here
    is remembered under (that span's, else the trace's default), and the trace
    a resume here continues, when it is another one."""
    span = trace.get_current_span()
    recorder.spawn(name, span=span)
    context = span.get_span_context()
    task_id = (getattr(span, "attributes", None) or {}).get(Attr.TASK_ID) or format(context.trace_id, "032x")
    resume_of = None
    if asked is not None and asked[1].trace_id != context.trace_id:  # the same trace is no other run to chain
        resume_of = format(asked[1].trace_id, "032x")
    return str(task_id), resume_of


def workflow_name(workflow: Any) -> str:
    name = getattr(workflow, "name", None)
    if not name or name == getattr(workflow, "_generated_name", None):
        return GENERATED_WORKFLOW_NAME
    return str(name)


def _agents_of(workflow: Any, agent_executor: type) -> dict[str, str]:
    """Executor id -> agent name, for the executors that run an agent."""
    agents = {}
    for executor_id, executor in (getattr(workflow, "executors", None) or {}).items():
        if isinstance(executor, agent_executor):
            agent = getattr(executor, "agent", None)
            agents[executor_id] = str(getattr(agent, "name", None) or executor_id)
    return agents


def _jsonable(answers: dict[str, Any] | None) -> Any:
    """The answers as content: framework messages as chat messages, other values as they are."""
    if answers is None:
        return None
    return {str(k): messages_view(v) if isinstance(v, list) else v for k, v in answers.items()}


def _topology(workflow: Any) -> str:
    kinds = {type(e).__name__ for e in (getattr(workflow, "executors", None) or {}).values()}
    return Topology.SWARM.value if "HandoffAgentExecutor" in kinds else Topology.CENTRALIZED.value


class _RunEnd:
    """What the run's events said about how it ended."""

    __slots__ = ("state", "requests", "askers")

    def __init__(self) -> None:
        self.state: str | None = None  # the last status event's state name
        self.requests: list[str] = []  # request ids of the run's request_info events
        self.askers: list[str | None] = []  # the executor that made each request

    def see(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "status":
            state = getattr(event, "state", None)
            self.state = getattr(state, "name", None) or str(state)
        elif kind == "request_info":
            self.requests.append(str(event.request_id))
            self.askers.append(getattr(event, "source_executor_id", None))


def _finish(recorder: Recorder, scope: Scope, end: _RunEnd, error: BaseException | None,
            convergence: type[BaseException]) -> None:
    try:
        inv = scope.invocation
        if error is None:
            outcome = INTERRUPTED if end.state == PENDING_REQUESTS else OK
        elif isinstance(error, GeneratorExit):  # the consumer closed the stream before the run ended
            outcome = CANCELLED
        else:
            outcome = recorder.classify(error)
        if outcome == OK and scope.stop is not None:  # an orchestrator ended the run, with its own text
            reason, forced, source = scope.stop
            inv.stop(reason, source=source, forced=forced)
        elif outcome == OK:
            inv.stop(StopReason.END.value)
        elif outcome == INTERRUPTED:
            inv.stop(StopReason.INTERRUPT.value, source="request_info", forced=True)
            if scope.parent is None and scope.task_id is not None:
                askers = [scope.agents.get(a, a) if a else None for a in end.askers]
                _remember([f"request:{r}" for r in end.requests], scope.task_id, inv.span.get_span_context(),
                          askers)
        elif outcome == CANCELLED:
            inv.stop(StopReason.CANCELLED.value, forced=True)
        elif isinstance(error, convergence):  # the builder's max_iterations (supersteps): a limit, not a choice
            inv.stop(StopReason.RECURSION_LIMIT.value, source=type(error).__name__, forced=True)
        else:
            inv.stop(StopReason.ERROR.value, content={"error_type": type(error).__name__}, forced=True)
        if outcome == ERROR:
            inv.fail(error)  # type: ignore[arg-type]
        else:
            inv.end(outcome=outcome)
    except Exception:
        telemetry_failed("workflow end")


def workflow_run(recorder: Recorder, agent_executor: type, convergence: type[BaseException]) -> Callable[..., Any]:
    """``Workflow._run_core(message=None, *, responses=None, checkpoint_id=None, ...)``."""

    def begin(workflow: Any, kwargs: dict[str, Any]) -> Scope:
        parent = current_scope()
        name = workflow_name(workflow)
        task_id = resume_of = None
        asked = _resumed(kwargs.get("responses"), kwargs.get("checkpoint_id")) if parent is None else None
        if parent is None and not in_run():
            message = kwargs.get("message")
            run_input = None
            if recorder.content.capture and message is not None:
                run_input = {"message": messages_view(message) if not isinstance(message, str) else message}
            task_id = root_task_id(resumed=asked[0] if asked else None, implicit=workflow.id)
            links = [Link(asked[1], {"orch.link": "resume_of"})] if asked else None
            inv = recorder.workflow(name, task_id=task_id, conversation_id=str(workflow.id), system=SYSTEM,
                                    topology=_topology(workflow), input=run_input, links=links)
            resume_of = format(asked[1].trace_id, "032x") if asked else None
        else:  # a workflow run inside an agent's run (a workflow as an agent, a sub-workflow) or the app's run
            inv = recorder.agent(name, agent_id=str(workflow.id), role=type(workflow).__name__, spawned=True)
            if parent is None:  # the app's run (or another framework's) spawns it; its task is that run's
                task_id, resume_of = in_app_run(recorder, name, asked)
        inv.start(attach=False)
        if parent is None and kwargs.get("responses"):  # the human's answers resume the run
            answers = dict(kwargs["responses"]) if recorder.content.capture else None
            recorder.human_intervention(_jsonable(answers), recipients=asked[2] if asked and asked[2] else None,
                                        resume_of=resume_of, span=inv.span)
        scope = Scope(name, inv, parent, workflow)
        scope.task_id = task_id
        scope.agents = _agents_of(workflow, agent_executor)
        return scope

    async def traced(agen: Any, workflow: Any, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        try:
            scope: Scope | None = begin(workflow, kwargs)
        except Exception:
            telemetry_failed("workflow run start")
            scope = None
        if scope is None:
            async for item in agen:
                yield item
            return
        end = _RunEnd()
        try:
            while True:
                with attached(scope.ctx):
                    try:
                        item = await agen.__anext__()
                    except StopAsyncIteration:
                        break
                end.see(item)
                try:
                    yield item
                except BaseException:  # closed or thrown into by the consumer: close the framework's run too
                    with attached(scope.ctx):
                        await agen.aclose()
                    raise
        except BaseException as exc:
            _finish(recorder, scope, end, exc, convergence)
            raise
        _finish(recorder, scope, end, None, convergence)

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        call = {**kwargs, "message": args[0] if args else kwargs.get("message")}
        return traced(wrapped(*args, **kwargs), instance, call)

    return wrapper


# -- edges -----------------------------------------------------------------------------------------


def send_message() -> Callable[..., Any]:
    """``*EdgeRunner.send_message(message, state, ctx)``: the delivery being routed."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if current_scope() is None:
            return await wrapped(*args, **kwargs)
        message = args[0] if args else kwargs.get("message")
        token = DELIVERY.set(Delivery(getattr(instance, "_edge_group", None), message))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            DELIVERY.reset(token)

    return wrapper


def should_route() -> Callable[..., Any]:
    """``Edge.should_route(data)``: a target the edge lets through."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        routed = await wrapped(*args, **kwargs)
        delivery = DELIVERY.get()
        if routed and delivery is not None:
            delivery.routed.append(instance.target_id)
        return routed

    return wrapper


def _will_run(message: Any) -> bool:
    payload = getattr(message, "data", None)
    return not (type(payload).__name__ == "AgentExecutorRequest" and not getattr(payload, "should_respond", True))


def _addressed_by_orchestrator(runner: Any, message: Any) -> bool:
    if not getattr(message, "target_id", None):
        return False
    source = (getattr(runner, "_executors", None) or {}).get(getattr(message, "source_id", None))
    return type(source).__module__.startswith(_ORCHESTRATIONS)


def _decide(recorder: Recorder, run: Scope, delivery: Delivery, runner: Any, target_id: str,
            source_ids: list[str], message: Any) -> None:
    agents = run.agents
    if len(source_ids) > 1:  # a fan-in: the target gets the replies of every source at once
        sources = [agents[s] for s in source_ids if s in agents]
        if sources:
            recorder.aggregate(sources=sources, span=run.span)
    if _addressed_by_orchestrator(runner, message) or not _will_run(message):
        return
    routed = delivery.routed or [target_id]
    delivery.targets = [t for t in routed if t in agents]
    if not delivery.targets:
        return
    group = delivery.group
    candidates = getattr(group, "target_executor_ids", None) or routed
    recorder.delegate([agents[t] for t in delivery.targets], options=[agents[t] for t in candidates if t in agents],
                      span=run.span)


def execute_on_target(recorder: Recorder) -> Callable[..., Any]:
    """``EdgeRunner._execute_on_target(target_id, source_ids, message, state, ctx)``."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        token = None
        try:
            scope = current_scope()
            run = scope.run() if scope is not None else None
            delivery = DELIVERY.get()
            if run is not None and delivery is not None:
                target_id, source_ids, message = args[0], list(args[1]), args[2]
                if not delivery.decided:
                    delivery.decided = True
                    _decide(recorder, run, delivery, instance, target_id, source_ids, message)
                if len(delivery.targets) > 1 and target_id in delivery.targets:
                    token = FANOUT.set((delivery.targets.index(target_id), len(delivery.targets)))
        except Exception:
            telemetry_failed("edge delivery")
        if token is None:
            return await wrapped(*args, **kwargs)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            FANOUT.reset(token)

    return wrapper


# -- human input -----------------------------------------------------------------------------------

HANDOFF_USER_REQUEST = "HandoffAgentUserRequest"  # a Handoff agent answered instead of handing off


def request_info(recorder: Recorder) -> Callable[..., Any]:
    """``WorkflowContext.request_info(request_data, response_type, *, request_id=None)``.
    A Handoff agent that answers the user instead of handing off chose to end
    its part: its own stop (``end``), before the run's ``interrupt``."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        result = await wrapped(*args, **kwargs)
        try:
            scope = current_scope()
            run = scope.run() if scope is not None else None
            data = args[0] if args else kwargs.get("request_data")
            if run is not None and type(data).__name__ == HANDOFF_USER_REQUEST:
                turn = run.turns.get(run.agents.get(getattr(instance, "_executor_id", ""), ""))
                if turn is not None:
                    recorder.stop_by(turn, StopReason.END.value, source=HANDOFF_USER_REQUEST)
        except Exception:
            telemetry_failed("request_info")
        return result

    return wrapper


# -- checkpoints -----------------------------------------------------------------------------------


def checkpoint(recorder: Recorder) -> Callable[..., Any]:
    """``Runner.create_checkpoint_if_enabled()``: the checkpoint a run just wrote
    (``_previous_checkpoint_id``), remembered so that a run restored from it
    continues the same task."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        before = getattr(instance, "_previous_checkpoint_id", None)
        result = await wrapped(*args, **kwargs)
        try:
            written = getattr(instance, "_previous_checkpoint_id", None)
            scope = current_scope()
            run = scope.run() if scope is not None else None
            while run is not None and run.parent is not None:  # a nested run's checkpoint is its root run's
                run = run.parent.run()
            if written is not None and written != before and run is not None and run.task_id is not None:
                _remember([f"checkpoint:{written}"], run.task_id, run.span.get_span_context())
        except Exception:
            telemetry_failed("checkpoint")
        return result

    return wrapper
