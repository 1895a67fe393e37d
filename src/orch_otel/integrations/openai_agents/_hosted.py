"""Hosted tools: tools the model's provider runs inside the model call
(``WebSearchTool``, ``FileSearchTool``, ``CodeInterpreterTool``,
``ImageGenerationTool``, ``HostedMCPTool``, a server-side ``ToolSearchTool``).

The app's process never runs them, so no step of the run loop shows them
running: the model's reply carries each call as an output item
(``web_search_call``, ``mcp_call``, ...) with the provider's id, its input
and, for most, its result. Each becomes a tool call inside the model call's
span, marked hosted. What an agent offers the model is read from the tools
the run loop gathers for the turn: a hosted tool has no function schema,
only its type and name (its configuration, which may hold a server's
credentials, is left out).
"""

from __future__ import annotations

from typing import Any

from ..._invocation import ERROR
from ...vocabulary import Attr
from ._state import RunState, plain, telemetry_failed

# Output item type -> (tool name, the item's fields that are the call's input, the field that is its result).
# mcp_call items name their tool themselves (``name``) and their server (``server_label``).
_CALLS: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "web_search_call": ("web_search", ("action",), None),
    "file_search_call": ("file_search", ("queries",), "results"),
    "code_interpreter_call": ("code_interpreter", ("code", "container_id"), "outputs"),
    "image_generation_call": ("image_generation", (), None),  # the image itself (base64) is not kept
    "mcp_call": ("mcp", ("arguments",), "output"),
    "tool_search_call": ("tool_search", ("arguments",), None),
}


def definition(tool: Any) -> dict[str, Any]:
    """A tool offered to the model that is no function tool: its type and
    name (a hosted MCP server's label too); never its configuration."""
    config = getattr(tool, "tool_config", None)
    config = config if isinstance(config, dict) else {}
    kind = getattr(tool, "type", None) or config.get("type") or getattr(tool, "name", None)
    out: dict[str, Any] = {"type": str(kind), "name": str(getattr(tool, "name", kind))}
    if isinstance(config.get("server_label"), str):
        out["server_label"] = config["server_label"]
    description = getattr(tool, "description", None)
    if isinstance(description, str) and description:
        out["description"] = description
    return out


def _is_hosted_call(item: Any) -> bool:
    if not isinstance(item, dict) or item.get("type") not in _CALLS:
        return False
    return item["type"] != "tool_search_call" or item.get("execution") != "client"


def record_calls(state: RunState, output: list[Any], parent: Any) -> None:
    """The hosted tool calls of one model reply, as tool calls inside the
    model call (``parent``: its span's context) that ran at the provider."""
    for item in output:
        if not _is_hosted_call(item):
            continue
        try:
            _record(state, item, parent)
        except Exception:
            telemetry_failed("hosted tool call")


def _record(state: RunState, item: dict[str, Any], parent: Any) -> None:
    kind = item["type"]
    name, inputs, result_key = _CALLS[kind]
    attributes: dict[str, Any] = {Attr.TOOL_HOSTED: True}
    if kind == "mcp_call":
        name = str(item.get("name") or name)
        if item.get("server_label"):
            attributes[Attr.TOOL_SERVER] = str(item["server_label"])
    present = {key: item[key] for key in inputs if item.get(key) is not None}
    arguments = present.get("arguments") if kind in ("mcp_call", "tool_search_call") else present or None
    call = state.recorder.tool(name, call_id=str(item.get("call_id") or item.get("id") or "") or None,
                               arguments=arguments, tool_type=kind.removesuffix("_call"), attributes=attributes)
    call.start(attach=False, parent=parent)
    if result_key is not None and item.get(result_key) is not None:
        call.set_result(plain(item[result_key]))
    if item.get("status") == "failed" or item.get("error"):
        call.end(outcome=ERROR)
    else:
        call.end()
