"""The team's side: group chat managers choose speakers (delegation), relay
responses (messages), join parallel speakers (aggregation) and terminate
(stop). Everything is recorded on the run span, whose actor is the team,
except an agent's own stop (on its turn, see ``_stops``).

Hooks: ``BaseGroupChatManager._log_speaker_selection`` (every manager but
MagenticOne), ``SelectorGroupChatManager._select_speaker`` /
``select_speaker`` (the candidate list), ``handle_start`` /
``handle_agent_response`` (context and messages),
``_signal_termination(_with_error)`` (stop reason, forced or voluntary), and
``MagenticOneOrchestrator.publish_message`` (its speaker requests and
instructions), ``_orchestrate_step`` / ``_prepare_final_answer`` (its own
stop: round limit or answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...recorder import Recorder
from .._calls import arg, attached
from . import _stops
from ._state import RunState, state_of, telemetry_failed


def _message_content(message: Any) -> Any:
    """What a message says, without serializing the whole message object."""
    return getattr(message, "content", None)


def _others(state: RunState, manager: Any, sender: str) -> list[str]:
    """Who a broadcast response reaches: the other participants, or only the
    team's manager when the sender is the sole participant."""
    return [p for p in manager._participant_names if p != sender] or [state.actor]


def selection(recorder: Recorder, graph_manager_type: type | None,
              no_choice_types: tuple[type, ...] = ()) -> Callable[..., Any]:
    """``_log_speaker_selection(speaker_names)``: a delegate decision naming the
    chosen speaker(s) and the candidates; a parallel choice marks each turn with
    its fan-out index; a GraphFlow node with several parents is a fan-in.

    Candidates (docs/autogen.md#delegations-and-their-candidates): the
    selector's own list; the one speaker a round robin's order or a swarm's
    handoff leaves (no choice); a GraphFlow's start nodes, then the targets of
    the last speakers' outgoing edges; every participant for any other manager."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is not None:
            try:
                record(state, instance, list(arg(args, kwargs, 0, "speaker_names") or ()))
            except Exception:
                telemetry_failed("speaker selection")
        return await wrapped(*args, **kwargs)

    def record(state: RunState, instance: Any, names: list[str]) -> None:
        is_graph = graph_manager_type is not None and isinstance(instance, graph_manager_type)
        if state.options is not None:
            options = state.options
        elif isinstance(instance, no_choice_types):
            options = names
        elif is_graph:
            options = _graph_options(state, instance)
        else:
            options = instance._participant_names
        state.options = None
        state.last_speakers = names
        if is_graph:
            _fan_in(recorder, state, names)
        if len(names) > 1:
            size = len(names)
            for index, name in enumerate(names):
                state.fanout[name] = (index, size)
        if names:
            recorder.delegate(names[0] if len(names) == 1 else names,
                              options=options, span=state.span)

    return wrapper


def _graph_options(state: RunState, manager: Any) -> list[str]:
    """A GraphFlow's candidates: its start nodes first, then every target of an
    outgoing edge of the nodes that just ran (edge conditions pick among them)."""
    if state.last_speakers is None:
        start = manager._graph.get_start_nodes()  # a set: keep the graph's node order
        return [node for node in manager._graph.nodes if node in start]
    targets: dict[str, None] = {}
    for speaker in state.last_speakers:
        for edge in manager._edges.get(speaker, ()):
            targets.setdefault(edge.target, None)
    return list(targets)


def _fan_in(recorder: Recorder, state: RunState, names: list[str]) -> None:
    """A chosen node whose activation waited for several parents aggregates them
    (their edges fired since its last activation: see :func:`graph_activations`)."""
    for name in names:
        sources = state.activations.pop(name, None)
        if sources is not None and len(sources) > 1:
            recorder.aggregate(sources=sources, span=state.span)


def graph_activations() -> Callable[..., Any]:
    """``GraphFlowManager.update_message_thread(messages)``: which of the speaker's
    outgoing edges fired (their condition held), read from the manager's own
    counters before and after: an ``all`` group's count went down, an ``any``
    group's target got enqueued. When a group is complete, the parents whose
    edges completed it are the sources of the target's next activation; a loop
    that runs the target again starts a new activation, with only its own parents."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        before = None
        if state is not None:
            try:
                before = _edge_counts(instance, arg(args, kwargs, 0, "messages"))
            except Exception:
                telemetry_failed("graph activation")
        result = await wrapped(*args, **kwargs)
        if state is not None and before is not None:
            try:
                _note_fired(state, instance, *before)
            except Exception:
                telemetry_failed("graph activation")
        return result

    return wrapper


def _edge_counts(manager: Any, messages: Any) -> tuple[str, list[tuple[str, str, bool, Any]]] | None:
    source = getattr(messages[-1], "source", None) if messages else None
    if not isinstance(source, str) or source not in manager._graph.nodes:
        return None
    counts = []
    for edge in manager._edges.get(source, ()):
        target, group = edge.target, edge.activation_group
        every = manager._activation[target][group] == "all"
        counts.append((target, group, every,
                       manager._remaining[target][group] if every else manager._enqueued_any[target][group]))
    return source, counts


