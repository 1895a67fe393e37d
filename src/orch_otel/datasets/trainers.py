"""Trainers' own formats: which views each takes, and view rows as OpenPipe
ART trajectories (``messages_and_choices``, ``tools``,
``additional_histories``, ``reward``, ``metrics``, ``metadata``); verl's rows
are made in :mod:`.verl`. The writers that use them are in :mod:`.writers`;
docs/datasets.md says which trainer reads which view.
"""

from __future__ import annotations

from typing import Any

FITS = {  # the views each trainer format can hold: their rows start from a prompt
    "verl": ("chat", "turns", "triplets", "groups"),
    "art": ("chat",),
}
CONTENT_FORMATS = tuple(FITS)  # their rows are prompts and replies: content capture is needed
_MARKS = ("trainable", "weight")


def _plain(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Chat messages without this project's trainable marks."""
    return [{k: v for k, v in m.items() if k not in _MARKS} for m in messages or []]


def _art_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This project's chat messages as ART's ``messages_and_choices``: a
    trainable reply is an OpenAI ``Choice``, every other message a message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("trainable"):
            message: dict[str, Any] = {"role": "assistant", "content": m["content"]}
            if m.get("tool_calls"):
                message["tool_calls"] = m["tool_calls"]
            out.append({"finish_reason": "tool_calls" if m.get("tool_calls") else "stop", "index": 0,
                        "logprobs": None, "message": message})
        else:
            out.extend(_plain([m]))
    return out


def art_trajectory(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One trace's ``chat`` rows as one ART trajectory: the first agent
    episode (in trace order) is the main history, every other episode (the
    sub-agents', and the first agent's later ones) an additional history."""
    if not rows:
        return None
    main = rows[0]
    outcomes = {k: v for k, v in main.items() if k.startswith("outcome_") and v is not None}
    trainable = sum(1 for r in rows for m in r["messages"] if m.get("trainable"))
    return {
        "messages_and_choices": _art_messages(main["messages"]),
        "tools": main["tools"],
        "additional_histories": [{"messages_and_choices": _art_messages(r["messages"]), "tools": r["tools"]}
                                 for r in rows[1:]],
        "reward": main["reward"] if main["reward"] is not None else 0.0,
        "metrics": {"episodes": len(rows), "trainable_turns": trainable, **outcomes},
        "metadata": {"trace_id": main["trace_id"], "task_id": main["task_id"], "system": main["system"],
                     "topology": main["topology"], "agent": main["agent"], "episode": main["episode"],
                     "reward_recorded": main["reward"] is not None},
    }
