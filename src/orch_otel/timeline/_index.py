"""The index page of a file with many traces: one row per run, linking to its page."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from ._events import number
from ._render import page


def _stop(trace: dict[str, Any]) -> str:
    stops = [e for e in trace.get("events") or [] if e.get("decision") == "stop"]
    if not stops:
        return "none recorded"
    stop = stops[-1]
    forced = {True: " (forced)", False: ""}.get(stop.get("forced"), "")
    return escape(str(stop.get("reason", "?"))) + forced


def index_page(runs: Iterable[tuple[str, dict[str, Any]]], title: str = "orch-otel runs") -> str:
    """``runs``: (link, trace) pairs, in the order to list them."""
    rows = []
    count = 0
    for href, trace in runs:
        count += 1
        events = trace.get("events") or []
        rewards = trace.get("rewards") or {}
        reward = ", ".join(f"{escape(str(k))} = {number(v)}" for k, v in rewards.items()) or "none"
        errors = sum(1 for e in events if e.get("status") == "error")
        rows.append(
            f'<tr class="run-row"><td><a href="{escape(href, quote=True)}">{escape(str(trace.get("trace_id")))}</a></td>'
            f'<td>{escape(str(trace.get("task_id")))}</td><td>{escape(str(trace.get("system") or "?"))}</td>'
            f'<td>{escape(str(trace.get("topology") or "unknown"))}</td><td>{len(events)}</td>'
            f'<td>{number((trace.get("costs") or {}).get("tokens", 0))}</td><td>{_stop(trace)}</td><td>{reward}</td>'
            f"<td>{errors}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("trace", "task", "system", "topology", "events", "tokens", "stop reason",
                                                  "reward", "errors"))
    body = (f'<main class="index"><h1>orch-otel</h1><h2>{escape(title)}: {count} run(s)</h2>'
            f'<table class="index"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></main>')
    return page(title, body)
