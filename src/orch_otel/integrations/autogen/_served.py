"""The replay seam inside the AutoGen wrappers: while a replay is active
(``orch_otel._serving``), a model or tool call is answered from the
recording, inside the span the wrapper records for it."""

from __future__ import annotations

import json
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_core.tools import TextResultContent, ToolResult

from ..._serving import ACTIVE, Served


def replaying() -> bool:
    return ACTIVE.get() is not None


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
