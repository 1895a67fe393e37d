"""The ``triplets`` view in agent-lightning's trainer shape (1.0.x): one row
per model call, ``prompt={"token_ids", "messages"}``, ``response={"token_ids",
"log_probs", "text", "tool_calls"}``, ``reward``, ``metadata`` (agent,
``rollout_id`` = the agent episode, ``token_source``: captured or
retokenized). agent-lightning's trainer (``RolloutAdapter.get_train_data_batch``)
reads ``prompt["token_ids"]``, ``response["token_ids"]`` and
``response["log_probs"]`` of each ``Triplet``.

With ``Config.trajectories`` an agent episode's consecutive calls whose
prompt ids extend the previous prompt + response ids are merged into one
sample (agent-lightning's ``trace_aggregator.level: trajectory`` rule):
``prompt_ids``, ``response_ids``, ``response_mask`` (0 on the inserted
context tokens), ``response_logprobs`` (0.0 there). These rows carry a mask,
so they are for trainers that read one (a verl agent loop); agent-lightning
itself merges its per-call triplets and would train every response token of
a merged row.
"""

from __future__ import annotations

from typing import Any

from ..tracefiles import ContentIndex
from .analysis import Config, Prepared, Turn, find_turns
from .tokenize import CallTokens, call_tokens
from .views import offered_tools, turn_rows


def reply_message(row: dict[str, Any]) -> dict[str, Any]:
    """A ``turns`` row's reply as an assistant message."""
    reply: dict[str, Any] = {"role": "assistant", "content": row["output"] or ""}
    if row["output_tool_calls"]:
        reply["tool_calls"] = row["output_tool_calls"]
    return reply


def tokenized_calls(p: Prepared, config: Config, store: ContentIndex, what: str, required: bool = True):
    """Each model call that replied, in trace order: ``(turn, turns row, offered tools, ids)``, the ids
    None when neither captured nor retokenized and not ``required`` (else :class:`~.tokenize.TokensMissing`).
    A call cut off before it replied (no output recorded) is left out: it has nothing to train."""
    turns = find_turns(p.events)
    rows = turn_rows(p, config, store, turns, need_content=True)
    out: list[tuple[Turn, dict[str, Any], list[dict[str, Any]], CallTokens | None]] = []
    for turn, row in zip(turns, rows):
        if row["output"] is None and not row["output_tool_calls"]:
            continue
        tools = offered_tools(store, p.events[turn.index].get("tools_ref"))
        tokens = call_tokens(row, reply_message(row), tools, config.tokenizer, what, p.trace["trace_id"], required)
        out.append((turn, row, tools, tokens))
    return out


def rollout_id(trace_id: str, agent: str, episode: int) -> str:
    return f"{trace_id}/{agent}/{episode}"


def _metadata(p: Prepared, config: Config, row: dict[str, Any], tools: list[dict[str, Any]],
              tokens: CallTokens) -> dict[str, Any]:
    metadata = {
        "rollout_id": rollout_id(row["trace_id"], row["agent"], row["episode"]),
        "agent_name": row["agent"],
        "role": row["role"],
        "model": row["model"],
        "trace_id": row["trace_id"],
        "task_id": row["task_id"],
        "event_id": row["event_id"],
        "episode": row["episode"],
        "turn_index": row["turn_index"],
        "token_source": tokens.source,
        "tokenizer": config.tokenizer if tokens.source == "retokenized" else None,
        "tools": tools,
        "tool_calls": row["tool_calls"],
        **{f"credit_{s}": row[f"credit_{s}"] for s in config.strategies},
        **p.outcome_columns,
    }
    return {k: v for k, v in metadata.items() if v is not None}


def triplet_rows(p: Prepared, config: Config, store: ContentIndex) -> list[dict[str, Any]]:
    calls = tokenized_calls(p, config, store, "triplets view (agent-lightning's trainer reads token ids)")
    if config.trajectories:
        return trajectory_rows(p, config, calls)
    return [{
        "prompt": {"token_ids": tokens.prompt_ids, "messages": row["input_messages"] or []},
        "response": {"token_ids": tokens.response_ids, "log_probs": tokens.log_probs, "text": row["output"] or "",
                     "tool_calls": row["output_tool_calls"]},
        "reward": p.reward,
        "metadata": _metadata(p, config, row, tools, tokens),
    } for _, row, tools, tokens in calls]


class _Sample:
    """An exact-prefix merge in progress: the first call's prompt, then
    responses and the context inserted between them."""

    def __init__(self, row: dict[str, Any], tools: list[dict[str, Any]], tokens: CallTokens) -> None:
        self.first, self.tools, self.source = row, tools, tokens.source
        self.prompt = list(tokens.prompt_ids)
        self.response = list(tokens.response_ids)
        self.mask = [1] * len(tokens.response_ids)
        self.log_probs: list[float] | None = list(tokens.log_probs) if tokens.log_probs is not None else None
        self.context = tokens.prompt_ids + tokens.response_ids
        self.event_ids = [row["event_id"]]

    def extend(self, row: dict[str, Any], tokens: CallTokens) -> bool:
        """Take the next call if its prompt starts with everything so far."""
        prompt = tokens.prompt_ids
        if prompt[:len(self.context)] != self.context:
            return False
        inserted = prompt[len(self.context):]
        self.response += inserted + tokens.response_ids
        self.mask += [0] * len(inserted) + [1] * len(tokens.response_ids)
        if self.log_probs is not None and tokens.log_probs is not None:
            self.log_probs += [0.0] * len(inserted) + tokens.log_probs
        else:
            self.log_probs = None
        self.context = prompt + tokens.response_ids
        self.event_ids.append(row["event_id"])
        if tokens.source != self.source:
            self.source = "mixed"
        return True


def trajectory_rows(p: Prepared, config: Config, calls) -> list[dict[str, Any]]:
    """Per agent episode, its calls merged while each prompt extends the sample so far."""
    samples: list[_Sample] = []
    open_: dict[str, _Sample] = {}
    for _, row, tools, tokens in calls:
        key = rollout_id(row["trace_id"], row["agent"], row["episode"])
        current = open_.get(key)
        if current is None or not current.extend(row, tokens):
            open_[key] = current = _Sample(row, tools, tokens)
            samples.append(current)
    out = []
    for s in samples:
        row = s.first
        metadata = {**_metadata(p, config, row, s.tools, CallTokens([], [], None, s.source)), "event_ids": s.event_ids}
        metadata.pop("tool_calls", None)
        out.append({"prompt_ids": s.prompt, "response_ids": s.response, "response_mask": s.mask,
                    "response_logprobs": s.log_probs, "reward": p.reward, "metadata": metadata})
    return out
