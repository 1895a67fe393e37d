"""The frameworks' own test suites that run.py runs with and without orch-otel.

Each suite comes from the sdist of ``dist`` at the version installed in the
project's venv. ``targets`` are paths or node ids relative to the sdist's root;
``named`` are node ids (issues 15 and 16 name them) that must be collected in
both runs and pass in the plain one, so a rename upstream or a broken test
environment fails loudly instead of silently testing nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Suite:
    name: str
    dist: str
    targets: tuple[str, ...]
    named: tuple[str, ...] = ()
    # (node id, why it is left out): the same in both runs
    deselect: tuple[tuple[str, str], ...] = ()
    timeout_s: int = 600
    # put stand_ins/ (helpers the sdist's tests import but PyPI lacks) on sys.path
    stand_ins: bool = False
    # distributions that must look uninstalled to these tests (plugins/host_hide_dists.py)
    hide_dists: tuple[str, ...] = ()
    # the venv the suite runs in: None for .venv-hosts, else a venv of its own (VENVS), for a
    # framework whose pins cannot share one with the others
    venv: str | None = None


@dataclass(frozen=True)
class Venv:
    """A suite venv of its own: the project with ``extras``, and the suite's test
    dependencies from ``requirements`` (a file beside this one), pinned to .venv's versions."""

    path: str  # relative to the repository
    extras: str
    requirements: str


VENVS = {
    # The OpenAI Agents SDK needs openai 3 and mcp 2; autogen's tests need both below 2.
    "openai-agents": Venv(".venv-hosts-openai-agents", "openai-agents", "requirements-openai-agents.txt"),
}


LANGCHAIN_CORE_RUNNABLES = "tests/unit_tests/runnables"
_TIKTOKEN_DOWNLOAD = "tiktoken downloads its encoding files when first used; there is no network here"

SUITES: tuple[Suite, ...] = (
    Suite(name="langgraph-supervisor", dist="langgraph-supervisor", targets=("tests",)),
    Suite(name="langgraph-swarm", dist="langgraph-swarm", targets=("tests",)),
    # The OpenAI Agents SDK's runner, hooks, agents as tools, handoffs, guardrails, limits,
    # tool_use_behavior, run state, tools beyond function tools and its own tracing (what
    # orch-otel wraps or must leave alone): 27 files, about 1650 tests, a minute a run. Its
    # whole suite is 391 files.
    Suite(
        name="openai-agents",
        dist="openai-agents",
        venv="openai-agents",
        targets=tuple(f"tests/{name}.py" for name in (
            "test_agent_runner", "test_agent_runner_streamed", "test_agent_runner_sync", "test_agent_hooks",
            "test_agent_llm_hooks", "test_agent_as_tool", "test_run_hooks", "test_guardrails", "test_handoff_tool",
            "test_max_turns", "test_tool_use_behavior", "test_tracing", "test_tracing_errors",
            "test_tracing_errors_streamed", "test_runner_tracing_disabled", "test_run_step_execution",
            "test_agent_tracing", "test_run_state", "test_trace_processor",
            # tools beyond function tools: tool guardrails, shell, computer, apply_patch, custom and MCP tools
            "test_tool_guardrails", "test_agent_as_tool_output_guardrails", "test_shell_tool", "test_local_shell_tool",
            "test_computer_action", "test_apply_patch_tool", "test_custom_tool", "test_mcp_tool_metadata",
        )),
        named=("tests/test_run_hooks.py::test_async_run_hooks_with_llm",
               "tests/test_run_hooks.py::test_runner_run_rejects_agent_hooks",
               "tests/test_run_hooks.py::test_runner_run_streamed_rejects_agent_hooks"),
    ),
    Suite(name="autogen-agentchat", dist="autogen-agentchat", targets=("tests",)),
    # autogen-core: the runtime orch-otel hooks into, and its own telemetry on
    # a user's provider (issue 16); autogen_test_utils is not on PyPI, see
    # stand_ins/.
    Suite(
        name="autogen-core",
        dist="autogen-core",
        targets=("tests",),
        named=("tests/test_runtime.py::test_register_receives_publish",),
        deselect=tuple((f"tests/test_model_context.py::{name}", _TIKTOKEN_DOWNLOAD) for name in (
            "test_token_limited_model_context_with_token_limit",
            "test_token_limited_model_context_without_token_limit",
            "test_token_limited_model_context_openai_with_function_result",
        )),
        stand_ins=True,
    ),
    # The four langchain-core test files that hold the tests issue 15 names
    # (async LLM callbacks seen by the other handlers: astream_events,
    # astream_log, a user's own handler), run whole: about a minute a run.
    # Its snapshots expect `langchain` not to be installed (else its version is
    # in every fake LLM's metadata): hidden, so 12 more tests can pass.
    Suite(
        name="langchain-core",
        dist="langchain-core",
        hide_dists=("langchain",),
        targets=(
            "tests/unit_tests/language_models/llms/test_base.py",
            f"{LANGCHAIN_CORE_RUNNABLES}/test_runnable.py",
            f"{LANGCHAIN_CORE_RUNNABLES}/test_runnable_events_v1.py",
            f"{LANGCHAIN_CORE_RUNNABLES}/test_runnable_events_v2.py",
        ),
        named=(
            "tests/unit_tests/language_models/llms/test_base.py::test_async_batch_size",
            f"{LANGCHAIN_CORE_RUNNABLES}/test_runnable.py::test_stream_log_retriever",
            f"{LANGCHAIN_CORE_RUNNABLES}/test_runnable.py::test_map_astream",
            f"{LANGCHAIN_CORE_RUNNABLES}/test_runnable.py::test_higher_order_lambda_runnable_async",
            f"{LANGCHAIN_CORE_RUNNABLES}/test_runnable_events_v1.py::test_with_llm",
            f"{LANGCHAIN_CORE_RUNNABLES}/test_runnable_events_v2.py::test_with_llm",
        ),
    ),
)
