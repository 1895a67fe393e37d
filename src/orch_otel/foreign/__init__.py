"""Foreign logs: spans that other instrumentations wrote, read into the same
replayable traces as orch-otel's own (``docs/foreign-logs.md``).

Each mapper rewrites a foreign trace's spans into spans shaped as orch-otel
writes them (scope ``orch_otel``, its attributes and span events), so the one
converter stays the only mapping to traces. What a mapper infers rather than
reads is marked ``implied``; what a source never records is left out.

* :mod:`._langgraph`: OpenInference and OpenLLMetry on LangGraph apps;
* :mod:`._autogen`: AutoGen's own runtime tracing, its traces stitched per run;
* :mod:`._agent_framework`: Microsoft Agent Framework's own tracing;
* :mod:`._openai_agents`: OpenInference and OpenLLMetry on OpenAI Agents SDK apps;
* :mod:`._genai`: any other GenAI semantic-convention spans.
"""

from __future__ import annotations

from ..content import ContentPolicy
from ..spans import SpanRecord
from ._agent_framework import is_build, map_agent_framework
from ._agentchat import SCOPE as AGENTCHAT_SCOPE
from ._agentchat import map_agentchat
from ._autogen import RunPool, map_autogen
from ._genai import DEFINITION_OPS, map_genai
from ._langchain_views import openinference_view, openllmetry_view
from ._langgraph import map_langgraph
from ._native import has_cycle, operation
from ._openai_agents import OPENINFERENCE_SCOPE as OPENAI_AGENTS_OI_SCOPE
from ._openai_agents import OPENLLMETRY_SCOPE as OPENAI_AGENTS_OLL_SCOPE
from ._openai_agents import map_openai_agents
from .sources import (
    AGENT_FRAMEWORK,
    AUTOGEN,
    GENAI,
    MIXED,
    OPENINFERENCE,
    OPENLLMETRY,
    ORCH_OTEL,
    OTEL,
    span_source,
    trace_source,
)

__all__ = ["AUTOGEN", "MIXED", "SOURCES", "RunPool", "is_definition", "map_trace", "source_of", "trace_source"]

_OPENAI_AGENTS_SCOPES = (OPENAI_AGENTS_OI_SCOPE, OPENAI_AGENTS_OLL_SCOPE)
SOURCES = ("auto", ORCH_OTEL, OPENINFERENCE, OPENLLMETRY, AUTOGEN, AGENT_FRAMEWORK, GENAI)  # what --source takes


def map_trace(spans: list[SpanRecord], source: str, policy: ContentPolicy | None = None,
              notes: list[str] | None = None) -> list[SpanRecord]:
    """``spans`` (one trace) read as ``source`` wrote them; orch-otel's own and plain OTel pass unchanged.
    A trace whose parent links loop is left as plain spans (said in ``notes``): no mapper guesses its tree."""
    if source not in (OPENINFERENCE, OPENLLMETRY, AUTOGEN, AGENT_FRAMEWORK, GENAI):
        return spans
    if has_cycle(spans):
        if notes is not None:
            notes.append(f"its parent links loop, so its {source} spans are read as plain spans")
        return spans
    if source in (OPENINFERENCE, OPENLLMETRY) and any(s.scope in _OPENAI_AGENTS_SCOPES for s in spans):
        return map_openai_agents(spans, source, policy)
    if source == OPENINFERENCE:
        if any(s.scope == AGENTCHAT_SCOPE for s in spans):
            return map_agentchat(spans, source, policy)
        return map_langgraph(spans, openinference_view, source, policy)  # LangChain without a graph too
    if source == OPENLLMETRY:
        return map_langgraph(spans, openllmetry_view, source, policy)
    if source == AUTOGEN:
        return map_autogen(spans, source, policy)
    if source == AGENT_FRAMEWORK:
        return map_agent_framework(spans, source, policy)
    if source == GENAI:
        return map_genai(spans, source, policy)
    return spans


def is_definition(spans: list[SpanRecord]) -> bool:
    """A trace that only defines agents (``create_agent`` at build time, as
    OpenLLMetry and AutoGen log them) or a workflow (Agent Framework's
    ``workflow.build``): not a run, so not a trace to train on."""
    return (all(operation(s.attributes) in DEFINITION_OPS for s in spans) and bool(spans)) or is_build(spans)


def source_of(spans: list[SpanRecord], forced: str = "auto") -> tuple[str, str]:
    """(the trace's source as counted, the source to read it as). The first is
    ``forced`` unless that is ``auto``, and may be ``mixed``. A mixed trace is
    read as orch-otel's when orch-otel wrote some of it (its own spans win; the
    others stay plain spans), else as the source of most of its spans."""
    if forced != "auto":
        return forced, forced
    source = trace_source(spans)
    if source != MIXED:
        return source, source
    counts: dict[str, int] = {}
    for span in spans:
        counts[span_source(span)] = counts.get(span_source(span), 0) + 1
    counts.pop(OTEL, None)
    return MIXED, ORCH_OTEL if ORCH_OTEL in counts else max(sorted(counts), key=counts.__getitem__)
