"""Foreign logs (issue 17): spans that other instrumentations wrote, converted
into orch-otel traces. The fixtures are real peer output, recorded by
``benchmarks/foreign_fixtures.py`` from the fidelity cases (MANIFEST.json says
which peer recorded which case at which version).

Each fixture's expected recovery is its case's hand-written Truth with the
gaps of its source written out here by hand, each with the reason the source
cannot give it. A gap closed or opened by a change fails its test."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from conftest import need_agent_framework
from fidelity import Aggregate, Delegation, Stop, Truth, fidelity_errors
from offline_support import otlp_span

from orch_otel.cli import main
from orch_otel.offline import Options, convert_inputs
from orch_otel.offline.records import LEFT_OUT
from orch_otel.spans import SpanRecord
from orch_otel.tracefiles import read_lines

FOREIGN = Path(__file__).parent / "fixtures" / "foreign"
MANIFEST = json.loads((FOREIGN / "MANIFEST.json").read_text())


def truth_of(entry: dict) -> Truth:
    module = __import__(entry["cases"])
    (case,) = [c for c in module.CASES if c.truth.app == entry["app"]]
    return case.truth


def without_options(t: Truth) -> tuple[Delegation, ...]:
    return tuple(dataclasses.replace(d, options=None) for d in t.delegations)


def no_call_ids(t: Truth) -> tuple[tuple[str, str, None], ...]:
    return tuple((agent, tool, None) for agent, tool, _ in t.tool_calls)  # type: ignore[misc]


# --- what each source cannot give -------------------------------------------------------------------------
# AutoGen's runtime tracing: a turn's candidates are never logged (options None); the termination
# condition's reason and who met it are not either (GroupChatTermination carries no body), so the
# stop is the team's, reason "unspecified", neither forced nor chosen; a team is named after its
# manager class, since a team's own name is in no span.
AUTOGEN_STOP = "unspecified"
# OpenInference on autogen-agentchat: tool spans have no call id; there are no termination spans,
# so the stop is the converter's implied end of the run, by the team.
# LangGraph (both peers): a conditional edge from START runs no node, so its choice (the swarm's
# active-agent router) is in no span; and which node chose END is not recorded, so the stop is the
# implied end of the run by the graph.
# OpenAI Agents SDK (both peers turn the SDK's own trace into spans): its function and handoff spans
# carry no call id and a handoff span no options; a handoff is logged as a handoff span, not as the
# transfer_to_* tool call the model made; why the run stopped is in no span, so the stop is the implied
# end of the run by the workflow. OpenLLMetry names the workflow "Agent Workflow" whatever the run config
# says, and hangs an agent run inside a tool from the workflow, so agents as tools are no spawns there.
def _sdk_peer(workflow: str | None = None, spawns: bool = True) -> Callable[[Truth], Truth]:
    def expected(t: Truth) -> Truth:
        root = workflow or {"openai-agents handoffs": "support", "openai-agents agents as tools": "report",
                            "openai-agents parallel tools": "research"}[t.app.split(":")[0]]
        calls = tuple(c for c in no_call_ids(t) if not c[1].startswith("transfer_to_"))
        return dataclasses.replace(t, delegations=without_options(t), tool_calls=calls, stop=Stop(root, "end"),
                                   **({} if spawns else {"instances": {}, "spawned_by": {}}))

    return expected


EXPECTED: dict[str, Callable[[Truth], Truth]] = {
    "autogen_core_selector": lambda t: dataclasses.replace(
        t, delegations=without_options(t), stop=Stop("SelectorGroupChat", AUTOGEN_STOP)),
    "autogen_core_swarm": lambda t: dataclasses.replace(
        t, delegations=without_options(t), stop=Stop("Swarm", AUTOGEN_STOP)),
    "autogen_core_tool_round_robin": lambda t: dataclasses.replace(
        t, delegations=(Delegation("RoundRobinGroupChat", "a"), Delegation("RoundRobinGroupChat", "b")),
        stop=Stop("RoundRobinGroupChat", AUTOGEN_STOP)),
    # outer_team and inner_team are both RoundRobinGroupChats: told apart by order of start
    "autogen_core_society_of_mind": lambda t: dataclasses.replace(
        t, instances={"RoundRobinGroupChat_2": 1, "w1": 1, "w2": 1},
        spawned_by={"RoundRobinGroupChat_2": "som", "w1": "RoundRobinGroupChat_2", "w2": "RoundRobinGroupChat_2"},
        delegations=(Delegation("RoundRobinGroupChat", "som"), Delegation("RoundRobinGroupChat_2", "w1"),
                     Delegation("RoundRobinGroupChat_2", "w2"), Delegation("RoundRobinGroupChat", "critic")),
        aggregates=(Aggregate("som", ("RoundRobinGroupChat_2",)),),
        stop=Stop("RoundRobinGroupChat", AUTOGEN_STOP)),
    "openinference_autogen_selector": lambda t: dataclasses.replace(
        t, delegations=without_options(t), stop=Stop("SelectorGroupChat", "end")),
    # bob's handoff to user is followed by no turn, and the handoff message is content: not inferred
    "openinference_autogen_swarm": lambda t: dataclasses.replace(
        t, delegations=without_options(t)[:3], tool_calls=no_call_ids(t), stop=Stop("Swarm", "end")),
    **{f"{peer}_langgraph_{app}": (lambda t: t) for peer in ("openinference", "openllmetry")
       for app in ("fanout", "nested", "interrupt")},
    **{f"{peer}_langgraph_supervisor": (lambda t: dataclasses.replace(t, stop=Stop("supervision", "end")))
       for peer in ("openinference", "openllmetry")},
    **{f"{peer}_langgraph_swarm": (lambda t: dataclasses.replace(t, delegations=t.delegations[1:],
                                                                 stop=Stop("swarm", "end")))
       for peer in ("openinference", "openllmetry")},
    # Agent Framework's own tracing logs deliveries (span links), not choices: a delegation's options are
    # never logged (only the start agent's one option is known); handoff tools make no span, so their calls
    # are missing; termination conditions and a manager's end are in no span, so the stop is the implied
    # end of the run by the workflow.
    "agent_framework_agent_tool": lambda t: t,
    **{f"agent_framework_{app}": (lambda t: dataclasses.replace(t, delegations=without_options(t)))
       for app in ("sequential", "concurrent")},
    "agent_framework_switch_case": lambda t: dataclasses.replace(
        t, delegations=t.delegations[:1] + without_options(t)[1:]),
    "agent_framework_handoff": lambda t: dataclasses.replace(
        t, delegations=t.delegations[:1] + without_options(t)[1:], tool_calls=t.tool_calls[:1],
        stop=Stop("Handoff", "end")),
    "agent_framework_group_chat_manager": lambda t: dataclasses.replace(
        t, delegations=without_options(t), stop=Stop("GroupChat", "end")),
    "agent_framework_magentic": lambda t: dataclasses.replace(
        t, delegations=without_options(t), stop=Stop("Magentic", "end")),
    **{f"openinference_openai_agents_{app}": _sdk_peer() for app in ("handoffs", "as_tools", "parallel_tools")},
    "openllmetry_openai_agents_handoffs": _sdk_peer("Agent Workflow"),
    "openllmetry_openai_agents_as_tools": _sdk_peer("Agent Workflow", spawns=False),
    "openllmetry_openai_agents_parallel_tools": _sdk_peer("Agent Workflow"),
}


def stem(fixture: str) -> str:
    return fixture.split(".otlp.")[0]


def converted(path: Path, tmp_path: Path, **options) -> tuple[list[dict], object]:
    out = tmp_path / "traces.jsonl"
    summary = convert_inputs([path], out, options=Options(**options))
    return [line.trace for line in read_lines(out)], summary


def test_every_fixture_has_an_expectation():
    assert {stem(f) for f in MANIFEST} == set(EXPECTED)
    assert all((FOREIGN / f).is_file() for f in MANIFEST)


@pytest.mark.parametrize("fixture", sorted(MANIFEST))
def test_fixture_recovers_what_its_source_records(fixture, tmp_path):
    if MANIFEST[fixture]["cases"] == "fidelity_cases_maf":  # its truth's module imports the framework
        need_agent_framework()
    traces, summary = converted(FOREIGN / fixture, tmp_path)
    assert len(traces) == 1, f"{fixture}: one run, {len(traces)} traces"
    expected = EXPECTED[stem(fixture)](truth_of(MANIFEST[fixture]))
    assert fidelity_errors(traces[0], expected) == []
    assert summary.quarantined_spans == summary.bad_records == 0  # every foreign span is read ...
    assert summary.spans == summary.converted_spans + summary.definition_spans + summary.duplicates  # ... and kept
    assert traces[0]["events"][0]["recorded_by"] == MANIFEST[fixture]["peer"].split("-")[0]


def json_traces(path: Path) -> dict[str, list[dict]]:
    """trace id -> its spans, read straight from the OTLP JSON."""
    traces: dict[str, list[dict]] = {}
    for line in path.read_bytes().splitlines():
        for rs in orjson.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    traces.setdefault(span["traceId"], []).append(span)
    return traces


def operation(span: dict) -> str | None:
    return next((a["value"].get("stringValue") for a in span.get("attributes", [])
                 if a["key"] == "gen_ai.operation.name"), None)


@pytest.mark.parametrize("fixture", sorted(f for f in MANIFEST if f.startswith("autogen_core_") and f.endswith(".jsonl")))
def test_autogen_runtime_traces_are_stitched_into_one_run(fixture, tmp_path):
    by_trace = json_traces(FOREIGN / fixture)
    definitions = {t for t, spans in by_trace.items() if all(operation(s) == "create_agent" for s in spans)}
    runs = {t: spans for t, spans in by_trace.items() if t not in definitions}
    assert len(runs) > 5  # the runtime split the run (each message handler starts a trace)
    traces, summary = converted(FOREIGN / fixture, tmp_path)
    assert [t["trace_id"] for t in traces] == [min(runs, key=lambda t: min(int(s["startTimeUnixNano"]) for s in runs[t]))]
    assert summary.definitions == len(definitions) and dict(summary.sources) == {"autogen": 1}
    # every span of the run is in it: each event's span is one of the run's spans
    run_span_ids = {s["spanId"] for spans in runs.values() for s in spans}
    assert {e["span_id"] for e in traces[0]["events"]} <= run_span_ids


def test_autogen_runtime_traces_are_not_stitched_under_jobs_and_say_so(tmp_path):
    fixture = FOREIGN / "autogen_core_selector.otlp.jsonl"
    traces, summary = converted(fixture, tmp_path, jobs=2)
    assert len(traces) > 5
    assert any("stitched" in w and "--jobs" in w for w in summary.warnings)


@pytest.mark.parametrize("name", sorted({stem(f) for f in MANIFEST if f.endswith(".pb")}))
def test_protobuf_and_json_lines_of_one_recording_give_the_same_trace(name, tmp_path):
    from_json, _ = converted(FOREIGN / f"{name}.otlp.jsonl", tmp_path / "json")
    from_pb, _ = converted(FOREIGN / f"{name}.otlp.pb", tmp_path / "pb")
    assert from_json == from_pb


def test_inferred_events_are_marked_implied(tmp_path):
    # langgraph-supervisor under OpenInference: the handoffs are transfer_to_* tools followed by the
    # expert's node; the supervisor's spans never say "delegate"
    (trace,), _ = converted(FOREIGN / "openinference_langgraph_supervisor.otlp.jsonl", tmp_path)
    delegations = [e for e in trace["events"] if e.get("decision") == "delegate"]
    assert [e["to"] for e in delegations] == ["math_expert", "research_expert"]
    assert all(e.get("implied") is True for e in delegations)
    # the tool calls themselves were recorded, not inferred
    assert not any(e.get("implied") for e in trace["events"] if e["type"] in ("tool_call", "tool_result"))


def test_openllmetry_goto_spans_make_handoffs_recorded_not_implied(tmp_path):
    (trace,), _ = converted(FOREIGN / "openllmetry_langgraph_supervisor.otlp.jsonl", tmp_path)
    delegations = [e for e in trace["events"] if e.get("decision") == "delegate"]
    assert [e["to"] for e in delegations] == ["math_expert", "research_expert"]
    assert not any(e.get("implied") for e in delegations)


# --- content ---------------------------------------------------------------------------------------------


def fixture_texts(path: Path) -> list[str]:
    """Texts the peer captured in the fixture: the user's question and the models' answers."""
    raw = path.read_text()
    return [t for t in ("what is 1+2?", "print(1) TERMINATE") if t in raw]


@pytest.mark.parametrize("fixture", ["openinference_langgraph_supervisor.otlp.jsonl",
                                     "openllmetry_langgraph_supervisor.otlp.jsonl",
                                     "autogen_core_selector.otlp.jsonl",
                                     "openinference_autogen_selector.otlp.jsonl"])
def test_content_the_peer_captured_is_dropped_by_default(fixture, tmp_path):
    texts = fixture_texts(FOREIGN / fixture)
    assert texts  # the peer did capture content
    converted(FOREIGN / fixture, tmp_path)
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert not [t for t in texts if t.encode() in written]
    assert b"content_ref" not in written and not (tmp_path / "content").exists()


def test_captured_content_is_kept_redacted_and_by_ref(tmp_path):
    fixture = FOREIGN / "openinference_langgraph_supervisor.otlp.jsonl"
    (trace,), _ = converted(fixture, tmp_path, capture_content=True)
    refs = {e["content_ref"] for e in trace["events"] if e.get("content_ref")}
    stored = {}
    for path in (tmp_path / "content").glob("*.jsonl"):
        for row in map(orjson.loads, path.read_bytes().splitlines()):
            stored[row["ref"]] = row["text"]
    assert refs and refs <= set(stored)
    assert any("what is 1+2?" in text for text in stored.values())


def secret_span(value: str) -> SpanRecord:
    """An OpenInference LLM span (as openinference-instrumentation-langchain writes one) whose input carries a key."""
    return SpanRecord("ab" * 16, "cd" * 8, None, "ChatModel", 1_000, 2_000, scope="openinference.instrumentation.langchain",
                      attributes={"openinference.span.kind": "LLM", "llm.model_name": "m",
                                  "input.value": json.dumps({"messages": [{"role": "user", "content": value}]}),
                                  "input.mime_type": "application/json"})


def otlp_file(path: Path, spans: list[SpanRecord]) -> Path:
    scopes: dict[str, list[dict]] = {}
    for s in spans:
        scopes.setdefault(s.scope, []).append(otlp_span(s))
    data = {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": k}, "spans": v} for k, v in scopes.items()]}]}
    path.write_bytes(orjson.dumps(data) + b"\n")
    return path


def test_a_secret_in_captured_content_is_redacted(tmp_path):
    key = "sk-" + "A1b2C3d4" * 5
    logs = otlp_file(tmp_path / "logs.jsonl", [secret_span(f"my key is {key}")])
    converted(logs, tmp_path / "on", capture_content=True)
    written = b"".join(p.read_bytes() for p in (tmp_path / "on").rglob("*") if p.is_file())
    assert b"my key is" in written and key.encode() not in written
    # and a user's own redactor replaces the default one
    converted(logs, tmp_path / "mine", capture_content=True, redactors=(lambda text: text.replace("key", "K"),))
    written = b"".join(p.read_bytes() for p in (tmp_path / "mine").rglob("*") if p.is_file())
    assert b"my K is" in written


# --- sources: detection, forcing, mixing -------------------------------------------------------------------


def test_forcing_a_source_reads_every_trace_as_it(tmp_path):
    fixture = FOREIGN / "openinference_langgraph_supervisor.otlp.jsonl"
    (as_openinference,), summary = converted(fixture, tmp_path / "a", source="openinference")
    assert dict(summary.sources) == {"openinference": 1}
    assert [e["to"] for e in as_openinference["events"] if e.get("decision") == "delegate"] == ["math_expert",
                                                                                                "research_expert"]
    # read as orch-otel's own, OpenInference spans are plain spans: no run comes out of them, none is written
    traces, summary = converted(fixture, tmp_path / "b", source="orch-otel")
    assert traces == [] and not summary.sources
    assert summary.not_orchestration == 1 and summary.not_orchestration_spans == summary.spans


def test_cli_takes_source_and_capture_content(tmp_path, capsys):
    fixture = FOREIGN / "autogen_core_selector.otlp.jsonl"
    assert main(["convert", str(fixture), "-o", str(tmp_path / "out.jsonl"), "--source", "autogen",
                 "--capture-content"]) == 0
    printed = capsys.readouterr().out
    assert "traces by source: autogen 1" in printed
    assert "agent or workflow definitions (create_agent / workflow.build only, not runs) not written: 3 trace(s), 3 span(s)" in printed
    assert main(["convert", str(fixture), "-o", str(tmp_path / "x.jsonl"), "--source", "langfuse"]) == 2
    assert "invalid choice: 'langfuse'" in capsys.readouterr().err


def test_a_mixed_trace_is_converted_and_reported(tmp_path):
    own = SpanRecord("ef" * 16, "01" * 8, None, "run", 1_000, 9_000, scope="orch_otel",
                     attributes={"gen_ai.operation.name": "invoke_workflow", "orch.workflow.name": "wf"})
    peer = dataclasses.replace(secret_span("hi"), trace_id="ef" * 16, parent_id="01" * 8)
    traces, summary = converted(otlp_file(tmp_path / "logs.jsonl", [own, peer]), tmp_path / "out")
    assert len(traces) == 1 and dict(summary.sources) == {"mixed": 1}
    assert any("several instrumentations" in w and "orch-otel" in w for w in summary.warnings)


def test_genai_semconv_spans_map_to_agents_tools_and_handoffs(tmp_path):
    def genai(span_id, parent, name, start, end, **attrs):
        return SpanRecord("12" * 16, span_id * 8, parent and parent * 8, name, start, end, scope="pydantic-ai",
                          attributes=attrs)

    spans = [
        genai("01", None, "invoke_workflow triage", 0, 100, **{"gen_ai.operation.name": "invoke_workflow",
                                                              "gen_ai.workflow.name": "triage"}),
        genai("02", "01", "invoke_agent router", 1, 40, **{"gen_ai.operation.name": "invoke_agent",
                                                          "gen_ai.agent.name": "router",
                                                          "gen_ai.agent.handoff.source.name": "router",
                                                          "gen_ai.agent.handoff.target.name": "billing"}),
        genai("03", "02", "execute_tool lookup", 5, 10, **{"gen_ai.operation.name": "execute_tool",
                                                          "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "c1"}),
        genai("04", "01", "invoke_agent billing", 41, 90, **{"gen_ai.operation.name": "invoke_agent",
                                                            "gen_ai.agent.name": "billing"}),
    ]
    (trace,), summary = converted(otlp_file(tmp_path / "logs.jsonl", spans), tmp_path / "out")
    assert dict(summary.sources) == {"genai": 1}
    events = trace["events"]
    assert [(e["agent"], e["to"]) for e in events if e.get("decision") == "delegate"] == [("router", "billing")]
    assert [(e["agent"], e["tool"], e["call_id"]) for e in events if e["type"] == "tool_call"] == [("router", "lookup", "c1")]


def test_unknown_spans_with_no_run_in_them_are_counted_as_not_orchestration_and_not_written(tmp_path):
    """A web request's spans (a server span, a database call) hold no run: no junk one-event trace."""
    spans = [SpanRecord("34" * 16, "01" * 8, None, "GET /", 0, 10, scope="opentelemetry.instrumentation.flask"),
             SpanRecord("34" * 16, "02" * 8, "01" * 8, "SELECT", 2, 8, scope="opentelemetry.instrumentation.sqlite3")]
    traces, summary = converted(otlp_file(tmp_path / "logs.jsonl", spans), tmp_path / "out")
    assert traces == [] and summary.traces == 0 and not summary.sources
    assert (summary.not_orchestration, summary.not_orchestration_spans, summary.spans) == (1, 2, 2)
    assert summary.exit_code == 0


