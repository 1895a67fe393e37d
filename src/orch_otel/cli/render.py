"""Terminal rendering of traces (shared by ``demo`` and ``show``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from ..vocabulary import Channel, DecisionKind, EventKind

_STYLE = {"error": "red", "ok": ""}


def describe(event: dict[str, Any]) -> str:
    """One line for one event: who did what to whom."""
    kind = event["type"]
    who = event["agent"]
    if kind == EventKind.ORCHESTRATOR_DECISION.value:
        decision = event.get("decision", "?")
        text = f"decide {decision}"
        if event.get("to"):
            text += f" -> {event['to']}"
        if event.get("options"):
            text += f" (options: {', '.join(event['options'])})"
        if event.get("reason"):
            text += f" reason={event['reason']}"
        return f"{who}: {text}" + (" [implied]" if event.get("implied") else "")
    if kind == EventKind.MESSAGE.value and event.get("channel") == Channel.LLM.value:
        tokens = (event.get("input_tokens") or 0) + (event.get("output_tokens") or 0)
        return f"{who}: llm call {event.get('model')} ({tokens} tokens)"
    if kind in (EventKind.TOOL_CALL.value, EventKind.TOOL_RESULT.value):
        return f"{who}: {kind} {event.get('tool')}" + (f" -> {event['to']}" if event.get("to") else "")
    if kind == EventKind.AGGREGATE.value:
        sources = event.get("source_instances") or event.get("sources")
        return f"{who}: aggregate" + (f" {', '.join(sources)}" if sources else "")
    to = event.get("to_instance") if kind in (EventKind.SPAWN.value, EventKind.RETURN.value) else None
    to = to or event.get("to")
    arrow = f" -> {to}" if to else ""
    return f"{who}: {kind}{arrow}"


def tree(trace: dict[str, Any]) -> Tree:
    """Events nested under the agent instance that acted (``worker#2``), each
    instance under the one that spawned it or that it returned to. Traces
    without instances (older files) nest by agent name."""
    root = Tree(f"[bold]trace {escape(str(trace['trace_id']))}[/bold]  task={escape(str(trace['task_id']))}")
    parent_of: dict[str, str] = {}
    for event in trace["events"]:
        if event["type"] == EventKind.SPAWN.value and event.get("to_instance") and event.get("instance"):
            parent_of[event["to_instance"]] = event["instance"]
        elif event["type"] == EventKind.RETURN.value and event.get("to_instance") and event.get("instance"):
            parent_of.setdefault(event["instance"], event["to_instance"])
    nodes: dict[str, Tree] = {}

    def node_for(owner: str, parent: str | None = None) -> Tree:
        if owner in nodes:
            return nodes[owner]
        chain = [owner]  # the owner and its ancestors not drawn yet
        up = parent_of.get(owner, parent)
        while up is not None and up not in nodes and up not in chain:
            chain.append(up)
            up = parent_of.get(up)
        under = nodes[up] if up is not None and up in nodes else root  # a loop in a bad file: at the top
        for name in reversed(chain):
            under = nodes[name] = under.add(f"[bold cyan]{escape(name)}[/bold cyan]")
        return nodes[owner]

    for event in trace["events"]:
        style = _STYLE.get(event.get("status", "ok"), "")
        label = f"[dim]{event['t']:.3f}s[/dim] {event['id']} {escape(describe(event))}"
        node_for(_owner(event)).add(f"[{style}]{label}[/{style}]" if style else label)
        if event["type"] == EventKind.SPAWN.value:
            node_for(event.get("to_instance") or event["to"], _owner(event))
    return root


def _owner(event: dict[str, Any]) -> str:
    """Whose node an event goes under: its instance when the actor is that
    instance's agent (or the caller, for a tool result), else the actor."""
    kind, instance = event["type"], event.get("instance")
    actor = event["to"] if kind == EventKind.TOOL_RESULT.value else event["agent"]
    if instance and instance.rsplit("#", 1)[0] == actor:
        return instance
    return actor


def summary(trace: dict[str, Any]) -> Table:
    table = Table(title=f"trace {trace['trace_id']} (task {trace['task_id']})", show_header=True)
    table.add_column("what")
    table.add_column("value")
    kinds = Counter(e["type"] for e in trace["events"])
    table.add_row("events", ", ".join(f"{k}={n}" for k, n in sorted(kinds.items())))
    decisions = Counter(e["decision"] for e in trace["events"] if e.get("decision"))
    table.add_row("decisions", ", ".join(f"{k}={decisions[k.value]}" for k in DecisionKind if decisions[k.value]))
    seen = dict.fromkeys(e["instance"] for e in trace["events"] if e.get("instance"))  # in order of appearance
    runs = Counter(i.rsplit("#", 1)[0] for i in seen)
    if runs:
        table.add_row("instances", ", ".join(f"{name}={n}" for name, n in runs.items()))
    stops = [e.get("reason", "?") for e in trace["events"] if e.get("decision") == DecisionKind.STOP.value]
    table.add_row("stop reason", ", ".join(stops))
    costs = trace["costs"]
    table.add_row("costs", ", ".join(f"{k}={v}" for k, v in costs.items()))
    implied = sum(1 for e in trace["events"] if e.get("implied"))
    if implied:
        table.add_row(escape("[implied]"), f"{implied} decision(s) the converter inferred from the run's structure (a spawn "
                      "or a stop no hook recorded); the dataset views flag them (implied: true)")
    if trace.get("rewards"):
        table.add_row("rewards", ", ".join(f"{k}={v}" for k, v in trace["rewards"].items()))
    else:
        table.add_row("rewards", "none: emit them with orch_otel.reward() or join an outcomes file with "
                      "`orch-otel dataset --outcomes`; until then the rows' reward is null")
    return table
