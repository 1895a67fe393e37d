"""Which instrumentation wrote a trace's spans: orch-otel itself, or a peer
whose logs a user may already have (issue 17, foreign logs).

The instrumentation scope name decides, as each peer sets it (read from the
installed instrumentors: OpenInference names its scope after its module,
OpenLLMetry likewise, AutoGen's runtime uses ``autogen-core`` for its GenAI
spans and ``autogen <runtime class>`` for its messaging spans). A span with
no scope (old span dumps) is placed by its attributes. Spans that no
orchestration source wrote (HTTP, database, ...) are ``otel`` and do not
make a trace mixed.

``orch-otel convert`` counts the traces it writes by source, and
:func:`orch_otel.foreign.map_trace` picks the mapper by it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..spans import SpanRecord
from ..vocabulary import INSTRUMENTATION_NAME, Attr, Operation

ORCH_OTEL, OPENINFERENCE, OPENLLMETRY, AUTOGEN, AGENT_FRAMEWORK, GENAI, OTEL, MIXED = (
    "orch-otel", "openinference", "openllmetry", "autogen", "agent_framework", "genai", "otel", "mixed")

_BY_SCOPE = {INSTRUMENTATION_NAME: ORCH_OTEL, "autogen-core": AUTOGEN, "agent_framework": AGENT_FRAMEWORK}
_SCOPE_PREFIXES = (
    ("openinference.instrumentation.", OPENINFERENCE),
    ("opentelemetry.instrumentation.langchain", OPENLLMETRY),
    ("opentelemetry.instrumentation.openai_agents", OPENLLMETRY),
    ("autogen ", AUTOGEN),  # "autogen SingleThreadedAgentRuntime": the runtime's publish/send/process spans
)
_KNOWN: dict[str, str] = {}  # scope name -> source: scope names are few
_OPENINFERENCE_KIND = "openinference.span.kind"
_TRACELOOP_KIND = "traceloop.span.kind"


def span_source(span: SpanRecord) -> str:
    scope = span.scope
    if scope:
        source = _KNOWN.get(scope)
        if source is None:
            source = _scope_source(scope)
            if len(_KNOWN) < 1024:  # a hostile input's many names cannot grow it without bound
                _KNOWN[scope] = source
        return source
    attrs = span.attributes
    if _OPENINFERENCE_KIND in attrs and attrs.get(Attr.OPERATION) != Operation.INVOKE_WORKFLOW.value:
        return OPENINFERENCE  # orch-otel's workflow roots carry the OpenInference kind for Phoenix too
    if _TRACELOOP_KIND in attrs:
        return OPENLLMETRY
    return ORCH_OTEL  # no scope: the converter reads such spans as orch-otel's own


def _scope_source(scope: str) -> str:
    known = _BY_SCOPE.get(scope)
    if known is not None:
        return known
    for prefix, source in _SCOPE_PREFIXES:
        if scope.startswith(prefix):
            return source
    return OTEL


def trace_source(spans: Iterable[SpanRecord]) -> str:
    """The source of one trace: the one orchestration source its spans name,
    ``mixed`` for more than one, ``genai`` for GenAI-convention spans of
    another scope (Google ADK, pydantic-ai, ...), else ``otel``."""
    found: set[str] = set()
    genai = False
    for span in spans:
        source = span_source(span)
        if source == OTEL:
            genai = genai or Attr.OPERATION in span.attributes
        else:
            found.add(source)
    if len(found) > 1:
        return MIXED
    if found:
        return found.pop()
    return GENAI if genai else OTEL