# --- bad input -----------------------------------------------------------------------------------------------


def test_a_malformed_foreign_span_is_quarantined_with_its_file_and_line(tmp_path):
    good = (FOREIGN / "openinference_langgraph_fanout.otlp.jsonl").read_bytes()
    bad = orjson.loads(good.splitlines()[0])
    span = {**bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0], "spanId": "f" * 16, "startTimeUnixNano": "yesterday"}
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"] = [span]
    logs = tmp_path / "logs.jsonl"
    logs.write_bytes(good + orjson.dumps(bad) + b"\n")
    quarantine = tmp_path / "quarantine.jsonl"
    summary = convert_inputs([logs], tmp_path / "out.jsonl", quarantine=str(quarantine))
    assert summary.quarantined_spans == 1 and summary.traces == 1  # the run itself still converts
    (row,) = [orjson.loads(r) for r in quarantine.read_bytes().splitlines()]
    assert row["where"] == f"{logs}:{len(good.splitlines()) + 1}"
    assert "startTimeUnixNano" in row["reason"] and "yesterday" in row["reason"]


def test_a_malformed_foreign_span_is_quarantined_without_its_content_unless_capture_was_asked(tmp_path):
    """The quarantine holds what convert would write: no message, tool content or secret without --capture-content."""
    good = (FOREIGN / "openinference_langgraph_fanout.otlp.jsonl").read_bytes()
    bad = orjson.loads(good.splitlines()[0])
    span = {**bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0], "spanId": "f" * 16, "startTimeUnixNano": "yesterday"}
    secret = "my key is sk-live-0123456789abcdef, please keep it"
    span["attributes"] = [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                          {"key": "llm.token_count.prompt", "value": {"intValue": "12"}},
                          {"key": "input.value", "value": {"stringValue": secret}},
                          {"key": "llm.input_messages.0.message.content", "value": {"stringValue": secret}}]
    span["events"] = [{"name": "exception", "timeUnixNano": "1",
                       "attributes": [{"key": "exception.message", "value": {"stringValue": secret}}]}]
    span["status"] = {"code": 2, "message": secret}
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"] = [span]
    logs = tmp_path / "logs.jsonl"
    logs.write_bytes(good + orjson.dumps(bad) + b"\n")
    for capture in (False, True):
        quarantine = tmp_path / f"quarantine-{capture}.jsonl"
        summary = convert_inputs([logs], tmp_path / f"out-{capture}.jsonl", quarantine=str(quarantine),
                                 options=Options(capture_content=capture))
        assert summary.quarantined_spans == 1 and summary.traces == 1
        (row,) = [orjson.loads(r) for r in quarantine.read_bytes().splitlines()]
        assert row["where"] == f"{logs}:{len(good.splitlines()) + 1}" and "startTimeUnixNano" in row["reason"]
        raw = row["raw"]
        assert (raw["spanId"], raw["traceId"], raw["name"]) == ("f" * 16, span["traceId"], span["name"])
        kept = {a["key"]: a["value"] for a in raw["attributes"]}
        assert kept["openinference.span.kind"] == {"stringValue": "LLM"} and kept["llm.token_count.prompt"] == {"intValue": "12"}
        if capture:  # asked for: the span as it was read
            assert raw == span
        else:
            assert b"sk-live" not in quarantine.read_bytes() and b"my key" not in quarantine.read_bytes()
            assert kept["input.value"] == kept["llm.input_messages.0.message.content"] == LEFT_OUT
            assert raw["status"] == {"code": 2, "message": LEFT_OUT}


