"""verl's rows (``--format verl``): one Parquet file that verl 0.9's
``RLHFDataset`` reads (``data_source``, ``prompt``, ``ability``,
``reward_model``, ``extra_info``) and, for the ``chat`` view, its
``MultiTurnSFTDataset`` too (``messages``, ``tools``).

What verl's own code does with them (read in its source, run in
tests/test_trainers_verl.py):

- ``RLHFDataset`` loads the file with ``datasets``; its ``__getitem__`` takes
  ``extra_info.index`` (unique here), ``extra_info.tools_kwargs`` and
  ``interaction_kwargs``; the tool agent loop keeps, of the tools in its tool
  config, those named in ``extra_info.tool_selection``.
- ``MultiTurnSFTDataset`` reads the file with pandas and puts loss on every
  assistant message; it has no per-message mask. So an assistant message of
  the row that is not trained here (the agent's own reply from an earlier
  episode or row, ``trainable: false`` in ``chat``) is written as a ``user``
  message stating it (``[earlier reply of AGENT] ...``).
- pandas gives back typed Parquet columns only: ``tools`` is a list of typed
  structs (its type inferred from the whole file, so a tool lists, as null,
  the keys other tools of the file have and it does not; where two tools
  give one key values of different types, every tool's ``parameters`` is
  JSON text instead), and tool-call ``arguments`` stay JSON text (a typed dict column would give every call
  the argument names of every other call).
"""

from __future__ import annotations

from typing import Any

import orjson

from .conversations import for_templates

_MARKS = ("trainable", "weight")
_COMMON = [("index", "int"), ("trace_id", "str"), ("task_id", "str"), ("agent", "str"), ("role", "str"),
           ("reward", "float"), ("tool_selection", "strs"), ("tools_json", "str")]
EXTRA: dict[str, list[tuple[str, str]]] = {  # extra_info's fields per view (kind names of schema.py)
    "turns": _COMMON + [("event_id", "str"), ("episode", "int"), ("turn_index", "int")],
    "chat": _COMMON + [("episode", "int"), ("segment", "int")],
    "groups": _COMMON + [("group_id", "str"), ("source_trace_id", "str"), ("fork_event_id", "str"), ("decision", "str"),
                         ("option", "strs"), ("recorded", "strs"), ("advantage", "float"),
                         ("advantage_normalized", "float")],
}
SFT_VIEWS = ("chat",)  # whose verl rows also carry MultiTurnSFTDataset's messages and tools


def _text_arguments(call: dict[str, Any]) -> dict[str, Any]:
    arguments = call["function"]["arguments"]
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    return {**call, "function": {**call["function"], "arguments": arguments}}


