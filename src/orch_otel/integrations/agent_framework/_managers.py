"""The orchestration builders' managers (``agent-framework-orchestrations``):
GroupChat and Magentic speaker choices, and how their runs end.

Hooks on ``BaseGroupChatOrchestrator`` and its subclasses:

- ``_send_request_to_participant(target, ctx, ...)``: a speaker choice, with
  every registered participant as an option. A manager agent's choice
  (GroupChat's ``orchestrator_agent``, Magentic's ``StandardMagenticManager``)
  is that agent's ``delegate``, on its latest run (the run that chose; its
  span has ended, so the decision goes on a zero-length child,
  ``Recorder.delegate_by``); a ``selection_func`` is code: the workflow's.
- ``_check_terminate_and_yield``: the termination condition held. The run
  ends voluntarily with the framework's completion text; the agent whose
  reply the condition judged stops first (its own stop).
- ``_check_round_limit_and_yield`` (``max_rounds``) and Magentic's
  ``_check_within_limits_or_complete`` (round and reset limits): forced stops
  with the framework's texts.
- ``AgentBasedGroupChatOrchestrator._check_agent_terminate_and_yield``: the
  manager agent decided to end (its stop, with its reason); the run ends with
  its final message.
- ``MagenticOrchestrator._prepare_final_answer`` after a ledger that says the
  request is satisfied: the manager's stop (the ledger's reason), then the
  run's.
- ``HandoffAgentExecutor._should_terminate``: Handoff's termination condition
  held over the conversation. The framework has no completion text for it:
  the reason is ``termination condition met``; the author of the last message
  it judged (an agent's reply) stops first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...recorder import Recorder
from ._state import Scope, current_scope, telemetry_failed

TERMINATION_CONDITION = "termination_condition"
CONDITION_MET = "termination condition met"  # Handoff's condition: the framework says nothing when it holds
MAX_ROUNDS = "max_rounds"


def _run() -> Scope | None:
    scope = current_scope()
    return scope.run() if scope is not None else None


def _manager_agent(orchestrator: Any) -> Any:
    """The agent that chooses for ``orchestrator``, if a model chooses."""
    agent = getattr(orchestrator, "_agent", None)  # GroupChat's orchestrator_agent
    if agent is None:
        agent = getattr(getattr(orchestrator, "_manager", None), "_agent", None)  # Magentic's standard manager
    return agent


def _manager_turn(run: Scope, orchestrator: Any) -> Any:
    agent = _manager_agent(orchestrator)
    name = getattr(agent, "name", None)
    return run.turns.get(str(name)) if name else None


def _participants(run: Scope, orchestrator: Any) -> list[str]:
    registry = getattr(orchestrator, "_participant_registry", None)
    return [run.agents.get(p, p) for p in getattr(registry, "participants", None) or ()]


def speaker_choice(recorder: Recorder) -> Callable[..., Any]:
    """``_send_request_to_participant(target, ctx, *, additional_instruction=None, metadata=None)``."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            run = _run()
            if run is not None:
                target = args[0] if args else kwargs.get("target")
                chosen, options = run.agents.get(target, target), _participants(run, instance)
                if _manager_agent(instance) is None:  # a selection function: code, the workflow's choice
                    recorder.delegate(chosen, options=options, span=run.span)
                else:
                    turn = _manager_turn(run, instance)
                    if turn is not None:
                        recorder.delegate_by(turn, chosen, options=options)
        except Exception:
            telemetry_failed("speaker choice")
        return await wrapped(*args, **kwargs)

    return wrapper


