"""The Microsoft Agent Framework benchmark apps, offline: real agents and
orchestration builders, with the tests' scripted chat client
(``tests/maf_apps.py``: the framework's own client layers, only the model
answers from a script).

- ``sequential``: a Sequential workflow of two agents; ``researcher`` calls a
  ``lookup`` tool (one call), then answers; ``writer`` writes. 3 model calls,
  1 tool call.
- ``handoff``: a Handoff workflow; ``triage`` calls ``lookup``, then hands off
  to ``billing`` (the framework's handoff tool), whose reply ends the run
  through a termination condition. 3 model calls, 1 tool call, 1 handoff.

The tool is async, so it runs on the event loop (the framework runs a sync
tool in a worker thread, which makes per-run times bimodal). Scripted clients
are consumed as they answer, so every run gets a fresh workflow; workflows are
built before the timed section (``prepare``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agent_framework import Agent, tool

_TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from maf_apps import ScriptedChatClient, handoff_agent, writer  # noqa: E402 - from tests/

APPS = ("sequential", "handoff")
TASK = "Why was I charged twice?"


@tool
async def lookup(query: str) -> str:
    """Look an account up."""
    return f"found {query}"


def build_sequential() -> Any:
    from agent_framework_orchestrations import SequentialBuilder

    researcher = Agent(client=ScriptedChatClient([[("l1", "lookup", '{"query": "charges"}')], "two charges found"]),
                       name="researcher", description="finds facts", tools=[lookup])
    return SequentialBuilder(participants=[researcher, writer("writer", "One charge will be refunded.")]).build()


def build_handoff() -> Any:
    from agent_framework_orchestrations import HandoffBuilder

    triage = handoff_agent("triage", [[("l1", "lookup", '{"query": "charges"}')],
                                      [("h1", "handoff_to_billing", "{}")]])
    triage.default_options["tools"] = [lookup]
    billing = handoff_agent("billing", ["Your refund is on its way."])
    support = handoff_agent("support", ["unused"])
    return HandoffBuilder(participants=[triage, billing, support],
                          termination_condition=lambda conversation: any("refund" in m.text for m in conversation),
                          ).with_start_agent(triage).build()


BUILDERS = {"sequential": build_sequential, "handoff": build_handoff}


class AgentFrameworkApp:
    """``prepare(n)`` builds n fresh workflows; ``arun()`` runs the next one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._workflows: list[Any] = []

    def prepare(self, runs: int) -> None:
        self._workflows = [BUILDERS[self.name]() for _ in range(runs)]

    async def arun(self) -> Any:
        workflow = self._workflows.pop() if self._workflows else BUILDERS[self.name]()
        result = await workflow.run(TASK)
        outputs = result.get_outputs()
        assert outputs, f"the {self.name} workflow produced no output"
        return result
