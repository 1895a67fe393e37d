"""What one OpenInference or OpenLLMetry span of a LangChain / LangGraph run
says, read into one :class:`Seen`: both peers instrument LangChain's
callbacks and copy LangGraph's callback metadata, each in its own attributes.
The mapping rules that use these views are in :mod:`._langgraph`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..spans import SpanRecord
from ..vocabulary import Attr
from ._native import count


@dataclass
class Seen:
    """What one foreign span says, in LangGraph's terms."""

    kind: str = "chain"  # chain | llm | tool
    node: str | None = None
    step: int | None = None
    ns: str | None = None  # checkpoint namespace: "a:<id>|b:<id>"
    path: tuple[Any, ...] = ()
    triggers: tuple[str, ...] = ()
    model: str | None = None
    provider: str | None = None
    input_tokens: Any = None
    output_tokens: Any = None
    tool: str | None = None
    call_id: str | None = None
    asked: list[tuple[str, str]] = field(default_factory=list)  # an LLM's tool calls: (name, id)
    offered: list[str] = field(default_factory=list)  # the tools offered to an LLM
    goto: str | None = None  # a Command's destination, where the log records it
    input: Any = None  # content (kept only under the content policy)
    output: Any = None


View = Callable[[SpanRecord], Seen]


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def _fill_graph(seen: Seen, meta: Callable[[str], Any]) -> None:
    """``seen``'s graph position from LangGraph's callback metadata (``meta``: key -> value or None)."""
    node = meta("langgraph_node")
    seen.node = node if isinstance(node, str) else None
    seen.step = count(meta("langgraph_step"))
    ns = meta("langgraph_checkpoint_ns") or meta("checkpoint_ns")
    seen.ns = ns if isinstance(ns, str) and ns else None
    path, triggers = meta("langgraph_path"), meta("langgraph_triggers")
    seen.path = tuple(path) if isinstance(path, (list, tuple)) else ()
    seen.triggers = tuple(t for t in triggers if isinstance(t, str)) if isinstance(triggers, (list, tuple)) else ()
    model = meta("ls_model_name")
    if seen.model is None and isinstance(model, str):
        seen.model = model


_OI_KINDS = {"LLM": "llm", "TOOL": "tool"}
_OI_CALLS = "llm.output_messages.0.message.tool_calls."


def openinference_view(span: SpanRecord) -> Seen:
    attrs = span.attributes
    seen = Seen(kind=_OI_KINDS.get(str(attrs.get("openinference.span.kind")), "chain"))
    seen.model = attrs.get("llm.model_name") if isinstance(attrs.get("llm.model_name"), str) else None
    seen.provider = attrs.get("llm.provider") if isinstance(attrs.get("llm.provider"), str) else None
    meta = _json(attrs.get("metadata"))
    if isinstance(meta, dict):
        _fill_graph(seen, meta.get)
    if seen.kind == "llm":
        seen.input_tokens = count(attrs.get("llm.token_count.prompt"))
        seen.output_tokens = count(attrs.get("llm.token_count.completion"))
        seen.asked = _oi_tool_calls(attrs)
        seen.offered = _oi_offered(attrs)
    elif seen.kind == "tool":
        seen.tool = attrs.get("tool.name") if isinstance(attrs.get("tool.name"), str) else None
        call_id = attrs.get("tool_call.id")
        seen.call_id = call_id if isinstance(call_id, str) else None
    seen.input, seen.output = attrs.get("input.value"), attrs.get("output.value")
    return seen


def _oi_tool_calls(attrs: Mapping[str, Any]) -> list[tuple[str, str]]:
    calls = []
    for i in range(64):
        name = attrs.get(f"{_OI_CALLS}{i}.tool_call.function.name")
        if name is None:
            break
        call_id = attrs.get(f"{_OI_CALLS}{i}.tool_call.id")
        if isinstance(name, str) and isinstance(call_id, str):
            calls.append((name, call_id))
    return calls


def _oi_offered(attrs: Mapping[str, Any]) -> list[str]:
    """The tools the model was offered, by name (``llm.tools.<i>.tool.json_schema``, from 0 on)."""
    names = []
    for i in range(64):
        schema = attrs.get(f"llm.tools.{i}.tool.json_schema")
        if schema is None:
            break
        name = _oi_tool_name(schema)
        if name:
            names.append(name)
    return names


def _oi_tool_name(schema: Any) -> str | None:
    data = _json(schema)
    if not isinstance(data, dict):
        return None
    function = data.get("function", data)
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else None


_TL_PROPS = "traceloop.association.properties."
_TL_KINDS = {"chat": "llm", "text_completion": "llm", "execute_tool": "tool"}


def openllmetry_view(span: SpanRecord) -> Seen:
    attrs = span.attributes
    op = attrs.get(Attr.OPERATION)
    seen = Seen(kind=_TL_KINDS.get(str(op), "chain"))

    def meta(key: str) -> Any:  # OpenLLMetry flattens the metadata into prefixed attributes
        return attrs.get(_TL_PROPS + key)

    model = attrs.get(Attr.RESPONSE_MODEL) or attrs.get(Attr.REQUEST_MODEL)
    seen.model = model if isinstance(model, str) and model != "unknown" else None
    provider = meta("ls_provider")
    seen.provider = provider if isinstance(provider, str) else None
    _fill_graph(seen, meta)
    if seen.kind == "llm":
        seen.input_tokens = count(attrs.get(Attr.INPUT_TOKENS))
        seen.output_tokens = count(attrs.get(Attr.OUTPUT_TOKENS))
        seen.asked = _tl_tool_calls(attrs.get(Attr.OUTPUT_MESSAGES))
        tools = _json(attrs.get(Attr.TOOL_DEFINITIONS))
        seen.offered = [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)] \
            if isinstance(tools, list) else []
        seen.input, seen.output = attrs.get(Attr.INPUT_MESSAGES), attrs.get(Attr.OUTPUT_MESSAGES)
    elif seen.kind == "tool":
        tool = attrs.get(Attr.TOOL_NAME)
        seen.tool = tool if isinstance(tool, str) else None
        call_id = attrs.get(Attr.TOOL_CALL_ID)
        seen.call_id = call_id if isinstance(call_id, str) else None
        seen.input, seen.output = attrs.get(Attr.TOOL_CALL_ARGUMENTS), attrs.get(Attr.TOOL_CALL_RESULT)
    elif op == "goto":
        goto = attrs.get("langgraph.command.goto_node")
        seen.goto = goto if isinstance(goto, str) else None
    return seen


def _tl_tool_calls(messages: Any) -> list[tuple[str, str]]:
    data = _json(messages)
    calls = []
    for msg in data if isinstance(data, list) else ():
        for part in msg.get("parts", ()) if isinstance(msg, dict) else ():
            if isinstance(part, dict) and part.get("type") == "tool_call":
                name, call_id = part.get("name"), part.get("id")
                if isinstance(name, str) and isinstance(call_id, str):
                    calls.append((name, call_id))
    return calls
