"""Replay of an Agent Framework workflow or agent: feed a recorded run's input
again, and answer its model and tool calls from the recording
(``orch_otel._serving``).

The seams are the instrumentation's own wrappers of
``BaseChatClient.get_response`` and ``_execute_single_function_call``
(``_served.py``): while a replay is active they ask its server first, inside
the spans they record, so a served reply is recorded exactly as a real one;
the framework's tool loop, middleware (the Handoff builder's included) and
workflow machinery then act on it as on a real reply. Nothing more is
patched for a replay.
"""

from __future__ import annotations

from typing import Any

from agent_framework import Message, RawAgent
from agent_framework._workflows._workflow import Workflow

from .._patch import Patches
from . import AgentFrameworkInstrumentor


def accepts(app: Any) -> bool:
    return isinstance(app, (Workflow, RawAgent))  # an Agent is a RawAgent with middleware and telemetry


def instrumentor() -> AgentFrameworkInstrumentor:
    return AgentFrameworkInstrumentor()


def install(patches: Patches) -> None:
    """Nothing to add: the instrumentation's wrappers are the seams."""


def _revive(value: Any) -> Any:
    """A recorded input (``_messages.messages_view``'s form) back to the framework's messages."""
    if isinstance(value, list):
        return [Message(role=str(m.get("role", "user")), contents=[str(m.get("content") or "")],
                        author_name=m.get("name")) if isinstance(m, dict) else m for m in value]
    return value


async def run(app: Any, run_input: Any) -> Any:
    """Run ``app`` once on a recorded input: a workflow's ``{"message": ...}``, an agent's ``{"messages": ...}``."""
    if isinstance(app, Workflow):
        if not isinstance(run_input, dict) or "message" not in run_input:
            raise ValueError("the recorded run input is not an Agent Framework workflow's ({'message': ...})")
        return await app.run(_revive(run_input["message"]))
    if not isinstance(run_input, dict) or "messages" not in run_input:
        raise ValueError("the recorded run input is not an Agent Framework agent's ({'messages': ...})")
    return await app.run(_revive(run_input["messages"]))
