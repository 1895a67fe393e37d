"""Forks: where a recorded decision can be changed, and how.

A decision a model made (a handoff or delegation tool call, a selector's
answer naming the next speaker, a manager's JSON answer naming it, an answer
with no handoff that ended the run) is forced the way the model would have made the other choice: the
reply served at the fork is the recorded one with the choice changed, and
the framework then acts on it with its own machinery (the handoff tool's
``Command``, the selector's speaker, the agent's end of turn). The handoff
tools come from the model's offered tools, else from the agent's own
definition as recorded on the decision (``handoff_tools``). An AutoGen
team's stop goes through its termination check: ``stop`` ends the run at
that check, ``continue`` lets the run go on past a recorded stop. A
LangGraph routing function's decision (``router``) is forced at that call of
the function: its result becomes the label its path map gives the chosen
node. A decision a node's own code made is reported as one a fork cannot
change, with what can be.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..vocabulary import Channel, DecisionKind, EventKind

STOP = "stop"  # --choose stop: end here instead of handing off
CONTINUE = "continue"  # --choose continue: an AutoGen team goes on past a recorded stop


class ForkError(ValueError):
    """A fork that cannot be made: not a decision, not an option, or not forceable."""


@dataclass(frozen=True)
class Termination:
    """A forced outcome of one team's termination check: ``check`` counts that
    team's checks from 1 (the task's, then one per round of replies)."""

    team: str
    check: int
    stop: bool


@dataclass(frozen=True)
class ForcedRoute:
    """A forced result of one routing function: its ``call``-th call in the
    run (counted from 1) goes to ``target`` (a node, or END for a stop)."""

    router: str
    call: int
    target: str


END = "__end__"


@dataclass(frozen=True)
class ForkPlan:
    event: dict[str, Any]  # the recorded decision
    index: int  # its position
    model_index: int  # where the branch may start to differ: the model call that decided, or the decision
    recorded: list[str]
    forced: list[str]
    rewrite: Callable[[Any], Any] | None = None  # the changed reply of that model call
    termination: Termination | None = None
    route: ForcedRoute | None = None

    def provenance(self, source_trace_id: str) -> dict[str, Any]:
        event_id = self.event["id"]
        return {"source_trace_id": source_trace_id, "event_id": event_id, "decision": self.event.get("decision"),
                "recorded": self.recorded, "forced": self.forced, "group": f"{source_trace_id}/{event_id}"}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _handoff_tools(event: dict[str, Any], model: dict[str, Any] | None, contents: Mapping[str, str]) -> dict[str, str]:
    """Handoff tool name -> the agent it hands off to: as the deciding agent's
    definition declares them (``handoff_tools``), else the transfer tools the
    model was offered (the agent named as the tool names it)."""
    declared = event.get("handoff_tools")
    if isinstance(declared, dict) and declared:
        return {str(k): str(v) for k, v in declared.items()}
    tools_text = contents.get(model.get("tools_ref") or "") if model is not None else None
    out: dict[str, str] = {}
    for tool in orjson.loads(tools_text) if tools_text else []:
        name = (tool.get("function") or {}).get("name") if isinstance(tool, dict) else None
        if isinstance(name, str) and (m := re.match(r"^(?:transfer|handoff)_?to_?(.+)$", name, re.IGNORECASE)):
            out[name] = m.group(1)
    return out


def options_at(trace: dict[str, Any], contents: Mapping[str, str], event_id: str) -> list[str]:
    """The options ``--choose-each`` forks over: the decision's recorded options,
    else the agents the deciding model could hand off to (an AutoGen team's
    stop: ``continue``)."""
    event, index = _decision(trace, event_id)
    if event["decision"] == DecisionKind.STOP.value:  # the recorded stop is a branch too, to compare the others with
        _recorded_stop(trace, event, index)  # a stop no fork can change fails here, as its alternatives would
        return [STOP, *(o for o in _alternatives(trace, contents, event, index) if o != STOP)]
    return _alternatives(trace, contents, event, index)


def _alternatives(trace: dict[str, Any], contents: Mapping[str, str], event: dict[str, Any], index: int) -> list[str]:
    if event.get("options"):
        return list(event["options"])
    if _team_check(trace, event, index) is not None and event["decision"] == DecisionKind.STOP.value:
        return [CONTINUE]
    model = _deciding_model(trace, event, index) if not event.get("handoff_tools") else None
    agents = _agents(trace)  # an agent that ran is named as it ran; one that did not, as its tool names it
    return list(dict.fromkeys(agents.get(_norm(target), target)
                              for target in _handoff_tools(event, model, contents).values()))


def _agents(trace: dict[str, Any]) -> dict[str, str]:
    return {_norm(e["agent"]): e["agent"] for e in trace["events"]}


def _decision(trace: dict[str, Any], event_id: str) -> tuple[dict[str, Any], int]:
    events = trace["events"]
    index = next((i for i, e in enumerate(events) if e["id"] == event_id), None)
    if index is None:
        raise ForkError(f"trace {trace['trace_id']} has no event {event_id}")
    event = events[index]
    if event.get("decision") not in (DecisionKind.DELEGATE.value, DecisionKind.STOP.value) or event.get("implied"):
        raise ForkError(f"event {event_id} is a {event['type']}"
                        f"{' ' + event['decision'] if event.get('decision') else ''}"
                        f"{' (implied)' if event.get('implied') else ''}, not a delegation, handoff, speaker "
                        "selection or stop that a fork can change")
    return event, index


def _team_check(trace: dict[str, Any], event: dict[str, Any], index: int) -> Termination | None:
    """The termination check of an AutoGen team just before ``event``, if
    ``event`` is that team's own selection or stop: its checks run one before
    each selection, so the check is 1 + the team's selections before it."""
    if trace.get("system") != "autogen" or event.get("agent") != trace["events"][0].get("agent"):
        return None
    instance = event.get("instance")
    earlier = sum(1 for e in trace["events"][:index]
                  if e.get("decision") == DecisionKind.DELEGATE.value and e.get("instance") == instance)
    return Termination(event["agent"], earlier + 1, stop=True)


