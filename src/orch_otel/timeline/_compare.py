"""Two traces side by side: an original and a branch of it (a replay fork),
rows aligned at the fork, the first difference marked."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from ._events import describe
from ._layout import layout
from ._render import LEGEND, data_block, page, pane, summary

LEGEND_NOTE = "Rows are aligned at the fork; the first difference is highlighted in both."


def event_key(event: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two events the same step: who did what to whom (not ids, times or tokens)."""
    return (event.get("type"), event.get("agent"), event.get("instance"), event.get("decision"),
            tuple(str(t) for t in event.get("targets") or ()), event.get("tool"), event.get("to"))


@dataclass
class Alignment:
    offset_a: int  # blank rows above the original's events
    offset_b: int  # and above the branch's
    diff_a: int | None  # event index of the first difference in each, None when none (or past the end)
    diff_b: int | None
    fork_a: int | None  # the original's event the branch forked at
    fork_b: int | None  # the branch's forced decision


def align(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> Alignment:
    fork_b = next((i for i, e in enumerate(b) if isinstance(e.get("fork"), dict)), None)
    fork_a = None
    if fork_b is not None:
        source = str(b[fork_b]["fork"].get("event_id"))
        fork_a = next((i for i, e in enumerate(a) if str(e.get("id")) == source), None)
    off_a = off_b = 0
    if fork_a is not None and fork_b is not None:
        off_a, off_b = max(0, fork_b - fork_a), max(0, fork_a - fork_b)
    diff_a = diff_b = None
    row = max(off_a, off_b)
    while row - off_a < len(a) or row - off_b < len(b):
        i, j = row - off_a, row - off_b
        if i >= len(a) or j >= len(b) or event_key(a[i]) != event_key(b[j]):
            diff_a = i if i < len(a) else None
            diff_b = j if j < len(b) else None
            break
        row += 1
    return Alignment(off_a, off_b, diff_a, diff_b, fork_a, fork_b)


def _where(events: list[dict[str, Any]], index: int | None, pane_id: str) -> str:
    if index is None:
        return "(no event: the run had ended)"
    event = events[index]
    eid = escape(str(event.get("id")))
    return f'<a href="#{pane_id}-{eid}">{eid}</a> {escape(str(event.get("instance") or event.get("agent")))}: {describe(event)}'


def compare_page(a: dict[str, Any], b: dict[str, Any], contents_a: dict[str, str], contents_b: dict[str, str]) -> str:
    events_a, events_b = a.get("events") or [], b.get("events") or []
    shape_a = layout(events_a, a.get("edges") or [])
    shape_b = layout(events_b, b.get("edges") or [])
    how = align(events_a, events_b)
    rows = max(len(events_a) + how.offset_a, len(events_b) + how.offset_b)
    if how.fork_b is not None:
        fork = events_b[how.fork_b]["fork"]
        found = "" if how.fork_a is not None else " (not found in the original: rows not shifted)"
        aligned = (f'<p>Aligned at the fork: event {escape(str(fork.get("event_id")))} of trace '
                   f'{escape(str(fork.get("source_trace_id")))}{found}.</p>')
    else:
        aligned = "<p>No fork recorded in the branch: rows are aligned from the start.</p>"
    if how.diff_a is None and how.diff_b is None:
        diff = '<div class="diff-line">No difference in the orchestration steps.</div>'
    else:
        diff = (f'<div class="diff-line" id="first-diff"><b>First difference</b><br>original: {_where(events_a, how.diff_a, "a")}'
                f'<br>branch: {_where(events_b, how.diff_b, "b")}</div>')
    panes = (f'<div class="compare-grid"><div>{summary(a, shape_a, "a")}</div><div>{summary(b, shape_b, "b")}</div>'
             f'<div>{pane(a, shape_a, pane_id="a", offset=how.offset_a, rows=rows, marked=_one(how.diff_a))}</div>'
             f'<div>{pane(b, shape_b, pane_id="b", offset=how.offset_b, rows=rows, marked=_one(how.diff_b))}</div></div>')
    body = (f'<main class="compare"><h1>orch-otel: original (left) and branch (right)</h1>{aligned}{diff}'
            f'<p class="note">{LEGEND_NOTE}</p>{LEGEND}{panes}'
            f'{data_block(a, contents_a, "a")}{data_block(b, contents_b, "b")}</main>')
    return page(f"orch-otel compare: {a.get('task_id')}", body)


def _one(index: int | None) -> set[int]:
    return set() if index is None else {index}
