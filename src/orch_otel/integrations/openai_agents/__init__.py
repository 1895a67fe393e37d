"""orch-otel instrumentation for the OpenAI Agents SDK (``openai-agents`` 0.24).

Records every top-level ``Runner.run`` / ``run_sync`` / ``run_streamed`` as
exactly one trace:

- the run (``invoke_workflow {workflow_name}``, ``orch.system`` =
  ``openai_agents``; the task id is the run config's ``group_id``, else the
  session's id, else the one ``orch_otel.task()`` names, so the runs of one
  session form one task),
- each agent segment (``invoke_agent {agent}``; a new one after every
  handoff, back-handoffs included),
- each model call (``chat {model}``) with that call's token usage and the
  exact input the model got (after handoff input filters),
- function tools (``execute_tool {tool}`` with the model's call ids; parallel
  calls overlap; a tool whose body raised is an error; an MCP server's tools
  name the server), local tools that are no functions (shell, computer,
  apply_patch, custom tools), and hosted tools' calls (run by the provider:
  inside the model call's span, marked hosted); a tool guardrail that rejects
  a call or withholds a result is named on the tool call, and its tripwire is
  the run's forced stop,
- handoffs as a delegation by the handing-off agent, its enabled handoffs as
  the options, plus the ``transfer_to_*`` tool call with the model's call id,
- agents as tools (and any run inside a tool or guardrail) as spawned
  sub-agents of the calling agent, inside the tool's span; a run inside a
  run the app records (``orch_otel.workflow()``, ``@workflow`` / ``@agent``)
  likewise has no root of its own: that run spawns its starting agent,
- stops: an agent's answer is its own voluntary ``end``; a tool_use_behavior
  stop is its voluntary stop naming the tool; guardrail tripwires and
  ``max_turns`` (raised, or answered by an error handler) are the run's
  forced stop naming the guardrail or the limit; a run that stops for a
  human's approval ends ``interrupt``, and its resume (a ``RunState`` input)
  starts with a human intervention.

It reads the run through run hooks it passes to each run (calling the app's
own hooks too) and a few steps of the run loop, not through the SDK's trace
processors: it records the same with the SDK's tracing disabled, and leaves
the SDK's own tracing (its processors, exporter and sensitive-data settings)
untouched. See ``docs/openai-agents.md``.

    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor
    OpenAIAgentsInstrumentor().instrument()

``orch_otel.instrument()`` does this for you when the SDK is installed. The
SDK is patched when ``agents`` is first imported (or at once if it is);
instrumenting imports no framework.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import partial
from typing import Any

from ...vocabulary import StopReason, ToolOutcome
from .._lazy import LazyInstrumentor, OnImport
from .._patch import Patches, recorder_for
from .package import _instruments

__all__ = ["OpenAIAgentsInstrumentor"]


class OpenAIAgentsInstrumentor(LazyInstrumentor):
    """Patches the OpenAI Agents SDK's runner so that each top-level run is
    one orchestration trace. ``instrument(tracer_provider=None)``: spans go
    through orch-otel's recorder, or a recorder on ``tracer_provider``."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _parts(self, **kwargs: Any) -> Sequence[OnImport]:
        return [OnImport("agents", partial(self._patch_sdk, **kwargs), "the OpenAI Agents SDK")]

    def _patch_sdk(self, patches: Patches, **kwargs: Any) -> None:
        # The SDK is imported only here: on its first import, after the dependency check.
        from agents import exceptions, run, run_state, tool
        from agents.lifecycle import AgentHooksBase, RunHooks, RunHooksBase
        from agents.run_internal import run_loop, tool_actions, tool_execution, tool_planning, turn_resolution

        from . import _approvals, _runs, _steps
        from ._hooks import hooks_class
        from ._local import local_tool

        recorder = recorder_for(kwargs.get("tracer_provider"))
        tripwires = {
            exceptions.InputGuardrailTripwireTriggered: StopReason.INPUT_GUARDRAIL_TRIPWIRE.value,
            exceptions.OutputGuardrailTripwireTriggered: StopReason.OUTPUT_GUARDRAIL_TRIPWIRE.value,
            exceptions.ToolInputGuardrailTripwireTriggered: StopReason.TOOL_INPUT_GUARDRAIL_TRIPWIRE.value,
            exceptions.ToolOutputGuardrailTripwireTriggered: StopReason.TOOL_OUTPUT_GUARDRAIL_TRIPWIRE.value,
        }

        def end(state: Any, error: BaseException | None, result: Any = None) -> None:
            _runs.finish(state, error, (exceptions.MaxTurnsExceeded,), tripwires, result)

        begin = _runs.beginner(recorder, hooks_class(RunHooks), (RunHooksBase, AgentHooksBase), run_state.RunState)
        patches.wrap(run.AgentRunner, "run", _runs.run_wrapper(begin, end))
        patches.wrap(run.AgentRunner, "run_streamed", _runs.run_streamed_wrapper(begin, end))

        patches.wrap(run_loop, "get_handoffs", _steps.enabled_handoffs())
        patches.wrap(run_loop, "get_all_tools", _steps.offered_tools())
        patches.wrap(tool_execution._FunctionToolBatchExecutor, "_execute_single_tool_body", _steps.function_tool())
        patches.wrap(tool, "maybe_invoke_function_tool_failure_error_function", _steps.tool_failure())
        patches.wrap(tool_execution, "_execute_tool_input_guardrails", _steps.tool_guardrails(ToolOutcome.REJECTED))
        patches.wrap(tool_execution, "_execute_tool_output_guardrails", _steps.tool_guardrails(ToolOutcome.WITHHELD))
        patches.wrap(turn_resolution, "check_for_final_output_from_tools", _steps.final_output_from_tools())
        for action in (tool_actions.ShellAction, tool_actions.LocalShellAction, tool_actions.ComputerAction,
                       tool_actions.ApplyPatchAction, tool_actions.CustomToolAction):
            patches.wrap(action, "execute", local_tool())
        for module in (run, run_loop):
            patches.wrap(module, "resolve_run_error_handler_result", _steps.error_handler())
        patches.wrap(run, "prepare_input_with_session", _runs.session_input(streamed=False))
        patches.wrap(run_loop, "prepare_input_with_session", _runs.session_input(streamed=True))  # start_streaming
        for module in (turn_resolution, tool_execution):  # a resumed turn's rejections, and a later call's
            patches.wrap(module, "resolve_approval_rejection_message", _approvals.rejected_tool())
        patches.wrap(tool_planning, "execute_mcp_approval_requests", _approvals.hosted_mcp_answers())
        self._patch_models(patches)
        from ._replay import seams

        seams(patches)

    @staticmethod
    def _patch_models(patches: Patches) -> None:
        """The model the provider says answered, where the SDK's OpenAI models fetch the response."""
        from agents.models import openai_chatcompletions, openai_responses
        from openai.types.chat import ChatCompletion
        from openai.types.responses import Response

        from ._fetched import fetched, streamed

        responses = (openai_responses.OpenAIResponsesModel, openai_responses.OpenAIResponsesWSModel)
        for cls in (*responses, openai_chatcompletions.OpenAIChatCompletionsModel):
            if "_fetch_response" in vars(cls):
                patches.wrap(cls, "_fetch_response", fetched((Response, ChatCompletion)))
        for cls in responses:
            if "stream_response" in vars(cls):
                patches.wrap(cls, "stream_response", streamed())
