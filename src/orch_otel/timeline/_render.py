"""One trace as HTML: the summary header and the timeline pane (lanes, bars,
arrows, one row per event), plus the page around them with the inline CSS and
JS. Everything from the trace is escaped; the details the page shows on a
click come from a JSON block the script reads with textContent only."""

from __future__ import annotations

from collections.abc import Callable, Collection
from html import escape
from importlib import resources
from typing import Any

import orjson

from ..vocabulary import EventKind
from ._events import describe, label, mark_kind, number, seconds
from ._layout import Layout, layout

ROW = 26  # px per event row (the CSS uses the same)
WIDE, NARROW = 96, 40  # px per lane; narrow past MANY_LANES, with the labels turned upright
MANY_LANES = 10
_KNOWN_COSTS = ("tokens", "wall_clock_s", "tool_calls", "messages")

ContentLookup = Callable[[str], "str | None"]


def asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def json_block(value: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can end the element or open a comment."""
    raw = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    return raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def captured(events: list[dict[str, Any]], lookup: ContentLookup | None) -> dict[str, str]:
    """ref -> text for the refs of these events that resolve in the content store; nothing else."""
    found: dict[str, str] = {}
    if lookup is None:
        return found
    for event in events:
        for key, ref in event.items():
            if key.endswith("_ref") and isinstance(ref, str) and ref not in found:
                text = lookup(ref)
                if isinstance(text, str):
                    found[ref] = text
    return found


def _stop(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    stops = [e for e in events if e.get("type") == EventKind.ORCHESTRATOR_DECISION.value and e.get("decision") == "stop"]
    return stops[-1] if stops else None


def summary(trace: dict[str, Any], shape: Layout, pane: str = "a") -> str:
    events = trace.get("events") or []
    metrics = trace.get("metrics") or {}
    costs = trace.get("costs") or {}
    agents = metrics.get("agents", len({lane.agent for lane in shape.lanes}))
    depth = metrics.get("max_depth", 1 + max((lane.depth for lane in shape.lanes), default=0))
    stats = [
        ("agents", number(agents)), ("instances", number(len(shape.lanes))), ("depth", number(depth)),
        ("max fan-out", number(metrics.get("max_fanout", 0))), ("events", number(len(events))),
        ("LLM calls", number(metrics.get("llm_calls", sum(1 for e in events if mark_kind(e)[0] == "llm")))),
        ("tool calls", number(costs.get("tool_calls", sum(1 for e in events if e.get("type") == "tool_call")))),
        ("tokens", number(costs.get("tokens", 0))), ("wall clock", seconds(costs.get("wall_clock_s"))),
    ]
    stats += [(str(k), number(v)) for k, v in costs.items() if k not in _KNOWN_COSTS]
    errors = [e for e in events if e.get("status") == "error"]
    stats.append(("errors", number(len(errors))))
    cells = "".join(f'<div class="stat"><dt>{escape(k)}</dt><dd>{v}</dd></div>' for k, v in stats)
    stop = _stop(events)
    if stop is not None:
        forced = "forced" if stop.get("forced") is True else "chosen" if stop.get("forced") is False else ""
        stop_html = (f'<p class="stop-line">Stopped: <a href="#{pane}-{escape(str(stop.get("id")))}" class="reason">'
                     f'{escape(str(stop.get("reason", "?")))}</a> {forced} by {escape(str(stop.get("instance") or stop.get("agent")))}'
                     + (f" ({escape(str(stop['source']))})" if stop.get("source") else "") + "</p>")
    else:
        stop_html = '<p class="stop-line">No stop recorded.</p>'
    if errors:
        stop_html += '<p class="error-line">Errors: ' + ", ".join(
            f'<a href="#{pane}-{escape(str(e.get("id")))}">{escape(str(e.get("id")))} ({escape(str(e.get("agent")))})</a>'
            for e in errors[:20]) + (" ..." if len(errors) > 20 else "") + "</p>"
    forks = [e["fork"] for e in events if isinstance(e.get("fork"), dict)]
    for fork in forks[:1]:
        stop_html += (f'<p class="fork-line">Replay fork of trace {escape(str(fork.get("source_trace_id")))} at event '
                      f'{escape(str(fork.get("event_id")))} ({escape(str(fork.get("decision")))})</p>')
    pairs = [("rewards", trace.get("rewards") or {}), ("metrics", metrics)]
    lists = "".join(
        f'<div class="kv"><h3>{name}</h3>' + ("".join(f"<span>{escape(str(k))} = {number(v)}</span>" for k, v in values.items())
                                             or "<span>none</span>") + "</div>"
        for name, values in pairs)
    return (f'<header class="summary"><h2>task {escape(str(trace.get("task_id")))}</h2>'
            f'<p class="ids">trace {escape(str(trace.get("trace_id")))} \u00b7 {escape(str(trace.get("system") or "?"))} \u00b7 '
            f'topology <b class="topology">{escape(str(trace.get("topology") or "unknown"))}</b></p>'
            f'<dl class="stats">{cells}</dl>{stop_html}{lists}</header>')


def _svg(shape: Layout, rows: int, width: int, lane_w: int, offset: int) -> str:
    height = rows * ROW
    parts = [f'<svg class="tl-svg" width="{width}" height="{height}" aria-hidden="true">'
             '<defs>' + "".join(
                 f'<marker id="ar-{k}" class="ar-{k}" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" '
                 f'orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z"/></marker>'
                 for k in ("spawn", "causal", "return", "aggregate", "message")) + "</defs>"]
    for lane in shape.lanes:
        x = lane.index * lane_w
        if lane.index % 2:
            parts.append(f'<rect class="stripe" x="{x}" y="0" width="{lane_w}" height="{height}"/>')
        mid = x + lane_w // 2
        y0, y1 = (lane.first_row + offset) * ROW + 4, (lane.last_row + offset + 1) * ROW - 4
        parts.append(f'<rect class="bar depth{min(lane.depth, 4)}" x="{mid - 7}" y="{y0}" width="14" height="{max(y1 - y0, 8)}" rx="4"/>')
    for arrow in shape.arrows:
        xs, xd = arrow.src_lane * lane_w + lane_w // 2, arrow.dst_lane * lane_w + lane_w // 2
        ys, yd = (arrow.src_row + offset) * ROW + ROW // 2, (arrow.dst_row + offset) * ROW + ROW // 2
        xd += -10 if xd > xs else 10  # end at the mark's edge
        xm = (xs + xd) // 2
        parts.append(f'<path class="arrow a-{arrow.kind}" d="M{xs},{ys} C{xm},{ys} {xm},{yd} {xd},{yd}" '
                     f'marker-end="url(#ar-{arrow.kind})"/>')
    parts.append("</svg>")
    return "".join(parts)


def pane(trace: dict[str, Any], shape: Layout, *, pane_id: str = "a", offset: int = 0, rows: int | None = None,
         marked: Collection[int] = ()) -> str:
    """The timeline: lane labels, then one row per event (``offset`` blank rows first, to align two panes)."""
    events = trace.get("events") or []
    lanes = shape.lanes
    narrow = len(lanes) > MANY_LANES
    lane_w = NARROW if narrow else WIDE
    width = max(len(lanes), 1) * lane_w
    total = max(rows or 0, len(events) + offset)
    labels = "".join(
        f'<div class="lane-label" data-lane="{lane.index}" style="left:{lane.index * lane_w}px;width:{lane_w}px" '
        f'title="{escape(lane.key)}{" (" + escape(str(lane.role)) + ")" if lane.role else ""}">'
        f'{escape(lane.key)}</div>'
        for lane in lanes)
    out = [f'<section class="pane{" narrow" if narrow else ""}" data-pane="{pane_id}" style="--lanes-w:{width}px">',
           f'<div class="tl-head"><div class="lane-labels" role="list" aria-label="lanes, one per agent instance">{labels}</div>'
           '<div class="txt-head"><span class="time">time</span><span class="who">instance</span><span>event</span></div></div>',
           '<div class="tl-body">', _svg(shape, total, width, lane_w, offset)]
    out.extend('<div class="pad"></div>' for _ in range(offset))
    for row, event in enumerate(events):
        kind, code = mark_kind(event)
        lane = shape.lane_of_row[row]
        classes = f"ev ev-{escape(str(event.get('type')))} k-{kind}"
        if event.get("status") == "error":
            classes += " err"
        if row in marked:
            classes += " first-diff"
        if isinstance(event.get("fork"), dict):
            classes += " forked"
        eid = escape(str(event.get("id")))
        out.append(
            f'<div class="{classes}" id="{pane_id}-{eid}" data-id="{eid}" data-row="{row}" data-lane="{lane}" '
            f'tabindex="0" role="button" aria-label="{escape(label(event))}">'
            f'<span class="lanes"><span class="mk mk-{kind}" style="left:{lane * lane_w + lane_w // 2 - 10}px">{code}</span></span>'
            f'<span class="time">{seconds(event.get("t"))}</span><span class="who">{escape(lanes[lane].key)}</span>'
            f'<span class="what">{describe(event)}</span></div>')
    out.extend('<div class="pad"></div>' for _ in range(total - len(events) - offset))
    out.append("</div></section>")
    return "".join(out)


def data_block(trace: dict[str, Any], contents: dict[str, str], pane_id: str) -> str:
    payload = {"trace_id": trace.get("trace_id"), "events": trace.get("events") or [], "edges": trace.get("edges") or [],
               "contents": contents}
    return f'<script type="application/json" class="orch-data" data-pane="{pane_id}">{json_block(payload)}</script>'


LEGEND = ('<div class="legend" aria-label="legend">'
          + "".join(f'<span><span class="mk mk-{k}">{c}</span> {w}</span>' for k, c, w in (
              ("delegate", "D", "decision"), ("fanout", "F", "fan-out"), ("stop", "X", "stop"), ("spawn", "S", "spawn"),
              ("return", "R", "return"), ("llm", "L", "LLM call"), ("msg", "M", "message"), ("tool", "T", "tool call"),
              ("result", "t", "tool result"), ("aggregate", "A", "aggregate"), ("human", "H", "human input")))
          + "".join(f'<span><span class="swatch a-{k}"></span> {w}</span>' for k, w in (
              ("spawn", "spawn"), ("causal", "delegation / handoff"), ("return", "return"), ("message", "message"),
              ("aggregate", "fan-in")))
          + "</div>")


def page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{asset('timeline.css')}</style></head><body>"
            f"{body}"
            '<aside id="details" hidden aria-live="polite"><button type="button" id="details-close" aria-label="close details">'
            '\u00d7</button><div id="details-body"></div></aside>'
            f"<script>{asset('timeline.js')}</script></body></html>\n")


def trace_page(trace: dict[str, Any], contents: dict[str, str]) -> str:
    shape = layout(trace.get("events") or [], trace.get("edges") or [])
    body = (f'<main class="run"><h1>orch-otel run</h1>{summary(trace, shape)}{LEGEND}'
            f'{pane(trace, shape)}{data_block(trace, contents, "a")}</main>')
    return page(f"orch-otel: {trace.get('task_id')}", body)
