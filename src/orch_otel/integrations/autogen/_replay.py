"""Replay of an AutoGen agentchat team or agent: feed a recorded run's task
again, and answer its model and tool calls from the recording
(``integrations/_serving.py``).

The seams are the instrumentation's own wrappers of ``ChatCompletionClient``
``create`` / ``create_stream`` and ``BaseTool.run_json`` (``_served.py``):
while a replay is active they ask its server first, inside the spans they
record, so a served reply is recorded exactly as a real one. Nothing more is
patched for a replay.
"""

from __future__ import annotations

from typing import Any

from autogen_agentchat.base import ChatAgent, Team
from autogen_agentchat.messages import MessageFactory

from .._patch import Patches
from . import AutoGenInstrumentor


def accepts(app: Any) -> bool:
    return isinstance(app, (Team, ChatAgent))


def instrumentor() -> AutoGenInstrumentor:
    return AutoGenInstrumentor()


def install(patches: Patches) -> None:
    """Nothing to add: the instrumentation's wrappers are the seams."""


async def run(app: Any, run_input: Any) -> Any:
    """Run ``app`` once on a recorded task (``_runs._task``'s form)."""
    if not isinstance(run_input, dict) or "task" not in run_input:
        raise ValueError("the recorded run input is not an AutoGen task ({'task': ...})")
    return await app.run(task=_revive(run_input["task"]))


def _revive(task: Any) -> Any:
    """JSON back to a task: text as it is, chat messages from their dump."""
    if isinstance(task, list):
        return [_revive(t) for t in task]
    if isinstance(task, dict) and "type" in task:
        return MessageFactory().create(task)
    return task
