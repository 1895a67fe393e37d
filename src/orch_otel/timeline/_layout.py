"""Where things go on the picture: one lane per agent instance (nested under
its spawner), one row per event in time order, invocation bars and the
arrows between lanes. Pure data, no HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..vocabulary import EventKind

# Edges drawn as arrows between lanes; temporal edges are the lane itself and
# tool dependencies stay inside one lane.
ARROW_EDGES = ("spawn", "causal", "return", "aggregate", "message")


@dataclass
class Lane:
    key: str  # the instance (name#k), or the agent name for events without one
    index: int
    depth: int
    parent: str | None
    first_row: int  # where its bar starts: the spawn that started it, else its first event
    last_row: int  # where its bar ends: its return, else its last event
    agent: str = ""
    role: str | None = None


@dataclass
class Arrow:
    kind: str
    src_row: int
    src_lane: int
    dst_row: int
    dst_lane: int


@dataclass
class Layout:
    lanes: list[Lane]
    lane_of_row: list[int]  # row (event index) -> lane index
    arrows: list[Arrow] = field(default_factory=list)


def lane_key(event: dict[str, Any]) -> str:
    """The lane an event is drawn on: its instance, else (older traces, the human) its agent."""
    instance = event.get("instance")
    return str(instance) if instance else str(event.get("agent", "?"))


def _parents(events: list[dict[str, Any]]) -> dict[str, str]:
    """child lane -> parent lane, from spawns (first) and returns."""
    parent: dict[str, str] = {}
    for event in events:
        kind = event.get("type")
        child_to = event.get("to_instance")
        if kind == EventKind.SPAWN.value and child_to:
            parent.setdefault(str(child_to), lane_key(event))
    for event in events:
        if event.get("type") == EventKind.RETURN.value and event.get("to_instance"):
            parent.setdefault(lane_key(event), str(event["to_instance"]))
    return parent


def _ordered(keys: list[str], parent: dict[str, str]) -> list[tuple[str, int]]:
    """Lanes depth first: each instance right after the one that spawned it, siblings in order of appearance."""
    children: dict[str | None, list[str]] = {}
    known = set(keys)
    for key in keys:
        up = parent.get(key)
        children.setdefault(up if up in known and up != key else None, []).append(key)
    out: list[tuple[str, int]] = []
    seen: set[str] = set()

    def walk(key: str, depth: int) -> None:
        stack = [(key, depth)]
        while stack:  # iterative: a deep or cyclic parent chain (bad input) cannot blow the stack
            here, level = stack.pop()
            if here in seen:
                continue
            seen.add(here)
            out.append((here, level))
            stack.extend((c, level + 1) for c in reversed(children.get(here, [])))

    for root in children.get(None, []):
        walk(root, 0)
    for key in keys:  # lanes only reachable through a cycle
        walk(key, 0)
    return out


def layout(events: list[dict[str, Any]], edges: list[dict[str, Any]]) -> Layout:
    keys: list[str] = []
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    agent: dict[str, tuple[str, str | None]] = {}
    for row, event in enumerate(events):
        key = lane_key(event)
        if key not in first:
            keys.append(key)
            first[key] = row
        last[key] = row
        if event.get("type") != EventKind.TOOL_RESULT.value:  # a tool result's agent is the tool
            agent.setdefault(key, (str(event.get("agent", "")), event.get("role")))
    for row, event in enumerate(events):  # a spawned instance's bar starts at its spawn
        child = event.get("to_instance")
        if event.get("type") == EventKind.SPAWN.value and child in first:
            first[str(child)] = min(first[str(child)], row)
    parent = _parents(events)
    lanes = [Lane(key, i, depth, parent.get(key), first[key], last[key], *agent.get(key, (key.rpartition("#")[0] or key, None)))
             for i, (key, depth) in enumerate(_ordered(keys, parent))]
    index = {lane.key: lane.index for lane in lanes}
    lane_of_row = [index[lane_key(e)] for e in events]
    row_of = {str(e.get("id")): row for row, e in enumerate(events)}
    arrows = []
    for edge in edges:
        kind = edge.get("type")
        src, dst = row_of.get(str(edge.get("src"))), row_of.get(str(edge.get("dst")))
        if kind not in ARROW_EDGES or src is None or dst is None or lane_of_row[src] == lane_of_row[dst]:
            continue
        arrows.append(Arrow(str(kind), src, lane_of_row[src], dst, lane_of_row[dst]))
    drawn = {a.src_row for a in arrows}
    for row, event in enumerate(events):  # a spawn or return with no edge still points at its lane
        other = event.get("to_instance")
        if event.get("type") in (EventKind.SPAWN.value, EventKind.RETURN.value) and other in index:
            target = index[str(other)]
            if target != lane_of_row[row] and row not in drawn:
                arrows.append(Arrow(str(event["type"]), row, lane_of_row[row], row, target))
    return Layout(lanes, lane_of_row, arrows)