def _plain(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Chat messages without this project's marks, tool-call arguments as JSON text."""
    out = []
    for m in messages or []:
        m = {k: v for k, v in m.items() if k not in _MARKS}
        if m.get("tool_calls"):
            m["tool_calls"] = [_text_arguments(c) for c in m["tool_calls"]]
        out.append(m)
    return out


def _reply_text(text: str | None, tool_calls: list[dict[str, Any]] | None) -> str:
    """A reply as the ground truth: its text, or its tool calls (JSON) when it has only those."""
    if text or not tool_calls:
        return text or ""
    return orjson.dumps([_text_arguments(c) for c in tool_calls]).decode()


def _sft_messages(messages: list[dict[str, Any]], agent: str) -> list[dict[str, Any]]:
    """The row for a trainer that trains every assistant message: an
    assistant message not trained here becomes a user message stating it."""
    out: list[dict[str, Any]] = []
    for m, original in zip(_plain(messages), messages):
        if m["role"] == "assistant" and not original.get("trainable"):
            lines = [m["content"]] if m["content"] else []
            lines += [f"[tool call {c['function']['name']}] {c['function']['arguments']}" for c in m.get("tool_calls") or ()]
            m = {"role": "user", "content": f"[earlier reply of {agent}]\n" + "\n".join(lines)}
        out.append(m)
    return out


def _turn(row: dict[str, Any]) -> tuple[list[dict[str, Any]], str, dict[str, Any], list[dict[str, Any]]]:
    return _plain(for_templates(row["input_messages"])), _reply_text(row["output"], row["output_tool_calls"]), row, row.get("tools") or []


def _chat(row: dict[str, Any]) -> tuple[list[dict[str, Any]], str, dict[str, Any], list[dict[str, Any]]]:
    """The row's prompt is its messages before its first reply; the ground truth its last reply."""
    replies = [m for m in row["completion"] if m.get("trainable")]
    last: dict[str, Any] = replies[-1] if replies else {"content": ""}
    return _plain(row["prompt"]), _reply_text(last["content"], last.get("tool_calls")), row, row["tools"]


def _group(row: dict[str, Any]) -> tuple[list[dict[str, Any]], str, dict[str, Any], list[dict[str, Any]]]:
    return _plain(row["prompt"]), orjson.dumps(row["option"]).decode(), row, row.get("tools") or []


_BY_VIEW = {"turns": _turn, "chat": _chat, "groups": _group}


def verl_rows(view: str, rows: list[dict[str, Any]], first_index: int = 0) -> list[dict[str, Any]]:
    """One trace's view rows as verl rows, numbered (``extra_info.index``) from ``first_index``."""
    out = []
    for n, row in enumerate(rows):
        prompt, truth, info, tools = _BY_VIEW[view](row)
        info = {**info, "index": first_index + n, "tool_selection": [t["function"]["name"] for t in tools],
                "tools_json": orjson.dumps(tools).decode()}
        verl = {
            "data_source": f"orch_otel/{view}",
            "prompt": prompt,
            "ability": info.get("agent") or "",
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {name: info.get(name) for name, _ in EXTRA[view]},
        }
        if view in SFT_VIEWS:
            verl["messages"] = _sft_messages(row["messages"], row["agent"])
            verl["tools"] = tools
        out.append(verl)
    return out


def tools_type(pa: Any, rows: list[dict[str, Any]]) -> Any:
    """The ``tools`` column's Arrow type for these verl rows: inferred from all
    their tools. When the tools' schemas disagree on a key's type (a
    ``default`` 0 here, "a" there), no one type holds them all: then each
    tool's ``parameters`` is turned into JSON text in the rows (in place) and
    the column typed for that."""
    tools = [row["tools"] for row in rows]
    if not tools:
        return None
    try:
        return pa.array(tools).type
    except (TypeError, ValueError, pa.ArrowException):
        for row in rows:
            row["tools"] = [{**t, "function": {**t["function"], "parameters": orjson.dumps(
                t["function"].get("parameters")).decode()}} for t in row["tools"]]
        return pa.array([row["tools"] for row in rows]).type


def message_type():
    import pyarrow as pa

    from .schema import arrow_schema

    tool_call = arrow_schema([("m", "messages")]).field("m").type.value_type.field("tool_calls").type
    return pa.struct([("role", pa.string()), ("content", pa.string()), ("name", pa.string()),
                      ("tool_calls", tool_call), ("tool_call_id", pa.string())])


def verl_schema(view: str, tools_type: Any = None):
    """The Arrow schema of verl rows for ``view``: typed structs (verl reads
    them as dicts and lists of dicts). ``tools_type``: the ``tools`` column's
    type, inferred from the file's rows (``chat`` only)."""
    import pyarrow as pa

    from .schema import arrow_schema

    fields = [
        ("data_source", pa.string()),
        ("prompt", pa.list_(message_type())),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct(list(arrow_schema(EXTRA[view])))),
    ]
    if view in SFT_VIEWS:
        fields += [("messages", pa.list_(message_type())), ("tools", tools_type or pa.list_(pa.null()))]
    return pa.schema(fields)