def _check_start(events: list[dict[str, Any]], index: int) -> int:
    """Where a team's termination check begins, before the decision at
    ``index``: the stops its conditions recorded, and the team's own model
    call choosing the next speaker, come after the check."""
    instance = events[index].get("instance")
    start = index
    while start > 0:
        before = events[start - 1]
        own_model = before.get("channel") == Channel.LLM.value and before.get("instance") == instance
        if before.get("decision") != DecisionKind.STOP.value and not own_model:
            break
        start -= 1
    return start


def _deciding_model(trace: dict[str, Any], event: dict[str, Any], index: int) -> dict[str, Any]:
    event_id, events = event["id"], trace["events"]
    if event["decision"] == DecisionKind.STOP.value and event.get("source") != "answer":
        raise ForkError(f"event {event_id} (stop by {event.get('instance')}, {event.get('reason')!r}) was not made by "
                        f"a model call or a routing function but by {event.get('source') or 'the framework'}"
                        f"{_team_stop_hint(trace, event, index)}{_HINT}")
    instance = event.get("instance")
    model = next((e for e in reversed(events[:index]) if e["type"] == EventKind.MESSAGE.value
                  and e.get("channel") == Channel.LLM.value and e.get("instance") == instance), None)
    if model is None:
        raise ForkError(f"event {event_id} ({event['decision']} by {instance}) was not made by a model call or a "
                        f"routing function{_HINT}")
    return model


def _team_stop_hint(trace: dict[str, Any], event: dict[str, Any], index: int) -> str:
    """A participant's stop that an AutoGen termination condition recorded: the team's own stop,
    for the same reason, is the one a fork can change."""
    for later, other in enumerate(trace["events"][index + 1:], start=index + 1):
        if other.get("decision") == DecisionKind.STOP.value and other.get("reason") == event.get("reason") \
                and other.get("instance") != event.get("instance") and _team_check(trace, other, later) is not None:
            return f" (the team's stop for that reason is {other['id']}: fork there with --choose {CONTINUE})"
    return ""


