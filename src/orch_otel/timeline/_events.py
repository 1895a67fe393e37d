"""What each event says in words (escaped HTML), and the short code on its mark."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from ..vocabulary import Channel, EventKind

_DECISION = EventKind.ORCHESTRATOR_DECISION.value


def seconds(value: Any) -> str:
    """0.0123 -> '12.3 ms'; 3.5 -> '3.50 s'."""
    if not isinstance(value, (int, float)):
        return ""
    if value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


def number(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.4g}"
    if isinstance(value, (int, float)):
        return f"{int(value):,}"
    return escape(str(value))


def mark_kind(event: dict[str, Any]) -> tuple[str, str]:
    """(css class, one-letter code) of an event's mark; the letter keeps the kinds apart without colour."""
    kind = event.get("type")
    if kind == _DECISION:
        decision = event.get("decision")
        if decision == "stop":
            return "stop", "X"
        if len(event.get("targets") or []) > 1:
            return "fanout", "F"
        return ("spawndec" if decision == "spawn" else "delegate"), "D"
    if kind == EventKind.MESSAGE.value:
        return ("llm", "L") if event.get("channel") == Channel.LLM.value else ("msg", "M")
    return {
        EventKind.SPAWN.value: ("spawn", "S"),
        EventKind.RETURN.value: ("return", "R"),
        EventKind.TOOL_CALL.value: ("tool", "T"),
        EventKind.TOOL_RESULT.value: ("result", "t"),
        EventKind.AGGREGATE.value: ("aggregate", "A"),
        EventKind.HUMAN_INTERVENTION.value: ("human", "H"),
    }.get(str(kind), ("other", "?"))


def _chips(options: Iterable[Any], chosen: set[str]) -> str:
    chips = []
    for option in options:
        name = str(option)
        if name in chosen:
            chips.append(f'<span class="opt chosen" title="chosen">{escape(name)} \u2713</span>')
        else:
            chips.append(f'<span class="opt">{escape(name)}</span>')
    return '<span class="opts">options: ' + " ".join(chips) + "</span>"


def _names(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(escape(str(v)) for v in value)
    return escape(str(value)) if value else ""


def _decision(event: dict[str, Any]) -> str:
    decision = str(event.get("decision", "?"))
    targets = [str(t) for t in event.get("targets") or []] or [t for t in str(event.get("to") or "").split(",") if t]
    if decision == "stop":
        forced = event.get("forced")
        how = " (forced)" if forced is True else " (chosen)" if forced is False else ""
        source = f" by {escape(str(event['source']))}" if event.get("source") else ""
        text = f'<b>stop</b>: <span class="reason">{escape(str(event.get("reason", "?")))}</span>{how}{source}'
        if event.get("awaiting"):
            text += f' <span class="note">awaiting approval of {_names(event["awaiting"])}</span>'
    else:
        fan = f" <b>fan-out \u00d7{len(targets)}</b>" if len(targets) > 1 else ""
        text = f"<b>decide {escape(decision)}</b> \u2192 {_names(targets)}{fan}"
    if event.get("options"):
        text += " " + _chips(event["options"], set(targets))
    if event.get("implied"):
        text += ' <span class="note">(implied)</span>'
    return text


def describe(event: dict[str, Any]) -> str:
    """One line of escaped HTML: what the event is, to whom, with its numbers."""
    kind = event.get("type")
    if kind == _DECISION:
        text = _decision(event)
    elif kind == EventKind.MESSAGE.value and event.get("channel") == Channel.LLM.value:
        tokens = f" \u00b7 {number(event.get('input_tokens') or 0)} in / {number(event.get('output_tokens') or 0)} out tokens"
        took = f" \u00b7 {seconds(event['duration_s'])}" if isinstance(event.get("duration_s"), (int, float)) else ""
        text = f"<b>LLM call</b> {escape(str(event.get('model') or event.get('to') or '?'))}{tokens}{took}"
    elif kind == EventKind.MESSAGE.value:
        recipients = event.get("recipients") or event.get("to")
        what = f" ({escape(str(event['message_type']))})" if event.get("message_type") else ""
        text = f"<b>message</b> \u2192 {_names(recipients)}{what}"
    elif kind == EventKind.SPAWN.value:
        branch = ""
        if isinstance(event.get("fanout_index"), int) and isinstance(event.get("fanout_size"), int):
            branch = f' <span class="note">branch {event["fanout_index"] + 1} of {event["fanout_size"]}</span>'
        text = f"<b>spawn</b> \u2192 {escape(str(event.get('to_instance') or event.get('to') or '?'))}{branch}"
    elif kind == EventKind.RETURN.value:
        outcome = f" ({escape(str(event['outcome']))})" if event.get("outcome") else ""
        text = f"<b>return</b> \u2192 {escape(str(event.get('to_instance') or event.get('to') or '?'))}{outcome}"
    elif kind in (EventKind.TOOL_CALL.value, EventKind.TOOL_RESULT.value):
        word = "tool call" if kind == EventKind.TOOL_CALL.value else "tool result"
        call = f' <span class="note">{escape(str(event["call_id"]))}</span>' if event.get("call_id") else ""
        text = f"<b>{word}</b> {escape(str(event.get('tool') or event.get('agent') or '?'))}{call}"
    elif kind == EventKind.AGGREGATE.value:
        sources = event.get("source_instances") or event.get("sources") or []
        fan = f" <b>fan-in \u00d7{len(sources)}</b>" if len(sources) > 1 else ""
        text = f"<b>aggregate</b>{fan} {_names(sources)}"
    elif kind == EventKind.HUMAN_INTERVENTION.value:
        resume = f" (resume of {escape(str(event['resume_of']))})" if event.get("resume_of") else ""
        text = f"<b>human input</b> \u2192 {escape(str(event.get('to') or '?'))}{resume}"
        decided = [f"{word} {_names(event[word])}" for word in ("approved", "rejected") if event.get(word)]
        if decided:
            text += f' <span class="note">{"; ".join(decided)}</span>'
    else:
        text = f"<b>{escape(str(kind))}</b>"
    if event.get("status") == "error":
        text = '<span class="err-tag">error</span> ' + text
    fork = event.get("fork")
    if isinstance(fork, dict):
        text += (f' <span class="fork-tag">forked: recorded {_names(fork.get("recorded"))}, '
                 f'forced {_names(fork.get("forced"))}</span>')
    return text


def label(event: dict[str, Any]) -> str:
    """Plain text for screen readers and tooltips (no HTML)."""
    kind, _ = mark_kind(event)
    to = event.get("to_instance") or event.get("to") or event.get("tool") or event.get("model") or ""
    return f"{event.get('id')}: {event.get('agent')} {kind}" + (f" to {to}" if to else "") + (
        " (error)" if event.get("status") == "error" else "")
