"""OpenAI Agents SDK runs as OpenInference and OpenLLMetry log them: both
turn the SDK's own trace (its task, agent, turn, generation, function and
handoff spans) into OTel spans from a trace processor.

What each gives (``docs/foreign-logs.md`` has the measured table):

- OpenInference: the workflow (the root span, named after the run config's
  workflow), an ``AGENT`` span per agent segment (``agent.name``), ``LLM``
  spans, ``TOOL`` spans (``tool.name``; no call id) and a ``handoff to X``
  ``TOOL`` span whose ``output.value`` is the receiving agent. An agent run
  inside a tool (``Agent.as_tool``) sits under the tool's span: a sub-agent
  spawned by the calling agent.
- OpenLLMetry: GenAI-convention spans (``invoke_agent``, ``execute_tool``,
  ``chat``) under an ``Agent Workflow`` root, and a ``handoff`` span that
  names only the agent handing off (its target is unknown when the span
  starts): the delegation's target is the agent whose segment starts next
  (implied). Agents run inside tools hang from the workflow, not from the
  tool, so they read as the workflow's own agents.

Neither records call ids, a handoff's options, or why the run stopped (the
converter's implied end of the run stands in)."""

from __future__ import annotations

from typing import Any

from ..content import ContentPolicy
from ..spans import SpanRecord
from ..vocabulary import Attr, DecisionKind, Operation, System
from ._genai import genai_span
from ._native import agent_attrs, count, decision, native, put_content

OPENINFERENCE_SCOPE = "openinference.instrumentation.openai_agents"
OPENLLMETRY_SCOPE = "opentelemetry.instrumentation.openai_agents"
_OI_KIND = "openinference.span.kind"
_HANDOFF_PREFIX = "handoff to "


def map_openai_agents(spans: list[SpanRecord], recorded_by: str, policy: ContentPolicy | None) -> list[SpanRecord]:
    by_id = {s.span_id: s for s in spans}
    root = min(spans, key=lambda s: (s.parent_id in by_id, s.start_ns, s.span_id))
    mapper = _openinference if any(s.scope == OPENINFERENCE_SCOPE for s in spans) else _openllmetry
    out = []
    for span in spans:
        mapped = mapper(span, span is root, by_id, spans, policy)
        if span is root:
            base = mapped if mapped is not None else native(span, agent_attrs(span.name, workflow=True))
            mapped = native(base, {**base.attributes, Attr.SYSTEM: System.OPENAI_AGENTS.value,
                                   Attr.RECORDED_BY: recorded_by})
        out.append(mapped if mapped is not None else span)
    return out


def _openinference(span: SpanRecord, is_root: bool, by_id: dict[str, SpanRecord], spans: list[SpanRecord],
                   policy: ContentPolicy | None) -> SpanRecord | None:
    attrs = span.attributes
    kind = attrs.get(_OI_KIND)
    if is_root:
        return native(span, agent_attrs(span.name, workflow=True))
    if kind == "AGENT" and isinstance(attrs.get("agent.name"), str):
        return native(span, agent_attrs(attrs["agent.name"], spawned=_inside_agent(span, by_id)))
    if kind == "LLM":
        out: dict[str, Any] = {Attr.OPERATION: Operation.CHAT.value,
                               Attr.REQUEST_MODEL: str(attrs.get("llm.model_name") or "unknown")}
        for key, source in ((Attr.INPUT_TOKENS, "llm.token_count.prompt"),
                            (Attr.OUTPUT_TOKENS, "llm.token_count.completion")):
            if count(attrs.get(source)) is not None:
                out[key] = attrs[source]
        return native(span, out)
    if kind == "TOOL" and span.name.startswith(_HANDOFF_PREFIX):
        target = attrs.get("output.value")
        target = target if isinstance(target, str) and target else span.name[len(_HANDOFF_PREFIX):]
        return native(span, {}, [decision(span.start_ns, DecisionKind.DELEGATE, [target])])
    if kind == "TOOL" and isinstance(attrs.get("tool.name"), str):
        out = {Attr.OPERATION: Operation.EXECUTE_TOOL.value, Attr.TOOL_NAME: attrs["tool.name"]}
        put_content(out, Attr.INPUT_REF, Attr.TOOL_CALL_ARGUMENTS, attrs.get("input.value"), policy)
        put_content(out, Attr.OUTPUT_REF, Attr.TOOL_CALL_RESULT, attrs.get("output.value"), policy)
        return native(span, out)
    return None  # the task and turn chains: plain spans


def _inside_agent(span: SpanRecord, by_id: dict[str, SpanRecord]) -> bool:
    """An agent segment under another agent's span (a run inside its tool)."""
    cur = by_id.get(span.parent_id or "")
    while cur is not None:
        if cur.attributes.get(_OI_KIND) == "AGENT" and "agent.name" in cur.attributes:
            return True
        cur = by_id.get(cur.parent_id or "")
    return False


def _openllmetry(span: SpanRecord, is_root: bool, by_id: dict[str, SpanRecord], spans: list[SpanRecord],
                 policy: ContentPolicy | None) -> SpanRecord | None:
    attrs = span.attributes
    if is_root:
        name = attrs.get("traceloop.workflow.name")
        return native(span, agent_attrs(name if isinstance(name, str) and name else span.name, workflow=True))
    if attrs.get(Attr.OPERATION) == "handoff":
        target = _next_agent(span, spans)
        if target is None:
            return native(span, {})
        return native(span, {}, [decision(span.start_ns, DecisionKind.DELEGATE, [target], implied=True)])
    return genai_span(span, policy)


def _next_agent(handoff: SpanRecord, spans: list[SpanRecord]) -> str | None:
    """The agent whose segment starts first after the handoff's: the one it handed off to."""
    later = [s for s in spans if s.start_ns >= handoff.start_ns and s.span_id != handoff.span_id
             and s.attributes.get(Attr.OPERATION) == Operation.INVOKE_AGENT.value]
    if not later:
        return None
    name = min(later, key=lambda s: (s.start_ns, s.span_id)).attributes.get(Attr.AGENT_NAME)
    return name if isinstance(name, str) and name else None