_HINT = (": a fork forces a model's handoff tool call, a selector's answer, a LangGraph routing function's result "
         "(a conditional edge) or an AutoGen termination check; a choice the app's own code makes (a node's "
         "Command, a loop in an entrypoint) cannot be forced")


def _route_plan(event: dict[str, Any], index: int, choose: str) -> ForkPlan:
    """A routing function's decision: force its recorded call to go to ``choose`` (or END)."""
    event_id = event["id"]
    stopped = event["decision"] == DecisionKind.STOP.value
    if choose == CONTINUE:
        raise ForkError(f"{CONTINUE!r} forks an AutoGen team's stop; event {event_id} is not one")
    options = event.get("options")
    if choose != STOP and options is not None and choose not in options:
        raise ForkError(f"{choose!r} is not an option of {event_id}; its options are {', '.join(options)}")
    recorded = [] if stopped else list(event.get("targets") or [])
    route = ForcedRoute(str(event["router"]), int(event["router_call"]), END if choose == STOP else choose)
    return ForkPlan(event, index, index, recorded, [] if choose == STOP else [choose], route=route)


def _recorded_stop(trace: dict[str, Any], event: dict[str, Any], index: int) -> ForkPlan:
    """``stop`` at a recorded stop: the run as recorded, every call served, marked as a branch of
    the fork's group (``--choose-each`` makes it beside the other options), if a fork could change it."""
    check = _team_check(trace, event, index)
    if check is not None:
        source = str(event.get("source") or "")
        if not (source.endswith("Termination") or source.endswith("GroupChatManager")):
            raise ForkError(f"event {event['id']} was decided by {source or 'the team'} itself, not by its "
                            "termination check: a fork cannot change it")
    elif event.get("router") is None or event.get("router_call") is None:
        _deciding_model(trace, event, index)  # a stop no model made cannot be forked either way
    return ForkPlan(event, index, index, [], [])


def plan(trace: dict[str, Any], contents: Mapping[str, str], event_id: str, choose: str) -> ForkPlan:
    event, index = _decision(trace, event_id)
    stopped = event["decision"] == DecisionKind.STOP.value
    if stopped and choose == STOP:
        return _recorded_stop(trace, event, index)
    recorded = [] if stopped else list(event.get("targets") or [])
    check = _team_check(trace, event, index)
    if check is not None and (choose == STOP or (stopped and choose == CONTINUE)):
        if stopped == (choose == STOP):
            raise ForkError(f"event {event_id} already {'stops' if stopped else 'goes on'}: choose "
                            f"{CONTINUE if stopped else 'another speaker or ' + STOP}")
        source = str(event.get("source") or "")
        if stopped and not (source.endswith("Termination") or source.endswith("GroupChatManager")):
            raise ForkError(f"event {event_id} was decided by {source or 'the team'} itself, not by its "
                            "termination check: it cannot be forced to go on")
        forced = Termination(check.team, check.check, stop=choose == STOP)
        return ForkPlan(event, index, _check_start(trace["events"], index), recorded,
                        [] if choose == STOP else [CONTINUE], termination=forced)
    if event.get("router") is not None and event.get("router_call") is not None:
        return _route_plan(event, index, choose)
    if choose == CONTINUE:
        raise ForkError(f"{CONTINUE!r} forks an AutoGen team's stop; event {event_id} is not one")
    model = _deciding_model(trace, event, index)
    model_index = trace["events"].index(model)
    options = event.get("options")
    if choose != STOP and options and choose not in options:
        raise ForkError(f"{choose!r} is not an option of {event_id}; its options are {', '.join(options)}")
    handoffs = _handoff_tools(event, model, contents)
    tool_for = {_norm(agent): name for name, agent in handoffs.items()}
    if choose != STOP and _norm(choose) not in tool_for and handoffs:
        raise ForkError(f"the model at {model['id']} was offered no handoff to {choose!r}; it could hand off to "
                        f"{', '.join(sorted(handoffs))}")

    def rewrite(output: Any) -> Any:
        if _is_responses(output):
            return _rewrite_responses(output, handoffs, tool_for[_norm(choose)] if choose != STOP else None, event_id)
        if not isinstance(output, dict):
            output = {"role": "assistant", "content": output}
        calls = [dict(c) for c in output.get("tool_calls") or ()]
        handing = [c for c in calls if c.get("name") in handoffs]
        others = [c for c in calls if c.get("name") not in handoffs]
        if choose == STOP:
            return {**output, "tool_calls": others} if handing else _no_choice(output, event_id)
        if handing or (not calls and handoffs):
            # a new call carries both forms of its arguments: LangChain's dict, AutoGen's JSON text
            call = dict(handing[0]) if handing else {"id": f"call_fork_{event_id}", "args": {}, "arguments": "{}"}
            call["name"] = tool_for[_norm(choose)]
            return {**output, "tool_calls": [call, *others]}
        text = output.get("content")
        chosen = _json_choice(text, choose) if isinstance(text, str) else None
        if chosen is not None:  # a manager's JSON answer naming the next speaker
            return {**output, "content": chosen}
        if isinstance(text, str) and recorded and any(t in text for t in recorded):  # a selector's answer
            return {**output, "content": choose}
        return _no_choice(output, event_id)

    reply = contents.get(model.get("content_ref") or "")
    if reply is None:
        raise ForkError(f"the model reply that made {event_id} ({model['id']}) is not in the recording's content")
    rewrite(orjson.loads(reply))  # a fork that cannot be made fails here, before the app runs
    return ForkPlan(event, index, model_index, recorded, [] if choose == STOP else [choose], rewrite=rewrite)


