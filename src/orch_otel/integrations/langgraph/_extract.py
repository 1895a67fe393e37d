"""Cheap extractors for LangChain callback payloads: model names, token usage,
tool call ids, a light form of chat messages and of a run's input.

Each extractor reads a few attributes and never serialises a whole object (no
``model_dump``, no graph state), so its cost does not grow with the state.
Any extractor may fail on an unexpected payload; callers treat a failure as
"unknown" and keep the span.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.types import Command


def message_view(message: Any) -> dict[str, Any]:
    """``{role, content[, tool_calls][, tool_call_id]}`` of one LangChain message."""
    view: dict[str, Any] = {"role": getattr(message, "type", None) or type(message).__name__,
                            "content": getattr(message, "content", message)}
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        view["tool_calls"] = [{"name": c.get("name"), "id": c.get("id"), "args": c.get("args")} for c in tool_calls]
    call_id = getattr(message, "tool_call_id", None)
    if call_id:
        view["tool_call_id"] = call_id
    return view


def messages_view(batches: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """The prompt of a chat-model call (the first batch: LangGraph sends one)."""
    if not batches:
        return []
    return [message_view(m) for m in batches[0]]


def model_name(metadata: Mapping[str, Any] | None, serialized: Mapping[str, Any] | None,
               invocation_params: Mapping[str, Any] | None) -> str:
    """The requested model: ``ls_model_name`` metadata, then the invocation
    parameters, then the model class name."""
    if metadata:
        name = metadata.get("ls_model_name")
        if name:
            return str(name)
    if invocation_params:
        for key in ("model", "model_name", "model_id", "deployment_name"):
            name = invocation_params.get(key)
            if name:
                return str(name)
    if serialized:
        name = serialized.get("name")
        if name:
            return str(name)
    return "unknown"


def tool_definitions(invocation_params: Mapping[str, Any] | None) -> list[Any] | None:
    """The tools bound to a chat model (``bind_tools`` puts their schemas,
    usually in OpenAI format, into the call's invocation parameters)."""
    tools = invocation_params.get("tools") if invocation_params else None
    return list(tools) if isinstance(tools, (list, tuple)) and tools else None


def first_generation_message(response: Any) -> Any:
    generations = getattr(response, "generations", None)
    if generations and generations[0]:
        generation = generations[0][0]
        return getattr(generation, "message", None) or getattr(generation, "text", None)
    return None


def usage(response: Any, message: Any) -> tuple[int | None, int | None, str | None]:
    """``(input_tokens, output_tokens, response_model)`` of an LLM result:
    the standard ``usage_metadata`` first, then the legacy ``llm_output``."""
    tokens_in = tokens_out = None
    model = None
    usage_md = getattr(message, "usage_metadata", None)
    if usage_md:
        tokens_in, tokens_out = usage_md.get("input_tokens"), usage_md.get("output_tokens")
    response_md = getattr(message, "response_metadata", None)
    if response_md:
        model = response_md.get("model_name") or response_md.get("model")
    llm_output = getattr(response, "llm_output", None)
    if llm_output:
        if tokens_in is None:
            token_usage = llm_output.get("token_usage") or llm_output.get("usage") or {}
            tokens_in = token_usage.get("prompt_tokens", token_usage.get("input_tokens"))
            tokens_out = token_usage.get("completion_tokens", token_usage.get("output_tokens"))
        model = model or llm_output.get("model_name") or llm_output.get("model")
    return tokens_in, tokens_out, (str(model) if model else None)


def tool_output(output: Any) -> Any:
    """What a tool returned: a ToolMessage's content, or the value itself."""
    content = getattr(output, "content", None)
    return content if content is not None else output


def goto_targets(goto: Any) -> tuple[list[str], int]:
    """``(node names, number of Send packets)`` of a ``Command.goto`` or a router result."""
    if goto is None:
        return [], 0
    if isinstance(goto, str):
        return [goto], 0
    node = getattr(goto, "node", None)
    if isinstance(node, str):  # one Send
        return [node], 1
    names: list[str] = []
    sends = 0
    if isinstance(goto, (list, tuple)):
        for item in goto:
            if isinstance(item, str):
                names.append(item)
            else:
                node = getattr(item, "node", None)
                if isinstance(node, str):
                    names.append(node)
                    sends += 1
    return names, sends


def run_input_view(inputs: Any, thread_id: str | None) -> dict[str, Any] | None:
    """A run's input as a replay feeds it again: the graph input or the
    ``Command`` it was resumed with, and the thread it ran on."""
    if inputs is None:
        return None
    view: dict[str, Any] = {}
    if isinstance(inputs, Command):
        view["command"] = {k: v for k, v in (("resume", inputs.resume), ("update", inputs.update),
                                              ("goto", inputs.goto or None)) if v is not None}
    else:
        view["input"] = inputs
    if thread_id is not None:
        view["thread_id"] = thread_id
    return view
