"""The team's side: group chat managers choose speakers (delegation), relay
responses (messages), join parallel speakers (aggregation) and terminate
(stop). Everything is recorded on the run span, whose actor is the team.

Hooks: ``BaseGroupChatManager._log_speaker_selection`` (every manager but
MagenticOne), ``SelectorGroupChatManager._select_speaker`` (the filtered
candidate list), ``handle_start`` / ``handle_agent_response`` (context and
messages), ``_signal_termination(_with_error)`` (stop reason), and
``MagenticOneOrchestrator.publish_message`` (its speaker requests and
instructions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...recorder import Recorder
from ._state import RunState, arg, attached, state_of, telemetry_failed


def _message_content(message: Any) -> Any:
    """What a message says, without serializing the whole message object."""
    return getattr(message, "content", None)


def _others(state: RunState, manager: Any, sender: str) -> list[str]:
    """Who a broadcast response reaches: the other participants, or only the
    team's manager when the sender is the sole participant."""
    return [p for p in manager._participant_names if p != sender] or [state.actor]


def selection(recorder: Recorder, graph_manager_type: type | None) -> Callable[..., Any]:
    """``_log_speaker_selection(speaker_names)``: a delegate decision naming the
    chosen speaker(s) and the candidates; a parallel choice marks each turn with
    its fan-out index; a GraphFlow node with several parents is a fan-in."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is not None:
            try:
                record(state, instance, list(arg(args, kwargs, 0, "speaker_names") or ()))
            except Exception:
                telemetry_failed("speaker selection")
        return await wrapped(*args, **kwargs)

    def record(state: RunState, instance: Any, names: list[str]) -> None:
        options = state.options if state.options is not None else instance._participant_names
        state.options = None
        if graph_manager_type is not None and isinstance(instance, graph_manager_type):
            _fan_in(recorder, state, instance, names)
        if len(names) > 1:
            size = len(names)
            for index, name in enumerate(names):
                state.fanout[name] = (index, size)
        if names:
            recorder.delegate(names[0] if len(names) == 1 else names,  # type: ignore[arg-type]
                              options=options, span=state.span)

    return wrapper


def _fan_in(recorder: Recorder, state: RunState, manager: Any, names: list[str]) -> None:
    if state.parents is None:
        try:
            state.parents = manager._graph.get_parents()
        except Exception:
            state.parents = {}
    for name in names:
        sources = [p for p in state.parents.get(name, ()) if p in state.seen]
        if len(sources) > 1:
            recorder.aggregate(sources=sources, span=state.span)


def selector_candidates() -> Callable[..., Any]:
    """``SelectorGroupChatManager._select_speaker(roles, participants, max_attempts)``."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is not None:
            state.options = list(arg(args, kwargs, 1, "participants") or ())
        return await wrapped(*args, **kwargs)

    return wrapper


def in_run_context() -> Callable[..., Any]:
    """A manager handler runs with its run's context current (model calls the
    manager makes, such as a selector's or MagenticOne's, join the run)."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is None:
            return await wrapped(*args, **kwargs)
        with attached(state.ctx):
            return await wrapped(*args, **kwargs)

    return wrapper


def agent_response(recorder: Recorder, handoff_type: type, agent_response_type: type,
                   chat_message_type: type) -> Callable[..., Any]:
    """``handle_agent_response(message, ctx)``: the response a participant
    published, relayed to the other participants."""

    def record(state: RunState, manager: Any, message: Any) -> None:
        sender = message.name
        if isinstance(message, agent_response_type):
            chat = message.response.chat_message
            if isinstance(chat, handoff_type):
                recipients = [chat.target]
                content: Any = {"content": chat.content, "target": chat.target, "context": chat.context}
            else:
                recipients = _others(state, manager, sender)
                content = _message_content(chat)
            kind = type(chat).__name__
        else:  # a team participant's TaskResult
            result = message.result
            recipients = _others(state, manager, sender)
            content = [_message_content(m) for m in result.messages if isinstance(m, chat_message_type)]
            kind = type(result).__name__
        recorder.message(content, recipients=recipients, sender=sender, message_type=kind, span=state.span)

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is None:
            return await wrapped(*args, **kwargs)
        try:
            message = arg(args, kwargs, 0, "message")
            if message is not None:
                record(state, instance, message)
        except Exception:
            telemetry_failed("agent response")
        with attached(state.ctx):
            return await wrapped(*args, **kwargs)

    return wrapper


def termination() -> Callable[..., Any]:
    """``_signal_termination(StopMessage)``: the stop reason text and the condition."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        message = arg(args, kwargs, 0, "message")
        if state is not None and state.stop is None and message is not None:
            state.stop = str(getattr(message, "content", "") or "") or None
            state.stop_source = getattr(message, "source", None)
        return await wrapped(*args, **kwargs)

    return wrapper


def termination_with_error() -> Callable[..., Any]:
    """``_signal_termination_with_error(SerializableException)``: the original error type."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        error = arg(args, kwargs, 0, "error")
        if state is not None and error is not None:
            state.error_type = getattr(error, "error_type", None)
        return await wrapped(*args, **kwargs)

    return wrapper


def magentic_one_publish(recorder: Recorder, request_type: type, agent_response_type: type) -> Callable[..., Any]:
    """``MagenticOneOrchestrator.publish_message``: a ``GroupChatRequestPublish``
    to a participant's topic is the orchestrator's choice of the next speaker;
    its own response on the group topic is an instruction to every participant."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is not None:
            try:
                record(state, instance, arg(args, kwargs, 0, "message"), arg(args, kwargs, 1, "topic_id"))
            except Exception:
                telemetry_failed("MagenticOne publish")
        return await wrapped(*args, **kwargs)

    def record(state: RunState, instance: Any, message: Any, topic: Any) -> None:
        topic_type = getattr(topic, "type", None)
        if isinstance(message, request_type):
            chosen = next((n for n, t in instance._participant_name_to_topic_type.items() if t == topic_type), None)
            if chosen is not None:
                recorder.delegate(chosen, options=instance._participant_names, span=state.span)
        elif isinstance(message, agent_response_type) and topic_type == instance._group_topic_type:
            chat = message.response.chat_message
            recorder.message(_message_content(chat), recipients=list(instance._participant_names),
                             sender=state.actor, message_type=type(chat).__name__, span=state.span)

    return wrapper
