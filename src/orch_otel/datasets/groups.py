"""The cross-trace views over the branches of a fork (``orch-otel replay
--fork EVENT --choose-each``): ``groups``, one row per branch with its
advantage against the other branches from the same state, and
``preferences``, TRL's ``prompt`` / ``chosen`` / ``rejected`` pairs.

A branch is a trace with the ``task_id`` of its source and, on exactly one
event (the forced decision), a ``fork`` field ``{source_trace_id, event_id,
decision, recorded, forced, group}``. Each trace line gives one member record
(:func:`group_member`, :func:`preference_member`; in either engine, like any
view's rows); :func:`finish` groups the members by ``group`` once every line
was read and makes the rows. A trace without a ``fork`` is not a branch
(:class:`NotABranch`): the engine counts it and goes on.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

import orjson

from ..tracefiles import ContentIndex
from ..vocabulary import Channel, EventKind
from .analysis import Config, Prepared, find_turns
from .conversations import for_templates
from .messages import reply_key, text_of
from .views import decision_points, llm_item, offered_tools, turn_contents

EPS = 1e-6  # in the normalised advantage's denominator: a group whose rewards are all equal gets 0, not a division by zero
_FORK_TEXTS = ("source_trace_id", "event_id", "decision", "group")
_FORK_LISTS = ("recorded", "forced")

Tag = tuple[str, str]  # (where, trace_id) of the line a member came from


class NotABranch(Exception):
    """The trace has no ``fork`` event: not a member of any group."""


def find_fork(events: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """(position, fork) of the one event that carries a ``fork``; a clear
    ``ValueError`` naming the field when it is malformed."""
    found = [i for i, e in enumerate(events) if e.get("fork") is not None]
    if not found:
        raise NotABranch
    if len(found) > 1:
        ids = ", ".join(str(events[i]["id"]) for i in found)
        raise ValueError(f"events {ids} all carry a fork: a branch has it on exactly one event")
    i = found[0]
    fork, where = events[i]["fork"], f"events[{i}].fork"
    if type(fork) is not dict:
        raise ValueError(f"{where}: expected a JSON object, got {type(fork).__name__}")
    for key in _FORK_TEXTS:
        if type(fork.get(key)) is not str or not fork[key]:
            raise ValueError(f"{where}.{key}: expected a non-empty string, got {fork.get(key)!r}")
    for key in _FORK_LISTS:
        if type(fork.get(key)) is not list or any(type(v) is not str for v in fork[key]):
            raise ValueError(f"{where}.{key}: expected a list of strings, got {fork.get(key)!r}")
    return i, fork


def _fork_point(p: Prepared, store: ContentIndex) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None,
                                                             list[dict[str, Any]]]:
    """(event, fork, the decider's latest LLM call, context) at the fork, as
    the ``decisions`` view sees it. The event is the one that carries the
    fork (after the fork a branch may number its events otherwise than its
    source, so ``fork.event_id`` names the source's event, not necessarily
    this one); on an event that is no decision (a branch that ended before
    deciding), the latest LLM call of that instance up to it."""
    position, fork = find_fork(p.events)
    for i, event, llm, context in decision_points(p, store):
        if i == position:
            return event, fork, llm, context
    event = p.events[position]
    llm = next((e for e in reversed(p.events[:position + 1]) if e["type"] == EventKind.MESSAGE.value
                and e.get("channel") == Channel.LLM.value and e.get("instance") == event.get("instance")
                and e["agent"] == event["agent"]), None)
    context = [] if llm is None else [c for c in (llm_item("llm_input", llm.get("input_ref"), store, llm["id"]),
                                                  llm_item("llm_output", llm.get("content_ref"), store, llm["id"]))
                                      if c is not None]
    return event, fork, llm, context


def _stated_prompt(event: dict[str, Any], fork: dict[str, Any], context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A decision no LLM made: what reached the decider, then the choice it faced."""
    messages = []
    for item in context:
        if "content" in item:
            message = {"role": "user", "content": text_of(item["content"])}
            if item.get("from"):
                message["name"] = item["from"]
            messages.append(message)
    options = event.get("options") or []
    ask = f"{event['agent']} decides: {fork['decision']}" + (f"; options: {', '.join(options)}" if options else "")
    return messages + [{"role": "user", "content": ask}]


def _decider_messages(p: Prepared, config: Config, store: ContentIndex, need: bool):
    """What the decider saw at the fork (its LLM call's prompt, from its own
    side as in ``turns``) and that call's reply (None without one)."""
    event, fork, llm, context = _fork_point(p, store)
    prompt = reply = None
    tools = offered_tools(store, llm.get("tools_ref")) if llm is not None else []
    if llm is not None:
        turns = find_turns(p.events)
        contents = turn_contents(p, turns, store, config.view, need)
        prompt, output = next(c for t, c in zip(turns, contents) if p.events[t.index] is llm)
        if output is not None:
            reply = {"role": "assistant", "content": output["content"]}
            if output.get("tool_calls"):
                reply["tool_calls"] = output["tool_calls"]
    if prompt is None and (llm is None or need):
        prompt = _stated_prompt(event, fork, context)
    return event, fork, context, for_templates(prompt), reply, tools


def group_member(p: Prepared, config: Config, store: ContentIndex) -> list[dict[str, Any]]:
    """A branch's ``groups`` row, its group statistics left for :func:`finish`."""
    event, fork, context, prompt, _, tools = _decider_messages(p, config, store, config.need_content)
    return [{
        "group_id": fork["group"],
        "source_trace_id": fork["source_trace_id"],
        "fork_event_id": fork["event_id"],
        "decision": fork["decision"],
        "agent": event["agent"],
        "role": event.get("role"),
        "options": event.get("options"),
        "option": fork["forced"],
        "recorded": fork["recorded"],
        "context": context,
        "prompt": prompt,
        "tools": tools,
        **p.base,
        "reward": p.reward,
        "rewards": p.rewards,
        "group_size": None,
        "group_mean": None,
        "group_std": None,
        "advantage": None,
        "advantage_normalized": None,
        **p.outcome_columns,
    }]


def preference_member(p: Prepared, config: Config, store: ContentIndex) -> list[dict[str, Any]]:
    """What a branch brings to its group's pairs: the prompt, its reply at the fork, its choice, its reward."""
    event, fork, _, prompt, reply, tools = _decider_messages(p, config, store, True)
    stated = {"role": "assistant", "content": orjson.dumps({"decision": fork["decision"], "targets": fork["forced"]}).decode()}
    return [{
        "group_id": fork["group"], "source_trace_id": fork["source_trace_id"], "fork_event_id": fork["event_id"],
        "decision": fork["decision"], "agent": event["agent"], "trace_id": p.trace["trace_id"],
        "task_id": p.trace["task_id"], "option": fork["forced"], "recorded": fork["recorded"], "reward": p.reward,
        "prompt": prompt, "reply": reply, "stated": stated, "tools": tools,
    }]


def _by_group(members: list[tuple[Tag, dict[str, Any]]]) -> list[list[tuple[Tag, dict[str, Any]]]]:
    """Members grouped by group id: groups in the order of their first member, members in input order."""
    groups: dict[str, list[tuple[Tag, dict[str, Any]]]] = {}
    for tag, row in members:
        groups.setdefault(row["group_id"], []).append((tag, row))
    return list(groups.values())


def _with_advantages(rows: list[dict[str, Any]]) -> None:
    """Population mean and std over the group's rewarded branches; a branch
    without a reward gets no advantage and is not counted."""
    rewards = [r["reward"] for r in rows if r["reward"] is not None]
    mean = statistics.fmean(rewards) if rewards else None
    std = statistics.pstdev(rewards, mu=mean) if rewards else None
    for row in rows:
        row.update(group_size=len(rows), group_mean=mean, group_std=std)
        if row["reward"] is not None and mean is not None and std is not None:
            row["advantage"] = row["reward"] - mean
            row["advantage_normalized"] = (row["reward"] - mean) / (std + EPS)


def _replies(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two branches' replies at the fork when both are LLM replies that
    differ; else (no LLM decided, or the choice was forced after the model
    answered, so the replies do not show it) each branch's stated choice."""
    if a["reply"] is not None and b["reply"] is not None and reply_key(a["reply"]) != reply_key(b["reply"]):
        return _own_call_ids(a, b["reply"]), _own_call_ids(b, a["reply"])
    return a["stated"], b["stated"]


def _own_call_ids(member: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """The member's reply, arguments as dicts; a tool call that shares its id
    with a different call of the other reply (a replay that forced another
    option edits the recorded call, keeping its id) gets an id of its own
    in the branch that did not take the recorded option."""
    reply = (for_templates([member["reply"]]) or [member["reply"]])[0]
    if member["option"] == member["recorded"]:
        return reply
    theirs = {c["id"]: c["function"]["name"] for c in other.get("tool_calls") or ()}
    calls = []
    for i, call in enumerate(reply.get("tool_calls") or ()):
        if call["id"] in theirs and theirs[call["id"]] != call["function"]["name"]:
            call = {**call, "id": f"call_{member['trace_id'][:12]}_{i}"}
        calls.append(call)
    return {**reply, "tool_calls": calls} if calls else reply


def _pairs(members: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every pair of branches with different rewards, the higher one chosen."""
    for i, a in enumerate(members):
        for b in members[i + 1:]:
            if a["reward"] is None or b["reward"] is None or a["reward"] == b["reward"]:
                continue
            chosen, rejected = (a, b) if a["reward"] > b["reward"] else (b, a)
            chosen_reply, rejected_reply = _replies(chosen, rejected)
            yield {
                "prompt": chosen["prompt"],
                "chosen": [chosen_reply],
                "rejected": [rejected_reply],
                "tools": chosen["tools"],
                "group_id": a["group_id"], "source_trace_id": a["source_trace_id"],
                "fork_event_id": a["fork_event_id"], "decision": a["decision"], "agent": a["agent"],
                "task_id": a["task_id"],
                "chosen_trace_id": chosen["trace_id"], "rejected_trace_id": rejected["trace_id"],
                "chosen_option": chosen["option"], "rejected_option": rejected["option"],
                "chosen_reward": chosen["reward"], "rejected_reward": rejected["reward"],
            }


def finish(view: str, members: list[tuple[Tag, dict[str, Any]]]) -> tuple[int, list[tuple[list[Tag], list[dict[str, Any]]]]]:
    """After the last line: (number of groups, the rows to write, each batch
    with the tags of the lines it was made from)."""
    groups = _by_group(members)
    out: list[tuple[list[Tag], list[dict[str, Any]]]] = []
    for group in groups:
        if view == "groups":
            _with_advantages([row for _, row in group])
            out.extend(([tag], [row]) for tag, row in group)
        else:
            rows = list(_pairs([row for _, row in group]))
            if rows:
                out.append(([tag for tag, _ in group], rows))
    return len(groups), out


BUILDERS = {"groups": group_member, "preferences": preference_member}
