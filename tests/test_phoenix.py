"""Export a multi-agent run to a real Arize Phoenix over OTLP/HTTP and OTLP/gRPC,
read the spans back through its REST API, and compare them with what was sent;
also the zero-code recipe (opentelemetry-instrument, OTEL_TRACES_EXPORTER=orch_otel)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter

import orjson
import pytest
from conftest import REPO
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import free_port
from zero_code_support import APP, APP_SPANS, APP_TASK_IDS, assert_zero_code_installed, written_task_ids

from orch_otel import Attr, Recorder, demo, get_recorder, set_recorder
from orch_otel.exporters.spool import spool_files


def phoenix_binary() -> str | None:
    candidates = [os.environ.get("ORCH_OTEL_PHOENIX_BIN"), str(REPO / ".venv-phoenix" / "bin" / "phoenix"), shutil.which("phoenix")]
    return next((c for c in candidates if c and os.path.exists(c)), None)


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return orjson.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    binary = phoenix_binary()
    if binary is None:
        message = ("Arize Phoenix is not installed: .ci/run installs it into .venv-phoenix "
                   "(python3 -m venv .venv-phoenix && .venv-phoenix/bin/pip install arize-phoenix)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    workdir = tmp_path_factory.mktemp("phoenix")
    http_port, grpc_port = free_port(), free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_PORT": str(http_port), "PHOENIX_GRPC_PORT": str(grpc_port)}
    log = open(workdir / "phoenix.log", "wb")
    process = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{http_port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/healthz", timeout=2)
            break
        except OSError:
            if process.poll() is not None:
                pytest.fail(f"phoenix exited early; see {workdir / 'phoenix.log'}")
            time.sleep(0.5)
    else:
        process.kill()
        pytest.fail("phoenix did not become healthy within 120 s")
    yield {"base": base, "grpc": f"http://127.0.0.1:{grpc_port}"}
    process.terminate()
    process.wait(30)
    log.close()


def export_demo(exporter, project: str) -> list:
    provider = TracerProvider(resource=Resource.create({"service.name": "orch-otel-test", "openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    local = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(local))
    previous = get_recorder()
    set_recorder(Recorder(tracer_provider=provider))
    try:
        asyncio.run(demo.run(task_id=project))
    finally:
        set_recorder(previous)
        provider.shutdown()
    return list(local.get_finished_spans())


def phoenix_spans(base: str, project: str, expected: int) -> list[dict]:
    deadline = time.monotonic() + 60
    spans: list[dict] = []
    while time.monotonic() < deadline:
        try:
            spans = get_json(f"{base}/v1/projects/{project}/spans?limit=1000").get("data", [])
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # 404: the project appears with its first span
                raise
        if len(spans) >= expected:
            return spans
        time.sleep(0.5)
    return spans


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_phoenix_receives_the_span_tree_with_genai_and_orchestration_attributes(phoenix, protocol):
    project = "orch-" + protocol.replace("/", "-")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=phoenix["grpc"], insecure=True)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=phoenix["base"] + "/v1/traces")
    sent = export_demo(exporter, project)
    received = {s["context"]["span_id"]: s for s in phoenix_spans(phoenix["base"], project, len(sent))}
    assert len(received) == len(sent) == 16
    for span in sent:
        span_id = format(span.context.span_id, "016x")
        got = received[span_id]
        parent = format(span.parent.span_id, "016x") if span.parent else None
        assert got["parent_id"] == parent, f"parent of {span.name}"
        assert got["context"]["trace_id"] == format(span.context.trace_id, "032x")
        assert got["name"] == span.name
        for key in (Attr.OPERATION, Attr.AGENT_NAME, Attr.AGENT_ROLE, Attr.TOOL_NAME, Attr.TOOL_CALL_ID,
                    Attr.REQUEST_MODEL, Attr.INPUT_TOKENS, Attr.OUTPUT_TOKENS, Attr.TASK_ID):
            if key in span.attributes:
                assert got["attributes"][key] == span.attributes[key], f"{key} of {span.name}"
        assert [e["name"] for e in got["events"]] == [e.name for e in span.events]
    lead = next(s for s in received.values() if s["name"] == "invoke_agent lead")
    spawn = next(e for e in lead["events"] if e["attributes"].get(Attr.DECISION) == "spawn")
    assert spawn["attributes"][Attr.TARGETS] == ["researcher_web", "researcher_papers", "researcher_code"]
    stop = next(e for e in lead["events"] if e["attributes"].get(Attr.DECISION) == "stop")
    assert stop["attributes"][Attr.STOP_REASON] == "end"
    chats = [s for s in received.values() if s["name"].startswith("chat ")]
    assert len(chats) == 6 and all(s["attributes"][Attr.INPUT_TOKENS] > 0 for s in chats)
    # Phoenix shows the run as a workflow of agents: the root a chain (not "unknown"), each
    # agent an agent, each model call an LLM call, each tool a tool.
    kinds = {name: {s["span_kind"] for s in received.values() if s["name"].startswith(name)}
             for name in ("invoke_workflow ", "invoke_agent ", "chat ", "execute_tool ")}
    assert kinds == {"invoke_workflow ": {"CHAIN"}, "invoke_agent ": {"AGENT"}, "chat ": {"LLM"},
                     "execute_tool ": {"TOOL"}}
    assert Counter(s["span_kind"] for s in received.values()) == {"AGENT": 6, "LLM": 6, "TOOL": 3, "CHAIN": 1}


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_zero_code_recipe_delivers_every_span_to_phoenix(phoenix, run_zero_code, tmp_path, protocol):
    assert_zero_code_installed()
    project = "zero-code-" + protocol.replace("/", "-")
    env = {"OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}", "ORCH_OTEL_SPOOL_DIR": str(tmp_path / "spool")}
    if protocol == "grpc":  # docs/otlp.md: the gRPC port, and the protocol said
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix["grpc"], OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    else:  # the endpoint alone: http/protobuf by default
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix["base"])
    result = run_zero_code(APP, tmp_path / "traces", env=env)
    assert result.returncode == 0, result.stderr
    received = phoenix_spans(phoenix["base"], project, sum(APP_SPANS.values()))
    assert Counter(s["name"] for s in received) == APP_SPANS
    assert len({s["context"]["span_id"] for s in received}) == 18
    assert written_task_ids(tmp_path / "traces") == APP_TASK_IDS
    assert spool_files(tmp_path / "spool") == []


def test_span_kind_and_links_in_process(captured):
    """Phoenix drops span kind and links, so they are checked on the SDK spans."""
    recorder = Recorder()
    with recorder.workflow("first") as first:
        pass
    link = trace.Link(first.span.get_span_context(), {"orch.link": "resume"})
    with recorder.workflow("second", links=[link]):
        pass
    first_record, second_record = captured.spans
    assert first_record.kind == second_record.kind == "internal"
    (recorded_link,) = second_record.links
    assert (recorded_link.trace_id, recorded_link.span_id) == (first_record.trace_id, first_record.span_id)
    assert recorded_link.attributes == {"orch.link": "resume"}