HOSTILE = [None, "", 0, -1, 2**63, 1.5, float("nan"), True, [], ["x", 1], "{", "[1,", '{"response": []}',
           "x" * 100_000, "\x00"]


@pytest.mark.parametrize("fixture", sorted(f for f in MANIFEST if f.endswith(".jsonl")))
def test_hostile_attribute_values_never_fail_a_run(fixture, tmp_path):
    """Every attribute of every span, in turn, set to a value of the wrong type or shape:
    the mappers read around it, so the trace is still converted (not quarantined)."""
    from orch_otel.offline.readers import read_file

    spans = [s for chunk in read_file(FOREIGN / fixture) for s in chunk.spans]
    keys = sorted({k for s in spans for k in s.attributes})
    from orch_otel.offline.outputs import convert_one

    for i, key in enumerate(keys):
        value = HOSTILE[i % len(HOSTILE)]
        broken = [dataclasses.replace(s, attributes={**s.attributes, key: value}) if key in s.attributes else s
                  for s in spans]
        by_trace: dict[str, dict[str, SpanRecord]] = {}
        for s in broken:
            by_trace.setdefault(s.trace_id, {})[s.span_id] = s
        for trace_id, trace_spans in by_trace.items():
            result = convert_one(trace_id, trace_spans, True, False, Options(capture_content=True))
            assert result.line is not None or result.definition, (key, value, result.problems[:1])


