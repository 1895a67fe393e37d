"""Stops: which termination condition ended a run, whether a limit forced it
or an agent chose it, and which agent (docs/autogen.md#stops-forced-or-voluntary).

A group chat manager checks its termination condition after each response
and resets it before it signals the stop, so the condition's own state is gone
by then. Each built-in condition's ``__call__`` is therefore wrapped: when it
fires inside a run, the run remembers a :class:`Firing` (the condition's name
and text, and the agent whose message fired it). At ``_signal_termination``
the StopMessage's ``source`` names every condition behind the stop (``|`` and
``&`` join their parts' names with ", "), and :func:`decide` classifies it:

- voluntary when any condition behind the stop is not a limit (an ``|`` where
  an agent's condition fired is the agent's stop even if a limit fired with
  it; an ``&`` needs all its parts, so a limit in it is a minimum, not what
  ended the run, unless every part is a limit);
- forced when every condition behind it is a limit (max messages, tokens,
  timeout, an external stop) and for the manager's own stops (max turns,
  MagenticOne's rounds, "already terminated"), except the natural end of a
  GraphFlow and MagenticOne's answer once its ledger says the task is done.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from autogen_agentchat import conditions as _c
from autogen_agentchat.messages import HandoffMessage, StopMessage, TextMessage, ToolCallExecutionEvent
from autogen_agentchat.teams._group_chat._graph._digraph_group_chat import _DIGRAPH_STOP_MESSAGE

from .._calls import arg
from ._state import RunState, current_state, telemetry_failed

FORCED_CONDITIONS = frozenset({
    "MaxMessageTermination", "TokenUsageTermination", "TimeoutTermination", "ExternalTermination",
})
"""Conditions (by the ``source`` of their StopMessage) that are limits, not an agent's choice."""

CONDITION_CLASSES = tuple(getattr(_c, name) for name in _c.__all__)
"""Every built-in termination condition: their ``__call__`` is wrapped."""

FORCED_TYPES = (_c.MaxMessageTermination, _c.TokenUsageTermination, _c.TimeoutTermination, _c.ExternalTermination)

DIGRAPH_COMPLETE = _DIGRAPH_STOP_MESSAGE  # GraphFlow's own stop text when no node is left to run


@dataclass(frozen=True, slots=True)
class Firing:
    source: str  # the condition's name (its StopMessage source)
    text: str  # the condition's own stop text
    agent: str | None  # whose message fired it (None for limits)
    turn: Any  # that agent's turn (Invocation) when it fired: an ``&`` may stop the run turns later


def _first_source(messages: Sequence[Any], match: Callable[[Any], bool]) -> str | None:
    for message in messages:
        try:
            if match(message):
                return getattr(message, "source", None)
        except Exception:  # a message of a kind the condition would skip too
            continue
    return None


def trigger(condition: Any, messages: Sequence[Any]) -> str | None:
    """The source of the message that made ``condition`` fire (None for a limit)."""
    if isinstance(condition, _c.TextMentionTermination):
        text, sources = condition._termination_text, condition._sources
        return _first_source(messages, lambda m: (sources is None or m.source in sources) and text in m.to_text())
    if isinstance(condition, _c.HandoffTermination):
        return _first_source(messages, lambda m: isinstance(m, HandoffMessage) and m.target == condition._target)
    if isinstance(condition, _c.StopMessageTermination):
        return _first_source(messages, lambda m: isinstance(m, StopMessage))
    if isinstance(condition, _c.TextMessageTermination):
        source = condition._source
        return _first_source(messages, lambda m: isinstance(m, TextMessage) and source in (None, m.source))
    if isinstance(condition, _c.SourceMatchTermination):
        return _first_source(messages, lambda m: m.source in condition._sources)
    if isinstance(condition, _c.FunctionCallTermination):
        name = condition._function_name
        return _first_source(messages, lambda m: isinstance(m, ToolCallExecutionEvent)
                             and any(call.name == name for call in m.content))
    if isinstance(condition, FORCED_TYPES):
        return None
    # FunctionalTermination (or a subclass of another): the last message it judged.
    return getattr(messages[-1], "source", None) if messages else None


def condition_call() -> Callable[..., Any]:
    """``TerminationCondition.__call__(messages)``: remember a firing in the run checking it."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        stop = await wrapped(*args, **kwargs)
        if stop is not None:
            try:
                state = current_state()  # the manager's handlers run with their run's context
                if state is not None:
                    messages = arg(args, kwargs, 0, "messages") or ()
                    agent = trigger(instance, messages)
                    turn = state.turns.get(agent) if agent else None
                    state.firings.append(Firing(str(stop.source), str(stop.content), agent, turn))
            except Exception:
                telemetry_failed("termination condition")
        return stop

    return wrapper


def _natural_end(state: RunState, manager: Any, message: Any, graph_type: type, magentic_type: type) -> bool:
    if isinstance(manager, graph_type):
        return getattr(message, "content", None) == DIGRAPH_COMPLETE
    if isinstance(manager, magentic_type):
        return state.final_answer and not state.round_limit
    return False


def decide(state: RunState, manager: Any, message: Any, graph_type: type, magentic_type: type
           ) -> tuple[bool, Firing | None]:
    """Whether the stop ``message`` was forced, and the voluntary firing (with its agent) behind it."""
    firings, state.firings = state.firings, []
    source = str(getattr(message, "source", "") or "")
    if source == getattr(manager, "_name", None):  # the manager's own stop, not a condition's
        return not _natural_end(state, manager, message, graph_type, magentic_type), None
    names = {part.strip() for part in source.split(",")}
    # A condition that only a human's message fired (a UserProxyAgent's) is the human's decision:
    # no policy chose it, so, like an external stop, it is forced for the team.
    by_agents = {f.source for f in firings if f.agent not in state.humans}
    by_humans = {f.source for f in firings if f.agent in state.humans} - by_agents
    forced = names <= FORCED_CONDITIONS | by_humans
    chosen = next((f for f in firings if f.source in names and f.source not in FORCED_CONDITIONS and f.turn is not None), None)
    return forced, chosen
