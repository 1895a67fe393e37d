"""``orch-otel convert`` counts the traces it writes by the instrumentation
that wrote their spans. The foreign fixtures are real peer output, made by
``benchmarks/foreign_fixtures.py`` (here: OpenInference and OpenLLMetry on the
langgraph-supervisor app, AutoGen's own runtime tracing on the selector team)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from offline_support import json_lines, otlp_span, record_demo_runs

from orch_otel.cli import main
from orch_otel.offline import convert_inputs
from orch_otel.spans import SpanRecord

FOREIGN = Path(__file__).parent / "fixtures" / "foreign"


@pytest.mark.parametrize(("fixture", "source"), [
    ("openinference_langgraph_supervisor", "openinference"),
    ("openllmetry_langgraph_supervisor", "openllmetry"),  # and a trace of create_agent spans only
    ("autogen_core_selector", "autogen"),  # the runtime splits one team run into many traces
])
def test_peer_logs_are_counted_by_their_source(tmp_path, fixture, source):
    path = FOREIGN / f"{fixture}.otlp.jsonl"
    summary = convert_inputs([path], tmp_path / "out.jsonl")
    # one run each: the other trace ids are agent definitions (counted apart) or, for AutoGen, pieces
    # of the run stitched back into it (tests/test_foreign_logs.py)
    assert dict(summary.sources) == {source: 1}
    assert summary.quarantined_spans == summary.bad_records == 0  # foreign spans are read, never dropped


def test_orch_otel_logs_are_counted_as_its_own(tmp_path):
    _, _, spans = record_demo_runs(tmp_path / "live", runs=2)
    logs = tmp_path / "logs.jsonl"
    logs.write_bytes(json_lines([spans]))
    assert dict(convert_inputs([logs], tmp_path / "out.jsonl").sources) == {"orch-otel": 2}


def scoped_line(scope: str, spans: list[SpanRecord]) -> bytes:
    data = {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": scope}, "spans": [otlp_span(s) for s in spans]}]}]}
    return orjson.dumps(data) + b"\n"


def span(trace: str, span_id: str, parent: str | None, **attrs) -> SpanRecord:
    return SpanRecord(trace * 32, span_id * 16, parent and parent * 16, "s", 1, 2, attributes=attrs)


def test_genai_other_scopes_plain_otel_and_mixed_traces(tmp_path):
    logs = tmp_path / "logs.jsonl"
    logs.write_bytes(
        # a GenAI-convention emitter orch-otel has no reader for by name
        scoped_line("google.adk", [span("a", "1", None, **{"gen_ai.operation.name": "invoke_agent"})])
        # an HTTP server span, and a database span under it: no orchestration source, and no run (not written)
        + scoped_line("opentelemetry.instrumentation.flask", [span("b", "1", None)])
        + scoped_line("opentelemetry.instrumentation.sqlite3", [span("b", "2", "1")])
        # orch-otel and OpenInference in one trace
        + scoped_line("orch_otel", [span("c", "1", None, **{"gen_ai.operation.name": "invoke_workflow"})])
        + scoped_line("openinference.instrumentation.langchain", [span("c", "2", "1")])
        # HTTP spans around an orch-otel run do not make it mixed
        + scoped_line("orch_otel", [span("d", "2", "1", **{"gen_ai.operation.name": "invoke_workflow"})])
        + scoped_line("opentelemetry.instrumentation.flask", [span("d", "1", None)])
    )
    summary = convert_inputs([logs], tmp_path / "out.jsonl")
    assert dict(summary.sources) == {"genai": 1, "mixed": 1, "orch-otel": 1}
    assert (summary.not_orchestration, summary.not_orchestration_spans) == (1, 2)


def test_cli_prints_traces_by_source(tmp_path, capsys):
    path = FOREIGN / "openinference_langgraph_supervisor.otlp.jsonl"
    assert main(["convert", str(path), "-o", str(tmp_path / "out.jsonl")]) == 0
    assert "traces by source: openinference 1" in capsys.readouterr().out
