"""Normalising captured LLM content into chat messages ``{role, content}``.

Recorded content is whatever the app or integration passed: a string, a list
of strings, OpenAI-style messages, LangChain message dicts (``type``: human /
ai / system / tool), GenAI-convention messages with ``parts``, or AutoGen
messages with ``source``. Every shape becomes a list of messages whose role is
one of system, user, assistant, tool and whose content is a string; assistant
tool calls are kept in OpenAI form (``tool_calls``: ``{id, type, function:
{name, arguments}}``, arguments as JSON text).
"""

from __future__ import annotations

from typing import Any

import orjson

ROLES = ("system", "user", "assistant", "tool")
_ROLE_ALIASES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}
_TYPE_ROLES = {  # AutoGen / LangChain class-ish type names
    "SystemMessage": "system",
    "UserMessage": "user",
    "HumanMessage": "user",
    "AssistantMessage": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "FunctionExecutionResultMessage": "tool",
    "ToolMessage": "tool",
}


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def text_of(content: Any) -> str:
    """A content value as plain text (text parts joined; other values as JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", None) and isinstance(
                part.get("text", part.get("content")), str
            ):
                texts.append(part.get("text", part.get("content")))
            elif isinstance(part, dict) and part.get("type") in ("tool_call", "function_call", "tool_call_response"):
                continue  # carried as tool_calls / tool messages
            else:
                texts.append(_json(part))
        return "\n".join(texts)
    return _json(content)


def _role(message: dict[str, Any]) -> str:
    role = message.get("role") or message.get("type")
    if isinstance(role, str):
        if role in _TYPE_ROLES:
            return _TYPE_ROLES[role]
        if role.lower() in _ROLE_ALIASES:
            return _ROLE_ALIASES[role.lower()]
    if message.get("source") == "user":
        return "user"
    return "user" if "source" not in message else "assistant"


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    raw = message.get("tool_calls")
    parts = message.get("parts") if isinstance(message.get("parts"), list) else []
    calls = []
    for call in list(raw or []) + [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call"]:
        if not isinstance(call, dict):
            continue
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        args = fn.get("arguments", fn.get("args", {}))
        calls.append({
            "id": str(call.get("id") or ""),
            "type": "function",
            "function": {"name": str(fn.get("name") or ""), "arguments": args if isinstance(args, str) else _json(args)},
        })
    return calls


def normalize_message(message: Any, default_role: str = "user") -> dict[str, Any]:
    if not isinstance(message, dict):
        return {"role": default_role, "content": text_of(message)}
    role = _role(message) if ("role" in message or "type" in message or "source" in message) else default_role
    content = message.get("content")
    if content is None and isinstance(message.get("parts"), list):
        content = message["parts"]
    out: dict[str, Any] = {"role": role, "content": text_of(content)}
    calls = _tool_calls(message)
    if calls and role == "assistant":
        out["tool_calls"] = calls
    call_id = message.get("tool_call_id") or message.get("call_id")
    if role == "tool" and call_id:
        out["tool_call_id"] = str(call_id)
    return out


def normalize_messages(value: Any, default_role: str = "user") -> list[dict[str, Any]]:
    """Captured input messages as a list of chat messages."""
    if value is None:
        return []
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        value = [value]
    return [normalize_message(m, default_role) for m in value]


def normalize_output(value: Any) -> dict[str, Any]:
    """Captured output as one assistant message (the last assistant message
    when several were returned)."""
    messages = normalize_messages(value, default_role="assistant")
    assistant = [m for m in messages if m["role"] == "assistant"] or messages
    if not assistant:
        return {"role": "assistant", "content": ""}
    last = dict(assistant[-1])
    last["role"] = "assistant"
    return last


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["role"] == b["role"] and a["content"] == b["content"]


def extend_conversation(conversation: list[dict[str, Any]], incoming: list[dict[str, Any]]) -> None:
    """Append the part of ``incoming`` (a turn's full input) that the
    conversation does not already end with: the suffix after their longest
    common prefix."""
    k = 0
    while k < len(conversation) and k < len(incoming) and _same(conversation[k], incoming[k]):
        k += 1
    conversation.extend(incoming[k:])
