"""Replay of an AutoGen agentchat team or agent: feed a recorded run's task
again, and answer its model and tool calls from the recording
(``orch_otel._serving``).

The seams are the instrumentation's own wrappers of ``ChatCompletionClient``
``create`` / ``create_stream`` and ``BaseTool.run_json`` (``_served.py``):
while a replay is active they ask its server first, inside the spans they
record, so a served reply is recorded exactly as a real one. Nothing more is
patched for a replay.
"""

from __future__ import annotations

from typing import Any

from autogen_agentchat.base import ChatAgent, Team
from autogen_agentchat.messages import MessageFactory, StopMessage
from autogen_agentchat.teams._group_chat._base_group_chat_manager import BaseGroupChatManager

from ..._serving import ACTIVE
from .._patch import Patches
from . import AutoGenInstrumentor
from ._state import state_of

FORCED_STOP = "orch-otel replay: stopped here by a fork"


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


def force_termination(patches: Patches, termination: Any) -> None:
    """Force one termination check of one team (``_fork.Termination``): its
    manager's own check, which signals the end of the run as a condition does."""
    checks: dict[str, int] = {}

    async def check(wrapped: Any, manager: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        state = state_of(manager)  # the team run this manager runs, as the trace names it
        name = state.actor if state is not None else str(getattr(manager, "_name", ""))
        checks[name] = checks.get(name, 0) + 1
        if name != termination.team or checks[name] != termination.check:
            return bool(await wrapped(*args, **kwargs))
        server = ACTIVE.get()
        if server is not None:
            server.fork()
        if not termination.stop:
            return False  # go on: no condition is asked this once
        await manager._signal_termination(StopMessage(content=FORCED_STOP, source=str(getattr(manager, "_name", name))))
        return True

    patches.wrap(BaseGroupChatManager, "_apply_termination_condition", check)
