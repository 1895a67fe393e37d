"""A human's approvals in a run resumed from a ``RunState``: which of the
tool calls awaiting approval were approved and which rejected, and the
rejected calls themselves (the tool does not run; the SDK sends the model a
rejection message as the call's output). A hosted MCP server's approval
requests are answered the same way, or in the run by the tool's
``on_approval_request``: those answers are recorded as they are given.

Call ids are not content and are always kept; what the human wrote (a
rejection message) is content, kept only as the content policy says."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..._invocation import ERROR
from ...vocabulary import Attr
from ._state import RUN, pending_id, plain, telemetry_failed

REJECTED_KIND = "approval_rejected"  # the SDK's own name for it (ToolErrorFormatterArgs.kind)


@dataclass
class Approvals:
    """The decisions a resumed state carries, in the order of its interruptions."""

    approved: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    messages: dict[str, str] = field(default_factory=dict)  # call id -> the human's rejection message

    def content(self) -> list[dict[str, Any]] | None:
        """What the human decided, as content (the rejection messages are the human's words)."""
        if not self.approved and not self.rejected:
            return None
        decided = [{"call_id": i, "approved": True} for i in self.approved]
        for call_id in self.rejected:
            entry: dict[str, Any] = {"call_id": call_id, "approved": False}
            if call_id in self.messages:
                entry["message"] = self.messages[call_id]
            decided.append(entry)
        return decided


def decisions(run_state: Any) -> Approvals:
    """The approvals and rejections the resumed ``run_state`` holds for its
    pending tool calls (a call still undecided is in neither list)."""
    found = Approvals()
    context = getattr(run_state, "_context", None)
    if context is None:
        return found
    for item in run_state.get_interruptions():
        call_id = pending_id(getattr(item, "raw_item", None))
        name = getattr(item, "tool_name", None)
        if not call_id or not name:
            continue
        status = context.get_approval_status(name, call_id, existing_pending=item)
        if status is True:
            found.approved.append(str(call_id))
        elif status is False:
            found.rejected.append(str(call_id))
            message = context.get_rejection_message(name, call_id, existing_pending=item)
            if message is not None:
                found.messages[str(call_id)] = str(message)
    return found


def rejected_tool() -> Any:
    """``resolve_approval_rejection_message``: the SDK asks it for the output
    a rejected call gets, then gives the model that output instead of running
    the tool. The call is recorded as the agent's tool call with the model's
    call id, its result that message, failed as ``approval_rejected`` (the
    SDK marks its own span failed too)."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        message = await wrapped(*args, **kwargs)
        state = RUN.get()
        if state is not None and not state.finished and kwargs.get("tool_type") == "function":
            try:
                call = kwargs.get("tool_call")
                parent = state.segment.context if state.segment is not None else state.parent
                invocation = state.recorder.tool(
                    str(kwargs.get("tool_name")), call_id=kwargs.get("call_id"),
                    arguments=getattr(call, "arguments", None), tool_type="function",
                ).start(attach=False, parent=parent)
                invocation.set_result(plain(message))
                invocation.set(Attr.ERROR_TYPE, REJECTED_KIND)
                invocation.end(outcome=ERROR)
            except Exception:
                telemetry_failed("rejected tool")
        return message

    return wrapper


def hosted_mcp_answers() -> Any:
    """``execute_mcp_approval_requests``: a hosted MCP tool's
    ``on_approval_request`` answered the provider's approval requests in the
    run. Recorded as the intervention the agent received, naming the request
    ids approved and rejected (ids, always kept); the decisions and a
    rejection's reason are content."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        responses = await wrapped(*args, **kwargs)
        state = RUN.get()
        if state is not None and not state.finished and state.segment is not None:
            try:
                answers = _answers(responses)
                if answers.approved or answers.rejected:
                    state.recorder.human_intervention(answers.content(), span=state.segment.span,
                                                      approved=answers.approved, rejected=answers.rejected)
            except Exception:
                telemetry_failed("hosted MCP approval")
        return responses

    return wrapper


def _answers(responses: Any) -> Approvals:
    found = Approvals()
    for item in responses or ():
        raw = getattr(item, "raw_item", None)
        if not isinstance(raw, dict) or not raw.get("approval_request_id"):
            continue
        request = str(raw["approval_request_id"])
        if raw.get("approve"):
            found.approved.append(request)
        else:
            found.rejected.append(request)
            if isinstance(raw.get("reason"), str):
                found.messages[request] = raw["reason"]
    return found