def test_the_fidelity_table_in_the_docs_is_current():
    """docs/foreign-logs.md's table is generated (benchmarks/foreign_fidelity.py), never edited by hand."""
    need_agent_framework()  # the table has rows of Agent Framework's fixtures
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "benchmarks.foreign_fidelity", "--check", "docs/foreign-logs.md"],
                          cwd=repo, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


LANGGRAPH_CHAIN = {"openinference.span.kind": "CHAIN",
                   "metadata": json.dumps({"langgraph_node": "n", "langgraph_checkpoint_ns": "n:1"})}
SCOPES = {"openinference.instrumentation.langchain": LANGGRAPH_CHAIN,
          "opentelemetry.instrumentation.langchain": {"traceloop.span.kind": "task"},
          "openinference.instrumentation.autogen_agentchat": {"openinference.span.kind": "AGENT"},
          "openinference.instrumentation.openai_agents": {"openinference.span.kind": "AGENT", "agent.name": "a"},
          "opentelemetry.instrumentation.openai_agents": {"gen_ai.operation.name": "invoke_agent",
                                                          "gen_ai.agent.name": "a"},
          "agent_framework": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
          "autogen-core": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}}


@pytest.mark.parametrize("scope", sorted(SCOPES))
def test_a_foreign_trace_whose_parents_loop_is_read_as_plain_spans_and_reported(scope):
    from orch_otel.offline.outputs import convert_one

    a, b, root = "1" * 16, "2" * 16, "3" * 16
    spans = {a: SpanRecord("ab" * 16, a, b, "a", 1, 9, scope=scope, attributes=SCOPES[scope]),
             b: SpanRecord("ab" * 16, b, a, "b", 2, 8, scope=scope, attributes=SCOPES[scope]),
             root: SpanRecord("ab" * 16, root, None, "r", 0, 10, scope=scope, attributes=SCOPES[scope])}
    result = convert_one("ab" * 16, spans, True, False, Options())
    # left as plain spans, they hold no run: counted as not orchestration, not written, and the loop reported
    assert result.line is None and result.not_run and not result.problems
    assert "parent links loop" in result.warning


def test_a_deep_foreign_tree_converts():
    """A chain of 20,000 LangGraph spans, each the parent of the next: every mapper walk is memoised."""
    from orch_otel.offline.outputs import convert_one

    n = 20_000
    spans = {f"{i + 1:016x}": SpanRecord("ab" * 16, f"{i + 1:016x}", f"{i:016x}" if i else None, "s", i, 2 * n - i,
                                         scope="openinference.instrumentation.langchain", attributes=LANGGRAPH_CHAIN)
             for i in range(n)}
    result = convert_one("ab" * 16, spans, True, False, Options())
    assert result.line is not None and result.source == "openinference"
