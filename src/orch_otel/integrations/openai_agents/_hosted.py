"""Hosted tools: tools the model's provider runs inside the model call
(``WebSearchTool``, ``FileSearchTool``, ``CodeInterpreterTool``,
``ImageGenerationTool``, ``HostedMCPTool``, a server-side ``ToolSearchTool``,
a ``ShellTool`` with a hosted environment).

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
from ._local import shell_output
from ._state import RunState, plain, telemetry_failed

# Output item type -> (tool name, the item's fields that are the call's input, the field that is its result).
# mcp_call items name their tool themselves (``name``); they and mcp_list_tools name their server (``server_label``).
_CALLS: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "web_search_call": ("web_search", ("action",), None),
    "file_search_call": ("file_search", ("queries",), "results"),
    "code_interpreter_call": ("code_interpreter", ("code", "container_id"), "outputs"),
    "image_generation_call": ("image_generation", (), None),  # the image itself (base64) is not kept
    "mcp_call": ("mcp", ("arguments",), "output"),
    "tool_search_call": ("tool_search", ("arguments",), None),
    "mcp_list_tools": ("mcp_list_tools", (), "tools"),  # the provider listing a hosted MCP server's tools
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


def hosted_shell(item: Any, answered: Any = ()) -> bool:
    """A ``shell_call`` the provider runs: it names a hosted environment (a
    container, where a local call names ``local`` or nothing), or the reply
    holding it already holds its output (``answered``: those call ids)."""
    if not isinstance(item, dict) or item.get("type") != "shell_call":
        return False
    environment = item.get("environment")
    kind = environment.get("type") if isinstance(environment, dict) else None
    return (kind is not None and kind != "local") or item.get("call_id") in answered


def record_calls(state: RunState, output: list[Any], parent: Any) -> None:
    """The hosted tool calls of one model reply, as tool calls inside the
    model call (``parent``: its span's context) that ran at the provider."""
    shell_outputs = {item.get("call_id"): item for item in output
                     if isinstance(item, dict) and item.get("type") == "shell_call_output"}
    for item in output:
        try:
            if _is_hosted_call(item):
                _record(state, item, parent)
            elif hosted_shell(item, shell_outputs):
                _record_shell(state, item, shell_outputs.get(item.get("call_id")), parent)
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


def _record_shell(state: RunState, item: dict[str, Any], answer: dict[str, Any] | None, parent: Any) -> None:
    """A hosted shell call: its commands, and the output the reply carries in
    the form a local ``ShellTool`` call's result has (``_local.model_got``)."""
    call = state.recorder.tool("shell", call_id=str(item.get("call_id") or item.get("id") or "") or None,
                               arguments=item.get("action"), tool_type="shell",
                               attributes={Attr.TOOL_HOSTED: True})
    call.start(attach=False, parent=parent)
    result = shell_output(answer)
    if result is not None:
        call.set_result(result)
    call.end()
