"""Agent Framework messages, replies and tools as the chat datasets read them:
``{role, content[, name][, tool_calls][, tool_call_id]}`` messages (the shape
the LangGraph and AutoGen integrations record) and tools in the OpenAI
function format. Used only while content is captured."""

from __future__ import annotations

import json
from typing import Any

from ...vocabulary import function_tool
from ._state import telemetry_failed


def _arguments(arguments: Any) -> str:
    """A call's arguments as the JSON text the model wrote (a dict is serialized)."""
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments if arguments is not None else {})
    except (TypeError, ValueError):
        return str(arguments)


def _result_text(result: Any) -> Any:
    if result is None or isinstance(result, (str, int, float, bool)):
        return result
    text = getattr(result, "text", None)
    return text if isinstance(text, str) else str(result)


def message_view(message: Any) -> list[dict[str, Any]]:
    """One framework ``Message`` as chat messages: a tool message per function
    result (with the call id it answers), an assistant message with
    ``tool_calls`` for function calls, else ``{role, content}``."""
    role = str(getattr(message, "role", "user"))
    contents = list(getattr(message, "contents", None) or ())
    results = [c for c in contents if getattr(c, "type", None) == "function_result"]
    if results:
        return [{"role": "tool", "content": _result_text(c.result), "tool_call_id": c.call_id} for c in results]
    view: dict[str, Any] = {"role": role, "content": getattr(message, "text", "") or ""}
    author = getattr(message, "author_name", None)
    if author:
        view["name"] = author
    calls = [c for c in contents if getattr(c, "type", None) == "function_call"]
    if calls:
        # the form the AutoGen integration records (a replay's fork rewrites it the same way)
        view["tool_calls"] = [{"id": c.call_id, "name": c.name, "arguments": _arguments(c.arguments)} for c in calls]
    return [view]


def messages_view(messages: Any) -> Any:
    if messages is None:
        return None
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if not isinstance(messages, (list, tuple)):
        messages = [messages]
    out: list[Any] = []
    for message in messages:
        if isinstance(message, str):
            out.append({"role": "user", "content": message})
            continue
        try:
            out.extend(message_view(message))
        except Exception:  # a message of an unexpected shape: recorded as its text
            telemetry_failed("message view")
            out.append({"role": "user", "content": str(getattr(message, "text", ""))})
    return out


def response_view(response: Any) -> Any:
    """A ``ChatResponse``'s messages as one assistant message (text and tool calls)."""
    views = messages_view(list(getattr(response, "messages", None) or ()))
    if not views:
        return None
    if len(views) == 1:
        return views[0]
    merged: dict[str, Any] = {"role": "assistant", "content": "".join(v.get("content") or "" for v in views)}
    calls = [c for v in views for c in v.get("tool_calls") or ()]
    if calls:
        merged["tool_calls"] = calls
    return merged


def tool_definitions(tools: Any) -> list[dict[str, Any]] | None:
    """The function tools offered to the model, in the OpenAI function format."""
    out = []
    for tool in tools or ():
        name = getattr(tool, "name", None)
        if not name:
            continue
        try:
            parameters = tool.parameters() if callable(getattr(tool, "parameters", None)) else None
        except Exception:
            parameters = None
        out.append(function_tool(str(name), getattr(tool, "description", "") or "", parameters))
    return out or None