def _note_fired(state: RunState, manager: Any, source: str, counts: list[tuple[str, str, bool, Any]]) -> None:
    for target, group, every, before in counts:
        if every:
            left = manager._remaining[target][group]
            if left != before - 1:
                continue  # the edge's condition did not hold
            arrived = state.arrivals.setdefault((target, group), [])
            arrived.append(source)
            if left == 0:  # the group is complete: the target is ready
                state.activations.setdefault(target, []).extend(state.arrivals.pop((target, group)))
        elif not before and manager._enqueued_any[target][group]:  # the first edge of an "any" group
            state.activations.setdefault(target, []).append(source)


def selector_candidates() -> Callable[..., Any]:
    """``SelectorGroupChatManager._select_speaker(roles, participants, max_attempts)``:
    the candidates the selector's model chooses among."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is not None:
            state.options = list(arg(args, kwargs, 1, "participants") or ())
        return await wrapped(*args, **kwargs)

    return wrapper


class _Unassigned(str):
    """The previous speaker's own value, as a new object: AutoGen assigns
    ``_previous_speaker`` only when it picked among candidates, so finding this
    very object there afterwards means ``selector_func`` chose."""

    __slots__ = ()


def selector_choice() -> Callable[..., Any]:
    """``SelectorGroupChatManager.select_speaker``: when the model was not asked,
    either one candidate was left (after ``candidate_func`` or the no-repeat
    rule: the options are that one) or ``selector_func`` chose (among all
    participants). Only the candidate path assigns ``_previous_speaker``, maybe
    to the value it had: with both functions set (where AutoGen reads that
    attribute nowhere during the call) an equal stand-in tells the paths apart."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is None:
            return await wrapped(*args, **kwargs)
        state.options = None
        before = getattr(instance, "_previous_speaker", None)
        mark = _mark(instance, before)
        try:
            speakers = await wrapped(*args, **kwargs)
        finally:
            after = getattr(instance, "_previous_speaker", None)
            if mark is not None and after is mark:
                instance._previous_speaker = before  # not assigned: put the app's own object back
        if state.options is None:
            try:
                chosen = speakers if isinstance(speakers, str) else speakers[0]
                assigned = after is not mark if mark is not None else after != before
                by_func = instance._selector_func is not None and not assigned
                state.options = list(instance._participant_names) if by_func else [chosen]
            except Exception:
                telemetry_failed("selector choice")
        return speakers

    return wrapper


def _mark(manager: Any, before: Any) -> _Unassigned | None:
    """Put a stand-in equal to the previous speaker in its place, when both a
    ``selector_func`` and a ``candidate_func`` are set and there was one."""
    try:
        if isinstance(before, str) and manager._selector_func is not None and manager._candidate_func is not None:
            mark = _Unassigned(before)
            manager._previous_speaker = mark
            return mark
    except Exception:
        telemetry_failed("selector choice")
    return None


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


def agent_response(recorder: Recorder, handoff_type: type[Any], agent_response_type: type[Any],
                   chat_message_type: type[Any]) -> Callable[..., Any]:
    """``handle_agent_response(message, ctx)``: the response a participant
    published, relayed to the other participants."""

    def record(state: RunState, manager: Any, message: Any) -> None:
        sender = message.name
        if isinstance(message, agent_response_type):
            chat = message.response.chat_message
            handoff = isinstance(chat, handoff_type)
            # the last response handed off out of the team: to a person, who may answer in a later run
            state.handed_to = chat.target if handoff and chat.target not in manager._participant_names else None
            if handoff:
                recipients = [chat.target]
                content: Any = {"content": chat.content, "target": chat.target, "context": chat.context}
            else:
                recipients = _others(state, manager, sender)
                content = _message_content(chat)
            if sender in state.humans:  # a human's answer (UserProxyAgent), relayed by the team
                recorder.human_intervention(_message_content(chat), recipients=recipients, span=state.span)
                return
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


def termination(recorder: Recorder, graph_manager_type: type, magentic_type: type) -> Callable[..., Any]:
    """``_signal_termination(StopMessage)``: the stop reason text, the condition,
    forced or voluntary, and the stop of the agent whose message fired it."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        message = arg(args, kwargs, 0, "message")
        if state is not None and state.stop is None and message is not None:
            try:
                record(state, instance, message)
            except Exception:
                telemetry_failed("termination")
        return await wrapped(*args, **kwargs)

    def record(state: RunState, manager: Any, message: Any) -> None:
        state.stop = str(getattr(message, "content", "") or "") or None
        state.stop_source = getattr(message, "source", None)
        state.stop_forced, firing = _stops.decide(state, manager, message, graph_manager_type, magentic_type)
        if firing is not None:
            recorder.stop_by(firing.turn, firing.text, source=firing.source)

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


def magentic_one_publish(recorder: Recorder, request_type: type[Any], agent_response_type: type[Any]) -> Callable[..., Any]:
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


def magentic_one_step() -> Callable[..., Any]:
    """``MagenticOneOrchestrator._orchestrate_step``: whether it starts past the
    orchestrator's round limit (then its final answer is a forced stop)."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is not None:
            try:
                limit = instance._max_turns
                state.round_limit = limit is not None and instance._n_rounds > limit
            except Exception:
                telemetry_failed("MagenticOne step")
        return await wrapped(*args, **kwargs)

    return wrapper


def magentic_one_final_answer() -> Callable[..., Any]:
    """``MagenticOneOrchestrator._prepare_final_answer``: the orchestrator ends the run itself."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = state_of(instance)
        if state is not None:
            state.final_answer = True
        return await wrapped(*args, **kwargs)

    return wrapper