def _json_choice(text: str, choose: str) -> str | None:
    """``text`` with its ``next_speaker`` changed to ``choose``, if it is a JSON
    object with one: Agent Framework's GroupChat manager answers
    ``{"next_speaker": name, ...}``, its Magentic ledger
    ``{"next_speaker": {"answer": name, ...}, ...}``; None otherwise."""
    try:
        answer = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(answer, dict) or "next_speaker" not in answer:
        return None
    speaker = answer["next_speaker"]
    if isinstance(speaker, dict) and "answer" in speaker:
        answer["next_speaker"] = {**speaker, "answer": choose}
    elif isinstance(speaker, str):
        answer["next_speaker"] = choose
    else:
        return None
    return orjson.dumps(answer).decode()


def _is_responses(output: Any) -> bool:
    """A reply recorded as Responses-API output items (the OpenAI Agents SDK's)."""
    return isinstance(output, list) and bool(output) and all(isinstance(i, dict) and "type" in i for i in output)


def _rewrite_responses(items: list[dict[str, Any]], handoffs: Mapping[str, str], tool: str | None,
                       event_id: str) -> list[dict[str, Any]]:
    """The reply with its handoff call changed to ``tool`` (or added, when it
    handed off to no one); ``tool=None`` (stop) drops the handoff call, which
    needs an answer in the reply to end the run on."""
    handing = [i for i in items if i.get("type") == "function_call" and i.get("name") in handoffs]
    others = [i for i in items if not any(i is h for h in handing)]
    if tool is None:
        if handing and any(i.get("type") == "message" for i in others):
            return others
        return _no_choice(items, event_id)
    if handing:
        return [{**handing[0], "name": tool}, *others]
    if handoffs:
        return [*others, {"type": "function_call", "call_id": f"call_fork_{event_id}", "id": f"fc_fork_{event_id}",
                          "name": tool, "arguments": "{}"}]
    return _no_choice(items, event_id)


def _no_choice(output: Any, event_id: str) -> Any:
    raise ForkError(f"the model reply that made {event_id} holds no handoff tool call and does not name the agent "
                    f"chosen, so there is no choice in it a fork can change{_HINT}")
