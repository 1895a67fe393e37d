"""The fidelity suite: every app shape in the case registries, run for real,
checked against its hand-written truth, live and after an offline round trip
through the Collector's OTLP JSON file format."""

from __future__ import annotations

import importlib.util

import fidelity_cases_autogen
import fidelity_cases_custom
import fidelity_cases_langgraph
import fidelity_cases_openai_agents
import pytest
from conftest import check_trace, instrumentor_fixture, need_agent_framework
from fidelity import Case, assert_faithful
from offline_support import json_lines
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orch_otel import testing
from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor
from orch_otel.offline import convert_inputs
from orch_otel.tracefiles import read_lines

CASES: list[Case] = (fidelity_cases_langgraph.CASES + fidelity_cases_autogen.CASES + fidelity_cases_openai_agents.CASES
                     + fidelity_cases_custom.CASES)
HAVE_AGENT_FRAMEWORK = all(importlib.util.find_spec(m) for m in ("agent_framework", "agent_framework_orchestrations"))
if HAVE_AGENT_FRAMEWORK:  # Python >= 3.11 with the agent-framework extra (test_agent_framework_cases_are_in_the_suite)
    import fidelity_cases_maf

    CASES += fidelity_cases_maf.CASES


def _case_id(case: Case) -> str:
    return f"{case.framework}:{case.truth.app}"


instrumented = instrumentor_fixture(LangGraphInstrumentor, AutoGenInstrumentor, AgentFrameworkInstrumentor,
                                    OpenAIAgentsInstrumentor)


@pytest.fixture(scope="module")
def finished_spans(sdk_provider):
    """The SDK's own finished spans (ReadableSpan), to write as a Collector would."""
    exporter = InMemorySpanExporter()
    sdk_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def test_the_suite_covers_at_least_twelve_app_shapes_across_the_frameworks():
    frameworks = {case.framework for case in CASES}
    assert len(CASES) >= 12 and {"langgraph", "autogen", "openai_agents"} <= frameworks, [_case_id(c) for c in CASES]
    assert len({_case_id(c) for c in CASES}) == len(CASES), "two cases share a name"


def test_agent_framework_cases_are_in_the_suite():
    need_agent_framework()
    assert HAVE_AGENT_FRAMEWORK and any(case.framework == "agent_framework" for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_live_and_offline_traces_match_the_apps_truth(case: Case, finished_spans, tmp_path):
    finished_spans.clear()
    with testing.capture() as captured:
        case.run()
    live = captured.traces()[case.trace]
    check_trace(live)
    assert_faithful(live, case.truth)

    logs = tmp_path / "otlp.json"
    logs.write_bytes(json_lines([finished_spans.get_finished_spans()]))
    out = tmp_path / "traces.jsonl"
    convert_inputs([logs], out)
    (offline,) = [line.trace for line in read_lines(out) if line.trace["trace_id"] == live["trace_id"]]
    assert offline == live