def _ending(recorder: Recorder, when: Callable[[Any], bool],
            on_end: Callable[[Scope, Any, tuple[Any, ...], dict[str, Any]], None]) -> Callable[..., Any]:
    """A wrapper of an async check that ends the run when ``when(result)``."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        result = await wrapped(*args, **kwargs)
        try:
            run = _run()
            if run is not None and run.stop is None and when(result):  # the first end is the run's
                on_end(run, instance, args, kwargs)
        except Exception:
            telemetry_failed("orchestrator stop")
        return result

    return wrapper


def termination_condition(recorder: Recorder) -> Callable[..., Any]:
    """``_check_terminate_and_yield(ctx) -> bool``: True when the condition held."""

    def on_end(run: Scope, orchestrator: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        text = orchestrator.TERMINATION_CONDITION_MET_MESSAGE
        ctx = args[0] if args else kwargs.get("ctx")
        speaker = run.agents.get(ctx.get_source_executor_id()) if ctx is not None else None
        turn = run.turns.get(speaker) if speaker else None
        if turn is not None:  # the reply the condition judged: that agent's choice ended the chat
            recorder.stop_by(turn, text, source=TERMINATION_CONDITION)
        run.stop = (text, False, TERMINATION_CONDITION)

    return _ending(recorder, bool, on_end)


def round_limit(recorder: Recorder) -> Callable[..., Any]:
    """``_check_round_limit_and_yield(ctx) -> bool``: True at ``max_rounds``."""

    def on_end(run: Scope, orchestrator: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        run.stop = (orchestrator.MAX_ROUNDS_MET_MESSAGE, True, MAX_ROUNDS)

    return _ending(recorder, bool, on_end)


def magentic_limits(recorder: Recorder) -> Callable[..., Any]:
    """``MagenticOrchestrator._check_within_limits_or_complete(ctx) -> bool``: False at a limit."""

    def on_end(run: Scope, orchestrator: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        rounds = getattr(orchestrator, "_max_rounds", None)
        limit = "round" if rounds is not None and getattr(orchestrator, "_round_index", 0) >= rounds else "reset"
        run.stop = (f"Workflow terminated due to reaching maximum {limit} count.", True, f"max_{limit}s")

    return _ending(recorder, lambda within: not within, on_end)


def manager_terminates(recorder: Recorder) -> Callable[..., Any]:
    """``AgentBasedGroupChatOrchestrator._check_agent_terminate_and_yield(output, ctx) -> bool``."""

    def on_end(run: Scope, orchestrator: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        output = args[0] if args else kwargs.get("agent_orchestration_output")
        turn = _manager_turn(run, orchestrator)
        manager = str(getattr(_manager_agent(orchestrator), "name", "") or "")
        if turn is not None:
            recorder.stop_by(turn, str(getattr(output, "reason", "") or "end"), source=manager or None)
        final = getattr(output, "final_message", None) or "The conversation has been terminated by the agent."
        run.stop = (str(final), False, manager or None)

    return _ending(recorder, bool, on_end)


def magentic_final_answer(recorder: Recorder) -> Callable[..., Any]:
    """``MagenticOrchestrator._prepare_final_answer(ctx)``: the ledger said the request is satisfied."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            run = _run()
            ledger = getattr(instance, "_progress_ledger", None)
            satisfied = getattr(ledger, "is_request_satisfied", None)
            if run is not None and satisfied is not None and satisfied.answer:
                reason = str(satisfied.reason or "end")
                manager = str(getattr(_manager_agent(instance), "name", "") or "") or None
                turn = _manager_turn(run, instance)  # the ledger's run: the final answer's comes next
                if turn is not None:
                    recorder.stop_by(turn, reason, source=manager)
                run.stop = (reason, False, manager)
        except Exception:
            telemetry_failed("magentic final answer")
        return await wrapped(*args, **kwargs)

    return wrapper


def handoff_termination(recorder: Recorder) -> Callable[..., Any]:
    """``HandoffAgentExecutor._should_terminate() -> bool``."""

    def on_end(run: Scope, executor: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        conversation = getattr(executor, "_full_conversation", None) or []
        author = getattr(conversation[-1], "author_name", None) if conversation else None
        turn = run.turns.get(str(author)) if author in run.agents.values() else None
        if turn is not None:
            recorder.stop_by(turn, CONDITION_MET, source=TERMINATION_CONDITION)
        run.stop = (CONDITION_MET, False, TERMINATION_CONDITION)

    return _ending(recorder, bool, on_end)
