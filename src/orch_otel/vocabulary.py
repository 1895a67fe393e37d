"""The one vocabulary of orch-otel: event kinds, decision kinds, stop reasons,
edge kinds, every span attribute key, and the shape of a tool definition.

Attribute keys follow the OpenTelemetry GenAI semantic conventions where they
exist (``gen_ai.*``). Orchestration facts those conventions lack live under
the single project namespace ``orch.``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = [
    "Attr",
    "Channel",
    "DecisionKind",
    "EdgeKind",
    "EventKind",
    "Operation",
    "RewardUnit",
    "SpanEvent",
    "Status",
    "StopReason",
    "System",
    "Topology",
    "TransferMode",
    "ToolOutcome",
    "TransferTarget",
    "function_tool",
]


class _StrEnum(str, Enum):
    def __str__(self) -> str:  # "spawn", not "DecisionKind.SPAWN"
        return self.value


class EventKind(_StrEnum):
    """Event ``type`` values of the seed trace schema."""

    ORCHESTRATOR_DECISION = "orchestrator_decision"
    SPAWN = "spawn"
    DESPAWN = "despawn"
    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    RETURN = "return"
    AGGREGATE = "aggregate"
    HUMAN_INTERVENTION = "human_intervention"
    SAFETY_EVENT = "safety_event"


class EdgeKind(_StrEnum):
    """Edge ``type`` values of the seed trace schema."""

    TEMPORAL = "temporal"
    CAUSAL = "causal"
    SPAWN = "spawn"
    MESSAGE = "message"
    TOOL_DEPENDENCY = "tool_dependency"
    RETURN = "return"
    AGGREGATE = "aggregate"
    SAFETY_FLOW = "safety_flow"


class System(_StrEnum):
    """``orch.system`` values: the framework an integration records. A
    framework's name is its PyPI distribution's in snake case."""

    LANGGRAPH = "langgraph"
    AUTOGEN = "autogen"
    OPENAI_AGENTS = "openai_agents"  # openai-agents: not "openai", which is the model provider
    CUSTOM = "custom"


class Topology(_StrEnum):
    """Trace ``topology`` values of the seed trace schema."""

    CENTRALIZED = "centralized"
    PLANNER_EXECUTOR_CRITIC = "planner_executor_critic"
    DEBATE = "debate"
    SWARM = "swarm"
    HIERARCHICAL = "hierarchical"
    HARNESS = "harness"
    MIXED = "mixed"
    UNKNOWN = "unknown"


class DecisionKind(_StrEnum):
    """The five orchestration sub-decisions of the paper."""

    SPAWN = "spawn"
    DELEGATE = "delegate"
    COMMUNICATE = "communicate"
    AGGREGATE = "aggregate"
    STOP = "stop"


class StopReason(_StrEnum):
    """Common stop reasons. Any non-empty text is a valid reason (for example an
    AutoGen termination condition's own ``stop_reason``)."""

    END = "end"
    MAX_TURNS = "max_turns"
    RECURSION_LIMIT = "recursion_limit"
    INTERRUPT = "interrupt"
    ERROR = "error"
    CANCELLED = "cancelled"
    INCOMPLETE = "incomplete"  # the run's root span never ended (crash, kill, memory bound)
    # A guardrail's tripwire ended the run (the stop's source names the guardrail): on the
    # agent's input or answer, or on one tool call's arguments or result.
    INPUT_GUARDRAIL_TRIPWIRE = "input_guardrail_tripwire"
    OUTPUT_GUARDRAIL_TRIPWIRE = "output_guardrail_tripwire"
    TOOL_INPUT_GUARDRAIL_TRIPWIRE = "tool_input_guardrail_tripwire"
    TOOL_OUTPUT_GUARDRAIL_TRIPWIRE = "tool_output_guardrail_tripwire"


# Stops the orchestrator did not choose: a budget, a failure, a kill or a pause
# ended the run. A stop with one of these reasons is forced whatever recorded it.
FORCED_STOP_REASONS = frozenset({
    StopReason.MAX_TURNS.value,
    StopReason.RECURSION_LIMIT.value,
    StopReason.ERROR.value,
    StopReason.CANCELLED.value,
    StopReason.INCOMPLETE.value,
    StopReason.INTERRUPT.value,
})


class Operation(_StrEnum):
    """``gen_ai.operation.name`` values used for orch-otel spans."""

    INVOKE_WORKFLOW = "invoke_workflow"
    INVOKE_AGENT = "invoke_agent"
    EXECUTE_TOOL = "execute_tool"
    CHAT = "chat"


class TransferMode(_StrEnum):
    """``gen_ai.transfer.mode``: does control come back to the agent that called the tool?"""

    RETURN_TO_CALLER = "return_to_caller"
    PASS_CONTROL = "pass_control"  # a handoff: the target owns the rest of the work


class TransferTarget(_StrEnum):
    """``gen_ai.transfer.target.type``: what a transfer hands the work to."""

    AGENT = "agent"
    HUMAN = "human"
    WORKFLOW = "workflow"


class Channel(_StrEnum):
    """What a ``message`` event travels on: between agents, or agent to model."""

    AGENT = "agent"
    LLM = "llm"


class ToolOutcome(_StrEnum):
    """``orch.outcome`` of a tool call a guardrail stopped: the call was
    rejected before the tool ran, or the tool ran and its result was kept
    from the model (replaced by the guardrail's message, or the run ended)."""

    REJECTED = "rejected"
    WITHHELD = "withheld"


class Status(_StrEnum):
    OK = "ok"
    ERROR = "error"


class Attr:
    """Span and span-event attribute keys."""

    # OpenTelemetry GenAI semantic conventions.
    OPERATION = "gen_ai.operation.name"
    PROVIDER = "gen_ai.provider.name"
    AGENT_NAME = "gen_ai.agent.name"
    AGENT_ID = "gen_ai.agent.id"
    AGENT_DESCRIPTION = "gen_ai.agent.description"
    CONVERSATION_ID = "gen_ai.conversation.id"
    TOOL_NAME = "gen_ai.tool.name"
    TOOL_CALL_ID = "gen_ai.tool.call.id"
    TOOL_TYPE = "gen_ai.tool.type"
    TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"  # opt-in content
    TOOL_CALL_RESULT = "gen_ai.tool.call.result"  # opt-in content
    REQUEST_MODEL = "gen_ai.request.model"
    RESPONSE_MODEL = "gen_ai.response.model"
    INPUT_TOKENS = "gen_ai.usage.input_tokens"
    OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
    INPUT_MESSAGES = "gen_ai.input.messages"  # opt-in content
    OUTPUT_MESSAGES = "gen_ai.output.messages"  # opt-in content
    TOOL_DEFINITIONS = "gen_ai.tool.definitions"  # opt-in content: the tools offered to the model
    WORKFLOW_NAME = "gen_ai.workflow.name"
    # The transfer refinement of execute_tool and the caller of a remote invoke_agent: newest
    # conventions, not yet released, so written only with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental.
    TRANSFER_MODE = "gen_ai.transfer.mode"  # TransferMode
    TRANSFER_TARGET_TYPE = "gen_ai.transfer.target.type"  # TransferTarget
    TRANSFER_TARGET_NAME = "gen_ai.transfer.target.name"
    CALLER_TYPE = "gen_ai.caller.type"
    CALLER_NAME = "gen_ai.caller.name"
    ERROR_TYPE = "error.type"
    EXCEPTION_TYPE = "exception.type"
    EXCEPTION_MESSAGE = "exception.message"  # opt-in content, redacted
    EXCEPTION_STACKTRACE = "exception.stacktrace"  # opt-in content, redacted
    EXCEPTION_ESCAPED = "exception.escaped"

    # Project namespace: orchestration facts the GenAI conventions lack.
    SYSTEM = "orch.system"  # framework that produced the run: a System value
    TOPOLOGY = "orch.topology"
    TASK_ID = "orch.task.id"
    AGENT_ROLE = "orch.agent.role"
    AGENT_SPAWNED = "orch.agent.spawned"  # this agent span is a spawned sub-agent
    FANOUT_INDEX = "orch.fanout.index"
    FANOUT_SIZE = "orch.fanout.size"
    DECISION = "orch.decision"  # DecisionKind
    TARGETS = "orch.targets"  # chosen agents (delegate / spawn / communicate)
    OPTIONS = "orch.options"  # candidate agents, where known
    STOP_REASON = "orch.stop.reason"
    STOP_SOURCE = "orch.stop.source"  # the condition or component that decided to stop
    STOP_FORCED = "orch.stop.forced"  # true: a limit (turns, tokens, time, recursion) ended the run, not a choice
    ROUTER = "orch.decision.router"  # the routing function (a LangGraph conditional edge) whose result decided
    ROUTER_CALL = "orch.decision.router_call"  # which call of that routing function in the run (1, 2, ...)
    HANDOFF_TOOLS = "orch.decision.handoff_tools"  # "tool=agent" per handoff tool the deciding agent was given
    SENDER = "orch.message.sender"
    RECIPIENTS = "orch.message.recipients"
    MESSAGE_TYPE = "orch.message.type"
    SOURCES = "orch.aggregate.sources"
    CONTENT_REF = "orch.content.ref"
    CONTENT = "orch.content"  # opt-in content, JSON text
    INPUT_REF = "orch.input.ref"
    RUN_INPUT = "orch.input"  # opt-in content: a run's input (what a replay feeds the app again)
    OUTPUT_REF = "orch.output.ref"
    TOOLS_REF = "orch.tools.ref"  # ref of gen_ai.tool.definitions
    TOKENS_REF = "orch.tokens.ref"  # ref of a model call's token ids and logprobs (local content store only)
    REWARD_VALUE = "orch.reward.value"
    REWARD_NAME = "orch.reward.name"
    REWARD_UNIT = "orch.reward.unit"
    REWARD_TARGET = "orch.reward.target"
    OUTCOME = "orch.outcome"  # ok | error | cancelled | interrupted | handoff | ToolOutcome
    RESUME_OF = "orch.resume.of_trace_id"
    AWAITING = "orch.approval.awaiting"  # on an interrupted run's root: the tool call ids awaiting a human's approval
    APPROVED = "orch.approval.approved"  # on a human intervention: the tool call ids the human approved
    REJECTED = "orch.approval.rejected"  # ... and those it rejected (ids, not content)
    LINK = "orch.link"  # on a span link: what the linked span is to this one ("resume_of": the interrupted run)
    SAFETY_KIND = "orch.safety.kind"
    TOOL_HOSTED = "orch.tool.hosted"  # true: the model's provider ran the tool inside the model call
    TOOL_SERVER = "orch.tool.server"  # the MCP server whose tool this is (its name, or a hosted server's label)
    GUARDRAIL = "orch.guardrail"  # on a tool call: the guardrail that rejected it or withheld its result
    IMPLIED = "orch.implied"  # on a decision, message or aggregate event: inferred from a foreign log, not recorded
    RECORDED_BY = "orch.recorded_by"  # on a foreign log's rewritten root: the instrumentation that wrote it

    # Interop: OpenInference's span kind, on workflow roots only, so Phoenix (which maps
    # gen_ai.operation.name to its kinds but has no kind for invoke_workflow) shows them as chains.
    OPENINFERENCE_SPAN_KIND = "openinference.span.kind"


class SpanEvent:
    """Names of the span events that carry instant orchestration moments."""

    DECISION = "orch.decision"
    MESSAGE = "orch.message"
    AGGREGATE = "orch.aggregate"
    HUMAN_INTERVENTION = "orch.human_intervention"
    REWARD = "orch.reward"
    SAFETY = "orch.safety"
    EXCEPTION = "exception"  # OpenTelemetry's exception event, written by the recorder itself


OPENINFERENCE_CHAIN = "CHAIN"  # the OpenInference kind of a run of several steps

INSTRUMENTATION_NAME = "orch_otel"
MAX_NAME_CHARS = 256
"""Longest name, reason or id a trace keeps (agent, tool and model names,
stop reasons, task and call ids, ...): a longer one is cut to this many
characters, ending in an ellipsis, by the converter and by the HTML view."""

AGENT_FRAMEWORK_SYSTEM = "agent_framework"  # orch.system of Microsoft Agent Framework runs: its import package and tracer name
HUMAN_AGENT = "human"
RESUME_LINK = "resume_of"  # Attr.LINK on a resumed run's link to the run it resumes


class RewardUnit(_StrEnum):
    """``unit`` of ``orch_otel.reward()``: whom a reward is for. The first
    four are honoured (the trace keeps them, the datasets credit them); the
    finer units have no target the trace can name, so such rewards are not
    recorded (a warning says so once)."""

    TEAM = "team"
    ORCHESTRATOR = "orchestrator"
    AGENT = "agent"
    ROLE = "role"
    TURN = "turn"
    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    TOKEN = "token"


CREDITED_REWARD_UNITS = frozenset({RewardUnit.TEAM.value, RewardUnit.ORCHESTRATOR.value, RewardUnit.AGENT.value,
                                   RewardUnit.ROLE.value})
ROLE_TARGET = "role:"  # trace reward "NAME@role:ROLE": a reward for every agent playing ROLE


def function_tool(name: str, description: str = "", parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool definition in the OpenAI function format, the one chat datasets
    (TRL, verl) take; no parameters means an object with none."""
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": parameters or {"type": "object", "properties": {}}}}
