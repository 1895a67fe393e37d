"""orch-otel instrumentation for Microsoft Agent Framework (``agent-framework-core``
1.26+, with ``agent-framework-orchestrations`` 1.4+ for the builders).

Records every ``Workflow.run()`` (streaming or not, and each ``responses=`` /
``checkpoint_id=`` continuation) as one trace, and every top-level
``Agent.run()`` as one trace:

- the run (``invoke_workflow {workflow}``, ``orch.system=agent_framework``),
- each agent run (``invoke_agent {agent}``): a participant's turn in a
  workflow, or a spawned sub-agent inside another agent's tool call
  (``as_tool``),
- model calls (``chat {model}`` with usage and the response model) and tool
  calls (``execute_tool {tool}`` with the model's call id, handoff tools
  included),
- routing along edges as the workflow's delegations (one per delivery, the
  edge group's agent targets as options; a fan-out is one decision) and
  fan-in as the workflow's aggregate,
- the run's stop: ``end``, ``interrupt`` (idle with a pending ``request_info``),
  ``cancelled``, ``recursion_limit`` (the superstep limit) or ``error``.

The framework's own spans are suppressed while instrumented (without its
sticky ``disable_instrumentation()``); ``instrument(runtime_spans=True)``
keeps those made inside a run, nested under orch-otel's (``docs/agent-framework.md``).

    from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor
    AgentFrameworkInstrumentor().instrument()

``orch_otel.instrument()`` does this for you when the framework is installed.
It is patched when ``agent_framework`` is first imported (or at once if it
is); instrumenting imports no framework.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Sequence
from functools import partial
from typing import Any

from .._lazy import LazyInstrumentor, OnImport
from .._patch import Patches, recorder_for
from .package import _instruments

__all__ = ["AgentFrameworkInstrumentor"]


class AgentFrameworkInstrumentor(LazyInstrumentor):
    """Patches Microsoft Agent Framework so that each workflow or agent run is one orchestration trace.

    ``instrument(tracer_provider=None, runtime_spans=False)``: spans go through
    orch-otel's recorder (or a recorder on ``tracer_provider``); with
    ``runtime_spans=True`` the framework's own spans made inside a run are
    kept, nested under orch-otel's, instead of being suppressed.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _parts(self, **kwargs: Any) -> Sequence[OnImport]:
        return [OnImport("agent_framework", partial(self._patch_framework, **kwargs), "Agent Framework"),
                # The builders are a package of their own, imported after the framework (or never).
                OnImport("agent_framework_orchestrations", partial(self._patch_orchestrations, **kwargs),
                         "Agent Framework orchestrations")]

    def _patch_framework(self, patches: Patches, **kwargs: Any) -> None:
        # The framework is imported only here: on its first import, after the dependency check.
        from agent_framework import Agent, BaseChatClient, ChatResponse, RawAgent
        from agent_framework._workflows._agent_executor import AgentExecutor
        from agent_framework._workflows._edge import Edge
        from agent_framework._workflows._edge_runner import (
            EdgeRunner,
            FanInEdgeRunner,
            FanOutEdgeRunner,
            SingleEdgeRunner,
        )
        from agent_framework._workflows._runner import RunnerImpl  # (its public name, Runner, is deprecated)
        from agent_framework._workflows._workflow import Workflow
        from agent_framework._workflows._workflow_context import WorkflowContext
        from agent_framework.exceptions import WorkflowConvergenceException

        from . import _agents, _builtin, _models, _tools, _workflows

        recorder = recorder_for(kwargs.get("tracer_provider"))

        # The framework's own spans (first: nothing below may make one unsuppressed).
        patches.wrap(importlib.import_module("agent_framework.observability"), "get_tracer",
                     _builtin.tracer_wrapper(bool(kwargs.get("runtime_spans")), kwargs.get("tracer_provider")))

        # Agents, model calls, tool calls.
        patches.wrap(Agent, "run", _agents.agent_run(recorder))
        patches.wrap(RawAgent, "run", _agents.agent_run(recorder, recorded_above=Agent))
        for method in ("_run_agent", "_run_agent_streaming"):  # agents of other classes in a workflow
            patches.wrap(AgentExecutor, method, _agents.executor_turn(recorder, RawAgent))
        patches.wrap(BaseChatClient, "get_response", _models.chat_call(recorder, ChatResponse))
        tools_module = importlib.import_module("agent_framework._tools")
        patches.wrap(tools_module, "_execute_single_function_call", _tools.tool_call(recorder))
        patches.wrap(tools_module, "_ensure_function_invocation_limit_fallback_response", _tools.tool_loop_limit())

        # Workflows: runs, routing, fan-in.
        patches.wrap(Workflow, "_run_core", _workflows.workflow_run(recorder, AgentExecutor, WorkflowConvergenceException))
        for runner in (SingleEdgeRunner, FanOutEdgeRunner, FanInEdgeRunner):
            patches.wrap(runner, "send_message", _workflows.send_message())
        patches.wrap(Edge, "should_route", _workflows.should_route())
        patches.wrap(EdgeRunner, "_execute_on_target", _workflows.execute_on_target(recorder))
        patches.wrap(WorkflowContext, "request_info", _workflows.request_info(recorder))
        patches.wrap(RunnerImpl, "create_checkpoint_if_enabled", _workflows.checkpoint(recorder))

    def _patch_orchestrations(self, patches: Patches, **kwargs: Any) -> None:
        from agent_framework_orchestrations._base_group_chat_orchestrator import BaseGroupChatOrchestrator
        from agent_framework_orchestrations._group_chat import AgentBasedGroupChatOrchestrator
        from agent_framework_orchestrations._handoff import HandoffAgentExecutor
        from agent_framework_orchestrations._magentic import MagenticOrchestrator

        from . import _managers

        recorder = recorder_for(kwargs.get("tracer_provider"))
        patches.wrap(BaseGroupChatOrchestrator, "_send_request_to_participant", _managers.speaker_choice(recorder))
        patches.wrap(BaseGroupChatOrchestrator, "_check_terminate_and_yield", _managers.termination_condition(recorder))
        patches.wrap(BaseGroupChatOrchestrator, "_check_round_limit_and_yield", _managers.round_limit(recorder))
        patches.wrap(AgentBasedGroupChatOrchestrator, "_check_agent_terminate_and_yield",
                     _managers.manager_terminates(recorder))
        patches.wrap(MagenticOrchestrator, "_check_within_limits_or_complete", _managers.magentic_limits(recorder))
        patches.wrap(MagenticOrchestrator, "_prepare_final_answer", _managers.magentic_final_answer(recorder))
        patches.wrap(HandoffAgentExecutor, "_should_terminate", _managers.handoff_termination(recorder))
