"""One patch record for both frameworks: uninstrument() undoes exactly what was
applied, in reverse order; a wrapper another tool put over ours stays, ours
inside it goes inert; an instrument() that fails part way, at once or on the
framework's import, leaves nothing behind."""

from __future__ import annotations

import types

import pytest
import wrapt

from orch_otel.integrations._patch import Patches, after


def _calls() -> tuple[list[str], object]:
    seen: list[str] = []

    def wrapper(wrapped, instance, args, kwargs):
        seen.append("ours")
        return wrapped(*args, **kwargs)

    return seen, wrapper


def test_remove_restores_own_and_inherited_attributes():
    class Base:
        def greet(self):
            return "base"

    class Child(Base):
        def run(self):
            return "run"

    module = types.ModuleType("fake_framework")
    module.helper = lambda: "helper"
    own_run, helper = vars(Child)["run"], module.helper
    seen, wrapper = _calls()
    patches = Patches()
    assert patches.wrap(Child, "greet", wrapper) and patches.wrap(Child, "run", wrapper)
    assert patches.wrap(module, "helper", wrapper)
    assert (Child().greet(), Child().run(), module.helper()) == ("base", "run", "helper")
    assert seen == ["ours"] * 3
    assert "greet" in vars(Child)  # an inherited method is wrapped on the subclass only

    patches.remove()
    assert "greet" not in vars(Child) and vars(Child)["run"] is own_run and module.helper is helper
    assert Child().greet() == "base" and seen == ["ours"] * 3
    assert not patches.is_wrapped(Child, "run")


def test_a_missing_attribute_is_not_patched_and_nothing_is_recorded():
    class Base:
        pass

    patches = Patches()
    assert not patches.wrap(Base, "absent", _calls()[1])
    assert not patches.is_wrapped(Base, "absent")
    patches.remove()
    assert "absent" not in vars(Base)


def test_nothing_is_wrapped_after_remove():
    class Client:
        def create(self):
            return "created"

    own = vars(Client)["create"]
    patches = Patches()
    patches.remove()
    assert not patches.wrap(Client, "create", _calls()[1])  # a run in flight discovering a client, say
    assert vars(Client)["create"] is own


def test_a_wrapper_put_over_ours_stays_and_ours_passes_calls_through():
    class Framework:
        def step(self, x):
            return x * 2

    seen, ours = _calls()
    patches = Patches()
    patches.wrap(Framework, "step", ours)

    def theirs(wrapped, instance, args, kwargs):
        seen.append("theirs")
        return wrapped(*args, **kwargs)

    wrapt.wrap_function_wrapper(Framework, "step", theirs)  # another tool instruments after us
    other = vars(Framework)["step"]
    patches.remove()
    assert vars(Framework)["step"] is other  # taking ours out would have dropped theirs
    seen.clear()
    assert Framework().step(3) == 6
    assert seen == ["theirs"]


def test_recorded_undos_run_in_reverse_even_when_one_fails():
    undone: list[int] = []
    patches = Patches()
    patches.record(lambda: undone.append(1))

    def broken():
        raise RuntimeError("undo failed")

    patches.record(broken)
    patches.record(lambda: undone.append(3))
    patches.remove()
    assert undone == [3, 1]
    patches.remove()  # a second remove has nothing left to undo
    assert undone == [3, 1]


def test_after_calls_the_hook_with_the_call_and_keeps_its_fault_from_the_caller():
    class Framework:
        def step(self, config, extra=None):
            return ("stepped", config)

    hooked = []

    def hook(instance, args, kwargs):
        hooked.append((type(instance).__name__, args, kwargs))
        raise RuntimeError("hook bug")

    patches = Patches()
    patches.wrap(Framework, "step", after(hook, "noting a step"))
    assert Framework().step({"a": 1}, extra=2) == ("stepped", {"a": 1})
    assert hooked == [("Framework", ({"a": 1},), {"extra": 2})]
    patches.remove()


LANGGRAPH_LEFT = """
from langchain_core.tracers import context
from langgraph._internal import _runnable
from langgraph.errors import ParentCommand
from langgraph.pregel.main import Pregel
from langgraph.types import Command
from orch_otel.recorder import get_recorder
print(sum(hook[0].name == 'orch_otel_langgraph_handler' for hook in context._configure_hooks),
      hasattr(_runnable._set_config_context, '__orch_otel_original__'),
      hasattr(Pregel._defaults, '__orch_otel_original__'),
      get_recorder().classify(ParentCommand(Command(goto='x'))))
"""

BREAK_LLM_START = """
import orch_otel.integrations.langgraph._llm_start as llm_start
def broken(patches, handler_type):
    raise RuntimeError('planted')
llm_start.wrap_llm_start = broken
from orch_otel.integrations.langgraph import LangGraphInstrumentor
"""


def test_a_langgraph_instrument_failing_part_way_leaves_nothing_behind(run_python):
    """The hook, the context and graph wraps were in place when the fault hit:
    all are gone, and a later instrument() works."""
    code = (
        "import langgraph.pregel\n" + BREAK_LLM_START
        + "try:\n    LangGraphInstrumentor().instrument()\nexcept RuntimeError:\n    print('raised')\n"
        + LANGGRAPH_LEFT
        + "import importlib; importlib.reload(llm_start)\n"
        "LangGraphInstrumentor().instrument()\n" + LANGGRAPH_LEFT
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["raised", "0", "False", "False", "error", "1", "True", "True", "handoff"]


def test_a_langgraph_instrument_failing_on_import_leaves_nothing_behind(run_python):
    code = BREAK_LLM_START + "LangGraphInstrumentor().instrument()\nimport langgraph.pregel\n" + LANGGRAPH_LEFT
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "False", "False", "error"]


def test_an_autogen_instrument_failing_part_way_leaves_nothing_behind(run_python):
    code = """
import autogen_agentchat
import orch_otel.integrations.autogen._agents as agents
def broken(recorder, handoff_type):
    raise RuntimeError('planted')
agents.handoff = broken
from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.teams._group_chat._base_group_chat import BaseGroupChat
from orch_otel.integrations.autogen import AutoGenInstrumentor
try:
    AutoGenInstrumentor().instrument()
except RuntimeError:
    print('raised')
print(type(vars(BaseGroupChat)['run_stream']).__name__, type(vars(BaseChatAgent)['run']).__name__)
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["raised", "function", "function"]


def test_an_agent_framework_instrument_failing_in_its_second_part_leaves_the_first_undone(run_python):
    """The framework's part was applied when the builders' part failed: a failed
    instrument() takes both back (BaseInstrumentor never calls uninstrument() after it)."""
    pytest.importorskip("agent_framework", reason="Agent Framework needs Python >= 3.11")
    code = """
import agent_framework, agent_framework_orchestrations
import orch_otel.integrations.agent_framework._managers as managers
def broken(recorder):
    raise RuntimeError('planted')
managers.speaker_choice = broken
from agent_framework import Agent
from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor
try:
    AgentFrameworkInstrumentor().instrument()
except RuntimeError:
    print('raised')
print(type(vars(Agent)['run']).__name__, AgentFrameworkInstrumentor().is_instrumented_by_opentelemetry)
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["raised", "function", "False"]
