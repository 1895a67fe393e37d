"""Replay: run a recorded multi-agent run again from its trace, with every
model and tool call answered from the recording, and compare the
orchestration; or fork it at a decision and let the app make the rest.

    result = orch_otel.replay(trace, build_app(), contents=load_contents("orch-traces"))
    assert result.equal, result.divergence

See ``docs/replay.md``.
"""

from __future__ import annotations

from .._serving import ModelCall, NotRecorded, ToolCall
from ._compare import Divergence, orchestration
from ._driver import ReplayError, ReplayResult, areplay, replay
from ._fork import CONTINUE, STOP, ForkError, options_at
from ._script import MissingContent

__all__ = [
    "CONTINUE", "STOP", "Divergence", "ForkError", "MissingContent", "ModelCall", "NotRecorded", "ReplayError",
    "ReplayResult", "ToolCall", "areplay", "options_at", "orchestration", "replay",
]
