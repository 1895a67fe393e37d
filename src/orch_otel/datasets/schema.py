"""Column types of each view, for the Arrow formats (Parquet, HF datasets).

Free-form values (contexts, captured content, rewards maps, tool calls) are
``json`` columns: Arrow's JSON extension type, which ``datasets`` reads back
as Python objects (its ``Json`` feature). Everything else is typed so that
filters and joins work without parsing. JSONL rows carry the same values.
"""

from __future__ import annotations

from typing import Any

from .analysis import Config

# kind names: str, float, int, bool, json, strs / ints / floats (lists), action, messages
_BASE = [("trace_id", "str"), ("task_id", "str"), ("system", "str"), ("topology", "str")]

COLUMNS: dict[str, list[tuple[str, str]]] = {
    "traces": [
        ("trace_id", "str"), ("task_id", "str"), ("system", "str"), ("topology", "str"),
        ("events", "json"), ("edges", "json"), ("rewards", "json"), ("costs", "json"), ("metrics", "json"),
    ],
    "decisions": _BASE + [
        ("event_id", "str"), ("decision", "str"), ("agent", "str"), ("role", "str"), ("t", "float"),
        ("implied", "bool"), ("status", "str"), ("action", "action"), ("forced", "bool"), ("options", "strs"),
        ("content_ref", "str"), ("content", "json"), ("context", "json"),
        ("reward", "float"), ("rewards", "json"), ("credit_unit", "str"),
    ],
    "turns": _BASE + [
        ("event_id", "str"), ("agent", "str"), ("role", "str"), ("model", "str"), ("provider", "str"),
        ("t", "float"), ("duration_s", "float"), ("status", "str"), ("episode", "int"), ("turn_index", "int"),
        ("input_ref", "str"), ("output_ref", "str"), ("input_messages", "json"), ("output", "str"),
        ("output_tool_calls", "json"), ("tool_calls", "json"), ("input_tokens", "int"),
        ("output_tokens", "int"), ("instance", "str"), ("decisions", "strs"), ("tokens_ref", "str"),
        ("prompt_token_ids", "ints"), ("response_token_ids", "ints"), ("response_logprobs", "floats"),
        ("reward", "float"), ("rewards", "json"), ("credit_unit", "str"), ("tools", "json"),
    ],
    "chat": _BASE + [
        ("agent", "str"), ("role", "str"), ("episode", "int"), ("segment", "int"), ("event_ids", "strs"),
        ("messages", "json"), ("prompt", "json"), ("completion", "json"), ("tools", "json"),
        ("replies_not_shown", "int"), ("reward", "float"), ("credit_unit", "str"),
    ],
    "triplets": [("prompt", "json"), ("response", "json"), ("reward", "float"), ("metadata", "json")],
    "groups": [
        ("group_id", "str"), ("source_trace_id", "str"), ("fork_event_id", "str"), ("decision", "str"),
        ("agent", "str"), ("role", "str"), ("options", "strs"), ("option", "strs"), ("recorded", "strs"),
        ("context", "json"), ("prompt", "json"), ("tools", "json"), *_BASE, ("reward", "float"), ("rewards", "json"),
        ("group_size", "int"), ("group_mean", "float"), ("group_std", "float"), ("advantage", "float"),
        ("advantage_normalized", "float"),
    ],
    "preferences": [
        ("prompt", "json"), ("chosen", "json"), ("rejected", "json"), ("tools", "json"), ("group_id", "str"),
        ("source_trace_id", "str"), ("fork_event_id", "str"), ("decision", "str"), ("agent", "str"),
        ("task_id", "str"), ("chosen_trace_id", "str"), ("rejected_trace_id", "str"), ("chosen_option", "strs"),
        ("rejected_option", "strs"), ("chosen_reward", "float"), ("rejected_reward", "float"),
    ],
}


# triplets with Config.trajectories: merged samples (datasets/lightning.py)
TRAJECTORY_COLUMNS = [("prompt_ids", "ints"), ("response_ids", "ints"), ("response_mask", "ints"),
                      ("response_logprobs", "floats"), ("reward", "float"), ("metadata", "json")]


def columns(config: Config) -> list[tuple[str, str]]:
    """All columns of the configured view, credit and outcome columns included."""
    if config.view == "triplets" and config.trajectories:
        return list(TRAJECTORY_COLUMNS)
    cols = list(COLUMNS[config.view])
    if config.view in ("decisions", "turns", "chat"):
        cols += [(f"credit_{s}", "float") for s in config.strategies]
    if config.view == "turns":
        cols += [(f"token_credit_{s}", "float") for s in config.strategies]
    if config.view in ("decisions", "turns", "chat", "groups"):
        cols += [(f"outcome_{name}", "float") for name in config.outcome_fields]
    return cols


def arrow_schema(cols: list[tuple[str, str]]):
    import pyarrow as pa

    tool_call = pa.struct([
        ("id", pa.string()), ("type", pa.string()),
        ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
    ])
    kinds: dict[str, Any] = {
        "str": pa.string(),
        "float": pa.float64(),
        "int": pa.int64(),
        "bool": pa.bool_(),
        "json": pa.json_(),
        "strs": pa.list_(pa.string()),
        "ints": pa.list_(pa.int64()),
        "floats": pa.list_(pa.float64()),
        "action": pa.struct([
            ("targets", pa.list_(pa.string())), ("fanout_size", pa.int64()), ("reason", pa.string()),
            ("sources", pa.list_(pa.string())), ("message_type", pa.string()),
        ]),
        "messages": pa.list_(pa.struct([
            ("role", pa.string()), ("content", pa.string()), ("name", pa.string()),
            ("tool_calls", pa.list_(tool_call)), ("tool_call_id", pa.string()),
            ("trainable", pa.bool_()), ("weight", pa.int64()),
        ])),
    }
    return pa.schema([(name, kinds[kind]) for name, kind in cols])
