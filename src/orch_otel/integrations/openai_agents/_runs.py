"""``AgentRunner.run`` (``Runner.run``, ``run_sync`` and agents as tools go
through it) and ``AgentRunner.run_streamed``: a top-level run is one trace,
rooted at its workflow; a run inside a tool (or a guardrail) is its caller's
sub-agent, and so is a run inside a run the app records itself
(``orch_otel.workflow()``, ``@workflow`` / ``@agent``, another framework's
agent). Each run gets orch-otel's run hooks (which call the app's)."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanContext

from ..._invocation import INTERRUPTED as INTERRUPTED_OUTCOME
from ..._invocation import Invocation, in_run
from ..._task import root_task_id
from ...recorder import Recorder
from ...vocabulary import Attr
from ._approvals import Approvals, decisions
from ._hooks import agent_started, close_open, resumed
from ._state import DEFAULT_WORKFLOW, RUN, SYSTEM, TOOL, RunState, arg, pending_id, plain, telemetry_failed

Begin = Callable[..., "tuple[RunState, dict[str, Any]] | None"]  # (args, kwargs, streamed=False)
End = Callable[..., None]  # (state, error, result=None)


def beginner(recorder: Recorder, hooks_cls: type, hook_bases: tuple[type, type], run_state_type: type | None) -> Begin:
    """``begin(args, kwargs)``: the run's state and the kwargs to call the SDK
    with (orch-otel's hooks around the app's), or None to run untraced."""
    run_hooks_base, agent_hooks_base = hook_bases

    def begin(args: tuple[Any, ...], kwargs: dict[str, Any], streamed: bool = False
              ) -> tuple[RunState, dict[str, Any]] | None:
        hooks = kwargs.get("hooks")
        if hooks is not None and (not isinstance(hooks, run_hooks_base) or isinstance(hooks, agent_hooks_base)):
            return None  # the SDK refuses these hooks with its own error: leave it to say so
        run_config = kwargs.get("run_config")
        run_input = arg(args, kwargs, 1, "input")
        approvals = _decisions(run_input) if _is_state(run_input) else None
        caller = RUN.get()
        if caller is not None and not caller.finished:  # a run inside a tool or guardrail of another run
            tool = TOOL.get()
            if tool is not None:
                parent = tool.invocation.context
            else:
                parent = caller.segment.context if caller.segment is not None else caller.parent
            state = RunState(recorder, None, parent or otel_context.get_current(), nested=True, run_config=run_config,
                             first_agent=_first_agent(args, kwargs, run_input))
        elif in_run():  # the app's own run (or another framework's): the run's first agent is a sub-agent it spawned
            state = _in_app_run(recorder, run_config, _interrupted_run(run_input) if _is_state(run_input) else None,
                                _first_agent(args, kwargs, run_input))
        else:
            workflow = getattr(run_config, "workflow_name", None) or DEFAULT_WORKFLOW
            resuming = _is_state(run_input)
            previous = _interrupted_run(run_input) if resuming else None
            task_id = root_task_id(_group_id(run_config, run_input if resuming else None),
                                   previous.task_id if previous is not None else None,
                                   _session_id(kwargs.get("session")))
            root = recorder.workflow(
                workflow, task_id=task_id, system=SYSTEM,
                input=_run_input(run_input, workflow, streamed, approvals),
                links=[Link(previous.context, {"orch.link": "resume_of"})] if previous is not None else None,
            ).start(attach=False)
            state = RunState(recorder, root, root.context or otel_context.get_current(), nested=False,
                             run_config=run_config)
            if previous is not None:
                state.resume_of = format(previous.context.trace_id, "032x")
        if _is_state(run_input):
            resumed(state, getattr(run_input, "_current_agent", None), approvals)
        return state, {**kwargs, "hooks": hooks_cls(state, hooks)}

    def _is_state(value: Any) -> bool:
        return run_state_type is not None and isinstance(value, run_state_type)

    def _first_agent(args: tuple[Any, ...], kwargs: dict[str, Any], run_input: Any) -> Any:
        """The agent a run without a root of its own starts with: the starting
        agent, or the one a resumed state goes on with."""
        if _is_state(run_input):
            return getattr(run_input, "_current_agent", None)
        return arg(args, kwargs, 0, "starting_agent")

    return begin


def _in_app_run(recorder: Recorder, run_config: Any, previous: Interrupted | None, first_agent: Any) -> RunState:
    """A run inside a span orch-otel started (the app's workflow or agent):
    no root of its own; its agents start under that span, which spawns the
    first one (``first_agent``: the starting agent, or the one a resumed state
    goes on with; handoffs then start the others there, as at the top level).
    The trace's task, input and stop are the enclosing run's."""
    span = trace.get_current_span()
    attributes = getattr(span, "attributes", None) or {}
    state = RunState(recorder, None, otel_context.get_current(), nested=True, run_config=run_config,
                     spawner=span, task_id=_text(attributes.get(Attr.TASK_ID)), first_agent=first_agent)
    # an interrupt of this same trace is not another run to chain a replay to
    if previous is not None and previous.context.trace_id != span.get_span_context().trace_id:
        state.resume_of = format(previous.context.trace_id, "032x")
    return state


def _text(value: Any) -> str | None:
    return str(value) if value else None


class Interrupted(NamedTuple):
    """An interrupted run a resume links to, and its task (the resume joins it)."""

    context: SpanContext
    task_id: str


# The interrupted runs awaiting a resume, by the call ids of the tool calls awaiting approval
# (what the resumed RunState carries too); bounded: a run never resumed is forgotten eventually.
INTERRUPTED: OrderedDict[tuple[str, ...], Interrupted] = OrderedDict()
_INTERRUPTED_MAX = 1024
_interrupted_lock = threading.Lock()


def _call_id(item: Any) -> str:
    return pending_id(getattr(item, "raw_item", None))


def _pending_calls(items: Any) -> tuple[str, ...]:
    return tuple(sorted(_call_id(i) for i in items or ()))


def _interrupted_run(run_state: Any) -> Interrupted | None:
    """The interrupted run that ``run_state`` resumes, if this process recorded it."""
    try:
        calls = _pending_calls(run_state.get_interruptions())
    except Exception:
        telemetry_failed("resume lookup")
        return None
    with _interrupted_lock:
        return INTERRUPTED.pop(calls, None) if any(calls) else None


def _remember_interrupt(state: RunState, result: Any) -> None:
    """The interrupted run, by the calls awaiting approval: for a resume in
    this process to find, and on its root (ids, not content) for a reader to
    join a resume recorded in another process (its approved and rejected ids).
    A run inside the app's run is remembered by its interrupted agent, in
    the app's task."""
    calls = _pending_calls(getattr(result, "interruptions", None))
    target = state.root if state.root is not None else state.segment if state.spawner is not None else None
    if target is None or not any(calls):
        return
    if state.root is not None:
        state.root.set(Attr.AWAITING, [c for c in calls if c])
    context = target.span.get_span_context()
    if context.is_valid:
        attributes = getattr(target.span, "attributes", None) or {}
        task_id = str(attributes.get(Attr.TASK_ID) or state.task_id
                      or format(context.trace_id, "032x"))  # the converter's default
        with _interrupted_lock:
            INTERRUPTED[calls] = Interrupted(context, task_id)
            while len(INTERRUPTED) > _INTERRUPTED_MAX:
                INTERRUPTED.popitem(last=False)


def _decisions(run_state: Any) -> Approvals | None:
    try:
        return decisions(run_state)
    except Exception:
        telemetry_failed("approvals")
        return None


def _group_id(run_config: Any, run_state: Any = None) -> str | None:
    """The SDK's link between the traces of one conversation, which the app
    passes per run (a resumed state carries its run's, as the SDK's tracing kept it)."""
    group = getattr(run_config, "group_id", None) or getattr(getattr(run_state, "_trace_state", None), "group_id", None)
    return str(group) if group else None


def _session_id(session: Any) -> str | None:
    session_id = getattr(session, "session_id", None)
    return str(session_id) if session_id else None


def _run_input(value: Any, workflow: str, streamed: bool, approvals: Approvals | None = None) -> Any:
    """The run's input as a replay feeds it again, and how: streamed or not. A
    run resumed from a ``RunState``: the human's decisions, which a replay
    applies to the state of the interrupted run it has just replayed."""
    how = {"workflow": workflow, **({"streamed": True} if streamed else {})}
    if approvals is not None:
        return {"resume": approvals.content() or [], **how}
    if value is None or not isinstance(value, (str, list)):
        return None
    return {"input": plain(value), **how}


def session_input(streamed: bool) -> Any:
    """``prepare_input_with_session``: a run with a session feeds its agent the
    session's history, then the new input. The root's input becomes that whole
    list, so the run's record holds what the agent got and a replay needs no
    session (the run's task id still names the session)."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        prepared = await wrapped(*args, **kwargs)
        try:
            state = RUN.get()
            with_history = kwargs.get("include_history_in_prepared_input", True)
            if (state is not None and state.root is not None and not state.finished and with_history
                    and arg(args, kwargs, 1, "session") is not None and state.segments == 0):
                workflow = getattr(state.run_config, "workflow_name", None) or DEFAULT_WORKFLOW
                state.root.set_input(_run_input(prepared[0], workflow, streamed))
        except Exception:
            telemetry_failed("session input")
        return prepared

    return wrapper


def finish(state: RunState, error: BaseException | None, limit_errors: tuple[type, ...],
           tripwires: dict[type, str], result: Any = None) -> None:
    """Record how the run stopped and end its spans (once). A run that
    returns with interruptions (tools awaiting a human's approval) is
    interrupted, not ended."""
    if state.finished:
        return
    state.finished = True
    try:
        _stop(state, error, limit_errors, tripwires)
        interrupted = error is None and bool(getattr(result, "interruptions", None))
        if interrupted:
            _remember_interrupt(state, result)
        close_open(state, error, interrupted=interrupted and state.spawner is not None)
        root = state.root
        if root is not None:
            if error is not None:
                root.fail(error)
            elif interrupted:
                root.end(outcome=INTERRUPTED_OUTCOME)
            else:
                root.end()
    except Exception:
        telemetry_failed("run end")


def _stop(state: RunState, error: BaseException | None, limit_errors: tuple[type, ...],
          tripwires: dict[type, str]) -> None:
    """A limit or a guardrail stops the run: the root's forced stop (a nested
    run's agent's, having no root), naming what stopped it. In a run with no
    root (inside a tool or guardrail, or the app's run) a blocking input
    guardrail can trip before any agent's turn: the starting agent's stop
    (the SDK had started it: its own agent span is open)."""
    target: Invocation | None = state.root or state.segment
    if target is None and error is not None and state.first_agent is not None:
        if isinstance(error, limit_errors) or any(isinstance(error, kind) for kind in tripwires):
            agent_started(state, state.first_agent)
            target = state.segment
    if target is None:
        return
    if error is None:
        if state.limit is not None:
            target.stop(state.limit, source=state.limit, forced=True)
        return
    if isinstance(error, limit_errors):
        target.stop("max_turns", source="max_turns", forced=True)
        return
    for kind, reason in tripwires.items():
        if isinstance(error, kind):
            target.stop(reason, source=_guardrail_name(error), forced=True)
            return


def _guardrail_name(error: BaseException) -> str | None:
    """The guardrail a tripwire names: an agent's (``guardrail_result``) or a tool's (``guardrail``)."""
    result = getattr(error, "guardrail_result", None)
    guardrail = getattr(result, "guardrail", None) or getattr(error, "guardrail", None)
    try:
        return str(guardrail.get_name())  # type: ignore[union-attr]
    except Exception:
        return None


def run_wrapper(begin: Begin, end: End) -> Any:
    """``AgentRunner.run``: the run's context is current while it runs."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            begun = begin(args, kwargs)
        except Exception:
            telemetry_failed("run start")
            begun = None
        if begun is None:
            return await wrapped(*args, **kwargs)
        state, traced_kwargs = begun
        token = RUN.set(state)
        attached = otel_context.attach(state.root.context) if state.root is not None and state.root.context else None
        try:
            result = await wrapped(*args, **traced_kwargs)
        except BaseException as exc:
            end(state, exc)
            raise
        finally:
            _restore(token, attached)
        end(state, None, result)
        return result

    return wrapper


def run_streamed_wrapper(begin: Begin, end: End) -> Any:
    """``AgentRunner.run_streamed``: returns at once; the run goes on in the
    result's ``run_loop_task``, which inherits the run's context and ends the
    run's spans when it ends (also when the consumer stops early)."""

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            begun = begin(args, kwargs, streamed=True)
        except Exception:
            telemetry_failed("streamed run start")
            begun = None
        if begun is None:
            return wrapped(*args, **kwargs)
        state, traced_kwargs = begun
        token = RUN.set(state)
        attached = otel_context.attach(state.root.context) if state.root is not None and state.root.context else None
        try:
            result = wrapped(*args, **traced_kwargs)
        except BaseException as exc:
            end(state, exc)
            raise
        finally:
            _restore(token, attached)
        try:
            task = getattr(result, "run_loop_task", None)
            if task is None:
                end(state, None)
            else:
                task.add_done_callback(lambda done: end(state, _stream_error(result, done), result))
        except Exception:
            telemetry_failed("streamed run")
        return result

    return wrapper


def _stream_error(result: Any, task: Any) -> BaseException | None:
    if task.cancelled():
        return asyncio.CancelledError()
    stored = getattr(result, "_stored_exception", None)
    return stored if isinstance(stored, BaseException) else task.exception()


def _restore(token: Any, attached: Any) -> None:
    try:
        if attached is not None:
            otel_context.detach(attached)
        RUN.reset(token)
    except Exception:  # restored from another context: nothing to put back
        telemetry_failed("context restore")
