"""The LangGraph benchmark apps, offline (scripted fake chat models).

- ``supervisor``: a supervisor agent hands off (handoff tools returning
  ``Command(goto=..., graph=Command.PARENT)``) to a research-team subgraph that
  fans out with ``Send`` to 3 worker agents (each calls a ``search`` tool, then
  summarises) and fans back in, then to a writer agent with a tool, then
  answers. 1 run = 8 model calls, 4 tool calls, 2 handoffs.
- ``fanout8``: a planner ``Send``s 8 worker agents (model -> tool -> model)
  and a reducer fans them in.

Both are built from the bundled demo (``orch_otel.integrations.langgraph.demo``).
Each app is compiled once per process and invoked once per run. The models
are :class:`orch_otel.integrations.langgraph.testing.FakeToolCallingModel`
scripts (``by_turn``, so one compiled app serves every run).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from orch_otel.integrations.langgraph.demo import (
    QUESTION,
    build_demo_graph,
    build_research_team,
)

APPS = ("supervisor", "fanout8")


def build_supervisor() -> Any:
    """The bundled demo app: the benchmark measures what ``orch-otel demo`` runs."""
    return build_demo_graph(name="supervisor_app")


def build_fanout8() -> Any:
    return build_research_team(topics=tuple(f"topic-{i}" for i in range(8)), name="fanout8_app")


BUILDERS = {"supervisor": build_supervisor, "fanout8": build_fanout8}


class LangGraphApp:
    """One compiled app; ``arun()`` is one run."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.graph = BUILDERS[name]()
        self._n = 0

    async def arun(self) -> Any:
        self._n += 1
        config = {"metadata": {"orch.task_id": f"{self.name}-{self._n}"}}
        result = await self.graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, config=config)
        assert result["messages"], "the app produced no messages"
        return result
