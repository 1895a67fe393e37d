"""The OpenAI Agents SDK benchmark apps, offline: real agents, runner, tools,
handoffs and agents as tools; only the model is faked, by the SDK's own
``ScriptedModel`` as the tests build it (``tests/openai_agents_apps.py``:
``model`` and ``step``; the model writes the SDK's generation spans when the
SDK's tracing is on, as a real model does).

- ``handoffs``: ``triage`` calls a ``lookup`` tool (t1), then hands off to
  ``billing`` (h1), which answers. 3 model calls, 1 tool call, 1 handoff.
- ``as_tools``: ``manager`` calls ``researcher`` and ``writer`` as tools in
  one turn (a1, a2: they run concurrently), then answers. 4 model calls, 2
  nested runs.

The tool is async, so it runs on the event loop (the SDK runs a sync tool in
a worker thread, which makes per-run times bimodal). Scripted models are
consumed as they answer, so every run gets fresh agents, built before the
timed section (``prepare``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import assistant_message, function_call

_TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from openai_agents_apps import model, step  # noqa: E402 - from tests/

APPS = ("handoffs", "as_tools")
TASK = "Why was I charged twice?"


@function_tool
async def lookup(query: str) -> str:
    """Look an account up."""
    return f"found {query}"


def build_handoffs() -> Agent:
    billing = Agent(name="billing", handoff_description="charges and refunds",
                    model=model(step(assistant_message("One charge will be refunded."), tokens=(40, 6))))
    return Agent(name="triage", instructions="Route the customer.", tools=[lookup], handoffs=[billing], model=model(
        step(function_call("lookup", {"query": "charges"}, call_id="t1"), tokens=(20, 3)),
        step(function_call("transfer_to_billing", {}, call_id="h1"), tokens=(30, 3)),
    ))


def build_as_tools() -> Agent:
    researcher = Agent(name="researcher", model=model(step(assistant_message("two charges found"), tokens=(7, 1))))
    writer = Agent(name="writer", model=model(step(assistant_message("one will be refunded"), tokens=(9, 1))))
    return Agent(name="manager", tools=[
        researcher.as_tool(tool_name="research", tool_description="Research the account."),
        writer.as_tool(tool_name="write", tool_description="Write the reply."),
    ], model=model(
        step(function_call("research", {"input": "charges"}, call_id="a1"),
             function_call("write", {"input": "reply"}, call_id="a2"), tokens=(12, 4)),
        step(assistant_message("One charge will be refunded."), tokens=(30, 2)),
    ))


BUILDERS = {"handoffs": build_handoffs, "as_tools": build_as_tools}


class OpenAIAgentsApp:
    """``prepare(n)`` builds n fresh starting agents; ``arun()`` runs the next one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._agents: list[Agent] = []
        self._config = RunConfig(workflow_name=name)

    def prepare(self, runs: int) -> None:
        self._agents = [BUILDERS[self.name]() for _ in range(runs)]

    async def arun(self) -> Any:
        agent = self._agents.pop() if self._agents else BUILDERS[self.name]()
        result = await Runner.run(agent, TASK, run_config=self._config)
        assert result.final_output == "One charge will be refunded.", f"the {self.name} run answered {result.final_output!r}"
        return result
