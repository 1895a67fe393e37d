"""The AutoGen benchmark apps, offline (``ReplayChatCompletionClient``).

- ``round_robin``: a RoundRobin team of two agents; ``a`` calls a
  ``get_weather`` tool and reflects on it, ``b`` answers ``TERMINATE``.
- ``swarm``: a Swarm; ``alice`` calls a ``lookup`` tool and hands off to
  ``bob``, who hands off to the user (``HandoffTermination``).

Replay clients are consumed as they answer, so every run gets a fresh team;
teams are built before the timed section (``prepare``).
"""

from __future__ import annotations

from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import (
    HandoffTermination,
    MaxMessageTermination,
)
from autogen_agentchat.teams import RoundRobinGroupChat, Swarm

from orch_otel.integrations.autogen.testing import (
    handoff,
    replay,
    tool_calls,
    weather_round_robin,
)

APPS = ("round_robin", "swarm")
TASK = "What is the weather in Paris?"


async def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def build_round_robin() -> RoundRobinGroupChat:
    return weather_round_robin()


def build_swarm() -> Swarm:
    alice = AssistantAgent(
        "alice", tools=[lookup], handoffs=["bob"],
        model_client=replay(tool_calls(("lookup", {"q": "x"}, "t1"), ("transfer_to_bob", None, "h1"))),
    )
    bob = AssistantAgent("bob", handoffs=["user"], model_client=replay(handoff("user", "h2")))
    return Swarm([alice, bob], termination_condition=HandoffTermination(target="user") | MaxMessageTermination(10),
                 name="handoff_swarm")


BUILDERS = {"round_robin": build_round_robin, "swarm": build_swarm}
EXPECTED_MESSAGES = {"round_robin": 5, "swarm": 5}


class AutoGenApp:
    """``prepare(n)`` builds n fresh teams; ``arun()`` runs the next one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._teams: list[Any] = []

    def prepare(self, runs: int) -> None:
        self._teams = [BUILDERS[self.name]() for _ in range(runs)]

    async def arun(self) -> Any:
        team = self._teams.pop() if self._teams else BUILDERS[self.name]()
        result = await team.run(task=TASK)
        assert result.stop_reason, "the team did not stop"
        return result
