"""What "the same orchestration" means: each event reduced to the fields that
say who did what with whom, and the first place two traces differ.

Kept: the kind of event, the agent and its instance, the other party and its
instance, decisions with their targets, options, reasons and whether forced,
messages with their recipients and type, tool calls with their ids, content
refs, aggregates with their sources, outcomes and status (options as a set).
Left out: ids,
times, span ids, durations, token counts and model names (a served reply
reports the recorded usage, but usage is not orchestration).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_KEPT = ("type", "agent", "instance", "from", "to", "to_instance", "decision", "targets", "options", "reason",
         "forced", "channel", "recipients", "message_type", "tool", "call_id", "content_ref", "sources",
         "source_instances", "outcome", "status")


def call_names(events: list[dict[str, Any]]) -> dict[str, str]:
    """A name for each tool call id that does not depend on the id itself: the
    tool, its arguments' ref, and the how-manieth such call it is. Ids are
    identifiers, not orchestration, and some are drawn at random each run
    (``@orch_otel.tool``, frameworks' own calls); what counts is which call a
    result answers, and that survives the renaming."""
    names: dict[str, str] = {}
    seen: dict[tuple[Any, Any], int] = {}
    for e in events:
        call_id = e.get("call_id")
        if e["type"] == "tool_call" and isinstance(call_id, str) and call_id not in names:
            key = (e.get("tool"), e.get("content_ref"))
            seen[key] = seen.get(key, 0) + 1
            names[call_id] = f"{key[0]}({key[1] or ''})#{seen[key]}"
    return names


def orchestration(event: dict[str, Any], call_ids: dict[str, str] | None = None) -> dict[str, Any]:
    """The fields of ``event`` that the comparison looks at (``call_ids``:
    :func:`call_names` of its trace, to compare calls by what they are)."""
    view = {key: event[key] for key in _KEPT if key in event}
    if call_ids and view.get("call_id") in call_ids:
        view["call_id"] = call_ids[view["call_id"]]
    if event.get("channel") == "llm":  # a model call's "to" is the model's name
        view.pop("to", None)
    if isinstance(view.get("options"), list):  # candidates have no order (some frameworks keep them in a set)
        view["options"] = sorted(view["options"])
    if "resume_of" in event:  # the resumed trace's id differs between runs; that there is one does not
        view["resume_of_present"] = True
    return view


@dataclass(frozen=True)
class Divergence:
    """The first event where the replay differs from the recording:
    ``index`` (0-based position in the events), the recorded event and the
    replayed one as :func:`orchestration` reduces them (None where one trace
    has no event at that position), and ``trace_index`` in a chain of runs."""

    index: int
    expected: dict[str, Any] | None
    got: dict[str, Any] | None
    trace_index: int = 0
    note: str | None = None  # why, when the replay could not serve a call

    @property
    def event_id(self) -> str:
        return f"e{self.index + 1}"

    def describe(self) -> str:
        where = f"run {self.trace_index + 1}, " if self.trace_index else ""
        text = f"{where}event {self.event_id}: expected {self.expected}, got {self.got}"
        return f"{text} ({self.note})" if self.note else text


_TOOL_EVENTS = {"tool_call": 0, "tool_result": 1}


def canonical_order(events: list[dict[str, Any]], call_ids: dict[str, str]) -> list[dict[str, Any]]:
    """``events`` with each batch of tool calls put in one order: an unbroken
    run of tool calls and results of one instance, sorted by call name. An
    agent's tools of one turn run concurrently (AutoGen gathers them), so
    their order differs between two runs of the same orchestration."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(events):
        j = i
        while (j < len(events) and events[j]["type"] in _TOOL_EVENTS
               and events[j].get("instance") == events[i].get("instance")):
            j += 1
        if j - i > 2:
            out.extend(sorted(events[i:j], key=lambda e: (call_ids.get(str(e.get("call_id")), str(e.get("call_id"))),
                                                          _TOOL_EVENTS[e["type"]])))
        else:
            out.extend(events[i:max(j, i + 1)])
        i = max(j, i + 1)
    return out


def first_divergence(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]],
                     start: int = 0, stop: int | None = None) -> Divergence | None:
    """The first position in ``[start, stop)`` where the two event lists
    differ (each in :func:`canonical_order`)."""
    old_ids, new_ids = call_names(recorded), call_names(replayed)
    recorded, replayed = canonical_order(recorded, old_ids), canonical_order(replayed, new_ids)
    end = max(len(recorded), len(replayed)) if stop is None else stop
    for index in range(start, end):
        expected = orchestration(recorded[index], old_ids) if index < len(recorded) else None
        got = orchestration(replayed[index], new_ids) if index < len(replayed) else None
        if expected != got:
            if stop is None and same_runs(recorded, replayed, old_ids, new_ids):
                return None  # parallel instances ran in another order: the same orchestration
            return Divergence(index, expected, got)
    return None


_NUMBER = re.compile(r"#[0-9]+$")


def _unnumbered(view: dict[str, Any]) -> dict[str, Any]:
    out = dict(view)
    for key in ("instance", "to_instance"):
        if isinstance(out.get(key), str):
            out[key] = _NUMBER.sub("", out[key])
    if isinstance(out.get("source_instances"), list):
        out["source_instances"] = sorted(_NUMBER.sub("", i) for i in out["source_instances"])
    return out


def same_runs(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]],
              old_ids: dict[str, str], new_ids: dict[str, str]) -> bool:
    """Whether both traces hold the same agent invocations, each doing the same
    things in the same order, when their order relative to each other is left
    aside: parallel branches (LangGraph ``Send`` tasks on threads) interleave,
    and start, in an order that differs from run to run, and so does the
    number each instance gets. Within one model turn of an instance (from one
    of its model calls to the next) the order is left aside too: its tools run
    concurrently."""
    def runs(events: list[dict[str, Any]], ids: dict[str, str]) -> list[str]:
        # each instance's events, in turns: what it did between two of its model calls (the tools
        # of one turn run concurrently, and may start their agents, in another order) is a set
        by_instance: dict[Any, list[list[str]]] = {}
        for e in events:
            turns = by_instance.setdefault(e.get("instance"), [[]])
            if e.get("channel") == "llm":
                turns.append([])
            turns[-1].append(repr(_unnumbered(orchestration(e, ids))))
        return sorted(repr([sorted(turn) for turn in turns]) for turns in by_instance.values())

    return len(recorded) == len(replayed) and runs(recorded, old_ids) == runs(replayed, new_ids)
