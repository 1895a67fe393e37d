"""orch-otel instrumentation for AutoGen (``autogen-agentchat`` 0.7).

Records every ``team.run()`` / ``team.run_stream()`` as exactly one trace:

- the run (``invoke_workflow {team}``; a nested team is a spawned
  ``invoke_agent {team}`` inside the turn that runs it),
- each participant turn (``invoke_agent {agent}``, with name, id, class as
  role and description; the first turn of an agent inside a nested team is a
  spawn),
- the manager's speaker selections as delegate decisions (chosen speaker(s)
  and candidates; MagenticOne's orchestrator too), handoffs as the agent's
  delegation plus a ``HandoffMessage`` message to the target,
- messages relayed between participants (sender, recipients, type),
- tool executions (``execute_tool {tool}`` with call ids; tools of any
  workbench too) and model calls (``chat {model}`` with token usage, and the
  model id the server answered with for OpenAI clients) through any
  ``ChatCompletionClient``,
- a person's answers (a ``UserProxyAgent``, or a user's ``HandoffMessage``
  resuming a swarm) as human interventions, never as an agent's turns,
- GraphFlow fan-out (fan-out index and size) and fan-in (aggregate), and the
  SocietyOfMind summary (aggregate of the inner team),
- the stop decision with its reason: the termination condition's
  ``stop_reason`` text (max turns included), ``cancelled`` or ``error``,
  forced (a limit) or voluntary; a voluntary stop fired by an agent's message
  is also that agent's own stop decision.

AutoGen's own spans are suppressed while instrumented (see
``docs/autogen.md``); ``instrument(runtime_spans=True)`` keeps its runtime
messaging spans, parented to the run. A runtime given its own
``tracer_provider`` keeps its runtime spans untouched.

    from orch_otel.integrations.autogen import AutoGenInstrumentor
    AutoGenInstrumentor().instrument()

``orch_otel.instrument()`` does this for you when AutoGen is installed.
Instrument before a team's first run: AutoGen binds its message handlers when
the runtime creates the team's agents. AutoGen is patched when
``autogen_agentchat`` is first imported (or at once if it is); instrumenting
imports no framework.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Sequence
from functools import partial
from typing import Any

from .._lazy import LazyInstrumentor, OnImport
from .._patch import Patches, recorder_for
from .package import _instruments

__all__ = ["AutoGenInstrumentor"]


class AutoGenInstrumentor(LazyInstrumentor):
    """Patches AutoGen agentchat so that each team run is one orchestration trace.

    ``instrument(tracer_provider=None, runtime_spans=False)``: spans go through
    orch-otel's recorder (or a recorder on ``tracer_provider``); with
    ``runtime_spans=True`` AutoGen's runtime messaging spans are kept inside
    the run's trace instead of being suppressed. Either way, a runtime given
    its own ``tracer_provider`` (not the global one, not this one) keeps its
    runtime spans exactly as AutoGen makes them.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _parts(self, **kwargs: Any) -> Sequence[OnImport]:
        return [OnImport("autogen_agentchat", partial(self._patch_autogen, **kwargs), "AutoGen")]

    def _patch_autogen(self, patches: Patches, **kwargs: Any) -> None:
        # The frameworks are imported only here: on their first import, after the dependency check.
        from autogen_agentchat.agents import AssistantAgent, BaseChatAgent, SocietyOfMindAgent, UserProxyAgent
        from autogen_agentchat.base import Handoff, Response, TaskResult, Team
        from autogen_agentchat.messages import BaseChatMessage, HandoffMessage
        from autogen_agentchat.teams._group_chat._base_group_chat import BaseGroupChat
        from autogen_agentchat.teams._group_chat._base_group_chat_manager import BaseGroupChatManager
        from autogen_agentchat.teams._group_chat._chat_agent_container import ChatAgentContainer
        from autogen_agentchat.teams._group_chat._events import GroupChatAgentResponse, GroupChatRequestPublish
        from autogen_agentchat.teams._group_chat._graph._digraph_group_chat import GraphFlowManager
        from autogen_agentchat.teams._group_chat._magentic_one._magentic_one_orchestrator import (
            MagenticOneOrchestrator,
        )
        from autogen_agentchat.teams._group_chat._round_robin_group_chat import RoundRobinGroupChatManager
        from autogen_agentchat.teams._group_chat._selector_group_chat import SelectorGroupChatManager
        from autogen_agentchat.teams._group_chat._swarm_group_chat import SwarmGroupChatManager
        from autogen_core._telemetry._tracing import TraceHelper
        from autogen_core.models import ChatCompletionClient, CreateResult
        from autogen_core.tools import BaseStreamTool, BaseTool, StaticStreamWorkbench, StaticWorkbench, ToolResult, Workbench

        from . import _agents, _builtin, _managers, _runs, _stops, _workbenches
        from ._clients import ClientPatcher
        from ._firstsight import Sightings
        from ._workbenches import WorkbenchPatcher

        try:  # the offline client used in tests and examples: patch it up front
            importlib.import_module("autogen_ext.models.replay")
        except ImportError:
            pass

        recorder = recorder_for(kwargs.get("tracer_provider"))
        clients = ClientPatcher(recorder, patches, ChatCompletionClient, CreateResult)
        workbenches = WorkbenchPatcher(recorder, patches, Workbench, ToolResult, (StaticWorkbench, StaticStreamWorkbench))
        sightings = Sightings((clients, workbenches))
        nested_types = (Team, SocietyOfMindAgent)

        # Runs and turns.
        patches.wrap(BaseGroupChat, "run_stream", _runs.team_run_stream(recorder, sightings, TaskResult, nested_types,
                                                                           HandoffMessage))
        patches.wrap(BaseChatAgent, "run", _runs.agent_run(recorder, sightings))
        patches.wrap(BaseChatAgent, "run_stream", _runs.agent_run_stream(recorder, sightings, TaskResult))
        patches.wrap(ChatAgentContainer, "handle_request", _runs.handle_request(recorder, Team, UserProxyAgent))

        # Managers: delegation, messages, aggregation, stop.
        responses = _managers.agent_response(recorder, HandoffMessage, GroupChatAgentResponse, BaseChatMessage)
        no_choice = (RoundRobinGroupChatManager, SwarmGroupChatManager)  # the order / the handoff decides
        patches.wrap(BaseGroupChatManager, "_log_speaker_selection",
                     _managers.selection(recorder, GraphFlowManager, no_choice))
        patches.wrap(GraphFlowManager, "update_message_thread", _managers.graph_activations())
        patches.wrap(SelectorGroupChatManager, "_select_speaker", _managers.selector_candidates())
        patches.wrap(SelectorGroupChatManager, "select_speaker", _managers.selector_choice())
        patches.wrap(BaseGroupChatManager, "_signal_termination",
                     _managers.termination(recorder, GraphFlowManager, MagenticOneOrchestrator))
        patches.wrap(BaseGroupChatManager, "_signal_termination_with_error", _managers.termination_with_error())
        for manager in (BaseGroupChatManager, MagenticOneOrchestrator):
            patches.wrap(manager, "handle_start", _managers.in_run_context())
            patches.wrap(manager, "handle_agent_response", responses)
        patches.wrap(MagenticOneOrchestrator, "publish_message",
                     _managers.magentic_one_publish(recorder, GroupChatRequestPublish, GroupChatAgentResponse))
        patches.wrap(MagenticOneOrchestrator, "_orchestrate_step", _managers.magentic_one_step())
        patches.wrap(MagenticOneOrchestrator, "_prepare_final_answer", _managers.magentic_one_final_answer())

        # Termination conditions: which one fired, on whose message.
        for condition in _stops.CONDITION_CLASSES:
            if "__call__" in vars(condition):
                patches.wrap(condition, "__call__", _stops.condition_call())

        # Agents: tools, handoffs, SocietyOfMind summaries, model calls.
        patches.wrap(StaticWorkbench, "call_tool", _workbenches.static_call_tool())
        patches.wrap(BaseTool, "run_json", _agents.run_json(recorder, Handoff))
        patches.wrap(BaseStreamTool, "run_json_stream", _agents.run_json_stream(recorder))
        patches.wrap(AssistantAgent, "_check_and_handle_handoff", _agents.handoff(recorder, HandoffMessage))
        patches.wrap(SocietyOfMindAgent, "on_messages_stream", _agents.society_of_mind(recorder, Response))
        clients.patch_loaded()
        workbenches.patch_loaded()

        # AutoGen's built-in spans.
        for module, name in _builtin.GENAI_SPAN_SITES:
            patches.wrap(importlib.import_module(module), name, _builtin.suppress)
        patches.wrap(TraceHelper, "trace_block", _builtin.runtime_span_wrapper(
            bool(kwargs.get("runtime_spans")), kwargs.get("tracer_provider")))
