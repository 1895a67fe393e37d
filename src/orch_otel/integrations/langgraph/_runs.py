"""What the handler knows about one LangChain run, and how it classifies runs.

LangGraph reports every graph, node, router, tool and model call as a
LangChain run (``run_id`` / ``parent_run_id``). The handler keeps one small
``Run`` per open run and decides from tags, metadata and the tree itself
what the run is (rules in ``docs/langgraph.md``):

- a **node** run carries a ``graph:step:N`` tag; its parent run is the graph;
- a **graph** run is the parent of a node run (found at its first node), or a
  parentless run whose metadata says LangGraph started it;
- a **router** (conditional edge) is a child of a node with a ``seq:step:N``
  tag, N >= 2; its output is the routing decision;
- tool and model runs come through their own callbacks.

Only some runs own a span (the workflow, agents, tools, model calls); every
other run belongs to the nearest ancestor that owns one.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from opentelemetry.context import Context

from ...recorder import Invocation

OTHER, GRAPH, NODE, ROUTER, TOOL, LLM = range(6)

# Why a node or graph run owns an agent span.
SEND, SUBGRAPH, CALLS_LLM, WORKFLOW = "send", "subgraph", "llm", "workflow"

GRAPH_INTEGRATIONS = frozenset({"langgraph", "langchain_create_agent"})
CREATE_AGENT = "langchain_create_agent"
DEFAULT_GRAPH_NAME = "LangGraph"
END = "__end__"
PUSH = "__pregel_push"
# The model-calling runnable of langgraph.prebuilt.create_react_agent's "agent" node.
REACT_MODEL_STEPS = frozenset({"call_model", "acall_model"})
NO_RESUME = object()


class Run:
    """One open LangChain run. Plain slots: created and read on the hot path."""

    __slots__ = (
        "run_id", "parent", "kind", "name", "inv", "why", "root",
        # metadata kept for classification
        "node_key", "integration", "lc_agent", "step", "push_index", "triggers",
        # graph runs
        "prebuilt", "fanout_size", "finished",
        # node runs: the agent this node is or hosts
        "agent_name", "absorbed",
        # run roots
        "ambient", "resume", "thread_id", "task_id", "topology", "interrupted",
        # control flow already recorded by a descendant (handoff)
        "handoff_done", "handoff_to",
    )

    def __init__(self, run_id: UUID, parent: Run | None, name: str) -> None:
        self.run_id = run_id
        self.parent = parent
        self.kind = OTHER
        self.name = name
        self.inv: Invocation | None = None
        self.why: str | None = None
        self.root: Run = parent.root if parent is not None else self
        self.node_key: str | None = None
        self.integration: str | None = None
        self.lc_agent: str | None = None
        self.step: int | None = None
        self.push_index: int | None = None
        self.triggers: Any = None
        self.prebuilt = False
        self.fanout_size: int | None = None
        self.finished: list[tuple[Any, str, bool]] | None = None
        self.agent_name: str | None = None
        self.absorbed = False
        self.ambient: Context | None = None
        self.resume: Any = NO_RESUME
        self.thread_id: str | None = None
        self.task_id: str | None = None
        self.topology: str | None = None
        self.interrupted = False
        self.handoff_done = False
        self.handoff_to: str | None = None

    def scope(self) -> Run | None:
        """The nearest run, this one included, that owns a span."""
        run: Run | None = self
        while run is not None and run.inv is None:
            run = run.parent
        return run

    def enclosing_node(self) -> Run | None:
        run = self.parent
        while run is not None and run.kind != NODE:
            run = run.parent
        return run

    def within(self, ancestor: Run) -> bool:
        run: Run | None = self
        while run is not None:
            if run is ancestor:
                return True
            run = run.parent
        return False


def has_step_tag(tags: list[str] | None) -> bool:
    if tags:
        for tag in tags:
            if tag.startswith("graph:step:"):
                return True
    return False


def is_router_tag(tags: list[str] | None) -> bool:
    if tags:
        for tag in tags:
            if tag.startswith("seq:step:") and tag != "seq:step:1":
                return True
    return False


def push_index(triggers: Any, path: Any) -> int | None:
    """The Send index of a pushed task (``langgraph_path == ("__pregel_push", i, ...)``)."""
    if triggers and triggers[0] == PUSH and path and len(path) > 1 and path[0] == PUSH:
        index = path[1]
        if isinstance(index, int) and not isinstance(index, bool):
            return index
    return None


def joins(triggers: Any) -> bool:
    if triggers:
        for trigger in triggers:
            if isinstance(trigger, str) and trigger.startswith("join:"):
                return True
    return False
