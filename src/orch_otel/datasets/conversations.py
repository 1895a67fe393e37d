"""The ``chat`` view's rows: an agent episode's LLM calls as conversations a
trainer can learn from, each reply trained once, in the context its model saw.

A row holds consecutive calls of one episode whose prompts extend each other:
each call's prompt starts with the row so far (its earlier prompts and
replies), so the row is the last call's prompt and its reply, and every reply
in it was produced right after exactly the messages before it. A call whose
prompt does not extend the row (a selector or orchestrator sent a fresh
system message, a ``pre_model_hook`` trimmed the history) starts a new row
with its own prompt. A call cut off before it answered (no recorded output)
adds nothing.

Each row is also split for TRL's conversational prompt-completion format:
``prompt`` is the messages before the row's first reply, ``completion`` the
rest. Every assistant message in ``completion`` is a reply of this row, so
training on the assistant messages of ``completion`` trains exactly the
row's replies; an assistant message in ``prompt`` (the agent's own reply from
an earlier episode or row) is never trained here.
"""

from __future__ import annotations

from typing import Any

import orjson

TRAINABLE = {"trainable": True, "weight": 1}  # OpenAI fine-tuning reads weight; no trainer checked reads trainable (docs/datasets.md)
CONTEXT = {"trainable": False, "weight": 0}


def for_templates(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Messages as Hugging Face chat templates render them faithfully: tool
    calls carry ``arguments`` as a JSON object (a dict; text that is not a
    JSON object stays text; the raw text stays in the ``turns`` view's
    ``output_tool_calls``), and a user message from another speaker starts
    with the speaker (``planner: ...``), since many templates (Qwen's) drop
    ``name``. The human user's messages (no name, or ``user``) are left as
    they are."""
    if messages is None:
        return None
    out = []
    for m in messages:
        if m.get("tool_calls"):
            m = {**m, "tool_calls": [_call_with_dict(c) for c in m["tool_calls"]]}
        name = m.get("name")
        if m["role"] == "user" and name and name != "user":
            m = {**m, "content": f"{name}: {m['content']}"}
        out.append(m)
    return out


def _call_with_dict(call: dict[str, Any]) -> dict[str, Any]:
    arguments = call["function"]["arguments"]
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            arguments = parsed
    return {**call, "function": {**call["function"], "arguments": arguments}}


def _key(message: dict[str, Any]) -> tuple[Any, ...]:
    """What must match for a prompt message to be the row's message there."""
    calls = tuple((c["id"], c["function"]["name"]) for c in message.get("tool_calls") or ())
    return (message["role"], message["content"], calls, message.get("tool_call_id"))


def extends(row: list[dict[str, Any]], prompt: list[dict[str, Any]]) -> bool:
    """Whether ``prompt`` starts with every message of ``row``."""
    return len(prompt) >= len(row) and all(_key(a) == _key(b) for a, b in zip(row, prompt))


def as_context(message: dict[str, Any]) -> dict[str, Any]:
    """A prompt message: an assistant one (the agent's own earlier reply) is
    context here, trained in the row that produced it."""
    return {**message, **CONTEXT} if message["role"] == "assistant" else message


def split_episode(calls: list[tuple[list[dict[str, Any]], dict[str, Any]]]) -> list[list[int]]:
    """The episode's calls (prompt, reply) grouped into rows: the indexes of
    the calls of each row, a new row whenever a prompt does not extend the
    row so far, or would bring an assistant message that is not a reply of
    the row after the row's first reply."""
    rows: list[list[int]] = []
    current: list[dict[str, Any]] | None = None
    for i, (prompt, reply) in enumerate(calls):
        if current is not None and extends(current, prompt) and not any(
                m["role"] == "assistant" for m in prompt[len(current):]):
            current = prompt + [reply]
            rows[-1].append(i)
        else:
            current = prompt + [reply]
            rows.append([i])
    return rows


def row_messages(calls: list[tuple[list[dict[str, Any]], dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row's messages: the first call's prompt, its reply, then for each
    later call the new part of its prompt and its reply."""
    messages: list[dict[str, Any]] = []
    for prompt, reply in calls:
        messages.extend(as_context(m) for m in prompt[len(messages):])
        messages.append({**reply, **TRAINABLE})
    return messages


def prompt_and_completion(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages before the first trainable reply, and the rest."""
    first = next((i for i, m in enumerate(messages) if m.get("trainable")), len(messages))
    return messages[:first], messages[first:]
