"""The replay seam inside the AutoGen wrappers: while a replay is active
(``orch_otel._serving``), a model or tool call is answered from the
recording, inside the span the wrapper records for it."""

from __future__ import annotations

import json
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_core.tools import TextResultContent, ToolResult

from ..._serving import ACTIVE, ModelCall, Served, ToolCall
from ...vocabulary import Attr


def replaying() -> bool:
    return ACTIVE.get() is not None


def served_model(span: Any) -> Served | None:
    """The recorded reply for the model call ``span`` records, when a replay is active."""
    server = ACTIVE.get()
    if server is None:
        return None
    attributes = getattr(span, "attributes", None) or {}
    return server.model(ModelCall(request_ref=attributes.get(Attr.INPUT_REF),
                                  model=attributes.get(Attr.REQUEST_MODEL)))


def served_tool(span: Any) -> Served | None:
    """The recorded result for the tool call ``span`` records, when a replay is active."""
    server = ACTIVE.get()
    if server is None:
        return None
    attributes = getattr(span, "attributes", None) or {}
    return server.tool(ToolCall(name=str(attributes.get(Attr.TOOL_NAME)), call_id=attributes.get(Attr.TOOL_CALL_ID),
                                args_ref=attributes.get(Attr.INPUT_REF)))


def create_result(served: Served) -> CreateResult:
    """A recorded reply (``_clients.output_view``'s form) as the client's result."""
    view = served.output if isinstance(served.output, dict) else {"content": served.output}
    calls = view.get("tool_calls")
    usage = RequestUsage(prompt_tokens=served.input_tokens or 0, completion_tokens=served.output_tokens or 0)
    if calls:
        functions = [FunctionCall(id=str(c.get("id")), name=str(c.get("name")),
                                  arguments=c.get("arguments") if isinstance(c.get("arguments"), str) else "{}")
                     for c in calls]
        return CreateResult(finish_reason="function_calls", content=functions, usage=usage, cached=False,
                            thought=view.get("content") or None)
    return CreateResult(finish_reason="stop", content=view.get("content") or "", usage=usage, cached=False)


def tool_result(served: Served, name: Any) -> ToolResult:
    """A recorded workbench result (its text) as the workbench's ``ToolResult``."""
    output = served.output if isinstance(served.output, str) else json.dumps(served.output)
    return ToolResult(name=str(name), result=[TextResultContent(content=output)], is_error=False)
