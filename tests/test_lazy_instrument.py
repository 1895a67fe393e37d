"""instrument() imports no framework: LangGraph and AutoGen are instrumented
on their first import (or at once if already imported), exactly once, and
never if uninstrument() came first. Each case runs in a fresh interpreter."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import check_trace, decisions_of

from orch_otel.tracefiles import read_lines, trace_files

HEAVY = ("langgraph", "langgraph.pregel", "autogen_agentchat", "autogen_core", "langchain_core", "pydantic.v1", "agents")

PRINT_LOADED = (
    "import sys, json\n"
    f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
)

# triage (a model node) routes to billing: one trace, triage delegates to billing.
LANGGRAPH_RUN = """
from typing import Annotated
from typing_extensions import TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langchain_core.messages import HumanMessage
from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai

class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]

triage_model = FakeToolCallingModel(model_name="triage-llm", responses=[ai("billing")])
billing_model = FakeToolCallingModel(model_name="billing-llm", responses=[ai("refund issued")])
graph = StateGraph(State)
graph.add_node("triage", lambda s: {"messages": [triage_model.invoke(s["messages"])]})
graph.add_node("billing", lambda s: {"messages": [billing_model.invoke(s["messages"])]})
graph.add_edge(START, "triage")
graph.add_conditional_edges("triage", lambda s: s["messages"][-1].content, ["billing", "tech"])
graph.add_node("tech", lambda s: {})
graph.add_edge("billing", END)
graph.add_edge("tech", END)
out = graph.compile(name="helpdesk").invoke({"messages": [HumanMessage("my bill")]})
assert out["messages"][-1].content == "refund issued"
import orch_otel
orch_otel.flush()
"""

# a and b alternate; the task counts as a message, so MaxMessageTermination(3) stops after b.
AUTOGEN_RUN = """
import asyncio
from orch_otel.integrations.autogen.testing import replay
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat

a = AssistantAgent("a", model_client=replay("a says 0", "a says 1"))
b = AssistantAgent("b", model_client=replay("b says 0", "b says 1"))
team = RoundRobinGroupChat([a, b], termination_condition=MaxMessageTermination(3))
asyncio.run(team.run(task="go"))
import orch_otel
orch_otel.flush()
"""


def instrument_code(trace_dir: Path) -> str:
    return f"import orch_otel\norch_otel.instrument(trace_dir={str(trace_dir)!r})\n"


def loaded(stdout: str) -> list[str]:
    """The HEAVY modules the snippet's first PRINT_LOADED line reported."""
    return json.loads(stdout.splitlines()[0])


def traces_in(directory: Path) -> list[dict]:
    if not directory.exists():
        return []  # nothing was written there
    return [check_trace(line.trace) for path in trace_files([directory]) for line in read_lines(path)]


def assert_helpdesk_trace(directory: Path) -> None:
    (trace,) = traces_in(directory)
    assert trace["system"] == "langgraph"
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [("triage", "billing")]


def assert_round_robin_trace(directory: Path) -> None:
    (trace,) = traces_in(directory)
    assert trace["system"] == "autogen"
    assert [d["targets"] for d in decisions_of(trace, "delegate")] == [["a"], ["b"]]


def test_instrument_imports_no_framework(run_python, tmp_path):
    result = run_python(instrument_code(tmp_path / "t") + PRINT_LOADED)
    assert result.returncode == 0, result.stderr
    assert loaded(result.stdout) == []


def test_langgraph_imported_after_instrument_is_traced(run_python, tmp_path):
    result = run_python(instrument_code(tmp_path / "t") + PRINT_LOADED + LANGGRAPH_RUN)
    assert result.returncode == 0, result.stderr
    assert loaded(result.stdout) == []
    assert_helpdesk_trace(tmp_path / "t")


def test_autogen_imported_after_instrument_is_traced(run_python, tmp_path):
    result = run_python(instrument_code(tmp_path / "t") + PRINT_LOADED + AUTOGEN_RUN)
    assert result.returncode == 0, result.stderr
    assert loaded(result.stdout) == []
    assert_round_robin_trace(tmp_path / "t")


def test_frameworks_imported_before_instrument_are_traced(run_python, tmp_path):
    early = "import langgraph.graph, autogen_agentchat.teams\n"
    result = run_python(early + instrument_code(tmp_path / "lg") + LANGGRAPH_RUN)
    assert result.returncode == 0, result.stderr
    assert_helpdesk_trace(tmp_path / "lg")
    result = run_python(early + instrument_code(tmp_path / "ag") + AUTOGEN_RUN)
    assert result.returncode == 0, result.stderr
    assert_round_robin_trace(tmp_path / "ag")


def test_instrumented_once_after_reinstrumenting_before_the_import(run_python, tmp_path):
    """instrument, uninstrument, instrument, then import: one callback hook, one set of patches, one trace."""
    code = (
        instrument_code(tmp_path / "first") + "orch_otel.uninstrument()\n"
        + instrument_code(tmp_path / "t") + LANGGRAPH_RUN
        + "from langchain_core.tracers import context\n"
        "print(sum(hook[0].name == 'orch_otel_langgraph_handler' for hook in context._configure_hooks))\n"
        "from autogen_agentchat.agents import BaseChatAgent\n"
        "print(type(vars(BaseChatAgent)['run']).__name__)\n"  # wrapped once: a wrapt wrapper around the function
        "print(type(vars(BaseChatAgent)['run'].__wrapped__).__name__)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "FunctionWrapper", "function"]
    assert_helpdesk_trace(tmp_path / "t")
    assert traces_in(tmp_path / "first") == []


def test_uninstrument_before_the_import_leaves_the_frameworks_alone(run_python, tmp_path):
    code = (
        instrument_code(tmp_path / "t") + "orch_otel.uninstrument()\n" + PRINT_LOADED  # undoing imports nothing
        + LANGGRAPH_RUN + AUTOGEN_RUN
        + "from langchain_core.tracers import context\n"
        "print(sum(hook[0].name == 'orch_otel_langgraph_handler' for hook in context._configure_hooks))\n"
        "from autogen_agentchat.agents import BaseChatAgent\n"
        "print(type(vars(BaseChatAgent)['run']).__name__)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert loaded(result.stdout) == []
    assert result.stdout.split()[1:] == ["0", "function"]
    assert traces_in(tmp_path / "t") == []


def test_a_fault_while_instrumenting_on_import_never_reaches_the_app(run_python, tmp_path):
    """The app's import and run succeed, uninstrumented; the warning names the
    framework and the fault's type, not its message."""
    code = (
        "import logging\n"
        "logging.basicConfig(level=logging.DEBUG, format='LOG %(message)s')\n"
        "from orch_otel.integrations.langgraph import LangGraphInstrumentor\n"
        "def broken(self, *args, **kwargs):\n"
        "    raise RuntimeError('sk-planted-secret-0042')\n"
        "LangGraphInstrumentor._patch_langgraph = broken\n"
        + instrument_code(tmp_path / "t") + LANGGRAPH_RUN + "orch_otel.uninstrument()\nprint('app done')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["app done"]
    assert "sk-planted-secret-0042" not in result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if "on its import" in line]
    assert "LangGraph" in warning and "RuntimeError" in warning
    assert traces_in(tmp_path / "t") == []


def test_opentelemetry_instrument_stays_lazy(run_zero_code, tmp_path):
    result = run_zero_code(PRINT_LOADED + LANGGRAPH_RUN, tmp_path / "t")
    assert result.returncode == 0, result.stderr
    assert loaded(result.stdout) == []
    assert_helpdesk_trace(tmp_path / "t")
