"""Trainers' own formats: view rows as the rows verl's ``RLHFDataset`` reads
(``data_source``, ``prompt``, ``ability``, ``reward_model``, ``extra_info``);
OpenPipe ART's trajectory groups are made in :mod:`.art`. The writers
that use them are in :mod:`.writers`; docs/datasets.md says which trainer
reads which view.
"""

from __future__ import annotations

from typing import Any

import orjson

FITS = {  # the views each trainer format can hold: their rows start from a prompt
    "verl": ("chat", "turns", "groups"),  # triplets are token ids (agent-lightning): verl reads messages
    "art": ("chat",),
}
CONTENT_FORMATS = tuple(FITS)  # their rows are prompts and replies: content capture is needed
TRAINER_ROWS = ("art",)  # formats whose rows are made per trace by their own builder (datasets/art.py), not a view's
_MARKS = ("trainable", "weight")

# extra_info's fields per view (kind names of schema.py)
_COMMON = [("trace_id", "str"), ("task_id", "str"), ("agent", "str"), ("role", "str"), ("reward", "float")]
VERL_EXTRA: dict[str, list[tuple[str, str]]] = {
    "turns": _COMMON + [("event_id", "str"), ("episode", "int"), ("turn_index", "int")],
    "chat": _COMMON + [("episode", "int")],
    "groups": _COMMON + [("group_id", "str"), ("source_trace_id", "str"), ("fork_event_id", "str"), ("decision", "str"),
                         ("option", "strs"), ("recorded", "strs"), ("advantage", "float"),
                         ("advantage_normalized", "float")],
}


def _plain(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Chat messages without this project's trainable marks."""
    return [{k: v for k, v in m.items() if k not in _MARKS} for m in messages or []]


def _reply_text(text: str | None, tool_calls: list[dict[str, Any]] | None) -> str:
    """A reply as the ground truth: its text, or its tool calls (JSON) when it has only those."""
    if text or not tool_calls:
        return text or ""
    return orjson.dumps(tool_calls).decode()


def _verl_turn(row: dict[str, Any]) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    return _plain(row["input_messages"]), _reply_text(row["output"], row["output_tool_calls"]), row


def _verl_chat(row: dict[str, Any]) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """The episode's prompt is its conversation up to its first own reply; the ground truth its last reply."""
    messages = row["messages"]
    first = next((i for i, m in enumerate(messages) if m.get("trainable")), len(messages))
    replies = [m for m in messages if m.get("trainable")]
    last: dict[str, Any] = replies[-1] if replies else {"content": ""}
    return _plain(messages[:first]), _reply_text(last["content"], last.get("tool_calls")), row


def _verl_group(row: dict[str, Any]) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    return _plain(row["prompt"]), orjson.dumps(row["option"]).decode(), row


_VERL = {"turns": _verl_turn, "chat": _verl_chat, "groups": _verl_group}


def verl_rows(view: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One trace's view rows as verl rows."""
    out = []
    for row in rows:
        prompt, truth, info = _VERL[view](row)
        out.append({
            "data_source": f"orch_otel/{view}",
            "prompt": prompt,
            "ability": info.get("agent") or "",
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {name: info.get(name) for name, _ in VERL_EXTRA[view]},
        })
    return out


def verl_schema(view: str):
    """The Arrow schema of verl rows for ``view``: typed structs (verl and
    ``datasets`` read them as dicts and lists of dicts)."""
    import pyarrow as pa

    from .schema import arrow_schema

    tool_call = arrow_schema([("m", "messages")]).field("m").type.value_type.field("tool_calls").type
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("name", pa.string()),
                         ("tool_calls", tool_call), ("tool_call_id", pa.string())])
    extra = pa.struct(list(arrow_schema(VERL_EXTRA[view])))
    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(message)),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", extra),
    ])
