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
    arrow = f" -> {event['to']}" if event.get("to") else ""
    return f"{who}: {kind}{arrow}"


def tree(trace: dict[str, Any]) -> Tree:
    """Events nested under the agent that acted, agents under whoever spawned them."""
    root = Tree(f"[bold]trace {trace['trace_id']}[/bold]  task={trace['task_id']}")
    nodes: dict[str, Tree] = {}

    def node_for(agent: str, parent: str | None = None) -> Tree:
        if agent not in nodes:
            under = nodes.get(parent, root) if parent else root
            nodes[agent] = under.add(f"[bold cyan]{agent}[/bold cyan]")
        return nodes[agent]

    for event in trace["events"]:
        owner = event["to"] if event["type"] == EventKind.TOOL_RESULT.value else event["agent"]
        style = _STYLE.get(event.get("status", "ok"), "")
        label = f"[dim]{event['t']:.3f}s[/dim] {event['id']} {escape(describe(event))}"
        node_for(owner).add(f"[{style}]{label}[/{style}]" if style else label)
        if event["type"] == EventKind.SPAWN.value:
            node_for(event["to"], event["agent"])
    return root


def summary(trace: dict[str, Any]) -> Table:
    table = Table(title=f"trace {trace['trace_id']} (task {trace['task_id']})", show_header=True)
    table.add_column("what")
    table.add_column("value")
    kinds = Counter(e["type"] for e in trace["events"])
    table.add_row("events", ", ".join(f"{k}={n}" for k, n in sorted(kinds.items())))
    decisions = Counter(e["decision"] for e in trace["events"] if e.get("decision"))
    table.add_row("decisions", ", ".join(f"{k}={decisions[k.value]}" for k in DecisionKind if decisions[k.value]))
    stops = [e.get("reason", "?") for e in trace["events"] if e.get("decision") == DecisionKind.STOP.value]
    table.add_row("stop reason", ", ".join(stops))
    costs = trace["costs"]
    table.add_row("costs", ", ".join(f"{k}={v}" for k, v in costs.items()))
    if trace.get("rewards"):
        table.add_row("rewards", ", ".join(f"{k}={v}" for k, v in trace["rewards"].items()))
    return table
