"""instrument() / flush() / uninstrument() and the zero-code paths, each in a fresh interpreter."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from conftest import check_trace

from orch_otel.tracefiles import read_lines, trace_files

RUN_ONE = (
    "import orch_otel\n"
    "with orch_otel.workflow('w', task_id='zero'):\n"
    "    with orch_otel.agent('a'):\n"
    "        orch_otel.delegate('b', options=['b'])\n"
)


def only_trace(directory: Path) -> dict:
    (path,) = trace_files([directory])
    (line,) = list(read_lines(path))
    return check_trace(line.trace)


def test_instrument_is_idempotent_and_installs_a_provider(run_python, tmp_path):
    result = run_python(
        "import orch_otel\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        f"first = orch_otel.instrument(trace_dir={str(tmp_path / 'x')!r})\n"
        "second = orch_otel.instrument()\n"
        "assert first is second\n"
        "assert isinstance(trace.get_tracer_provider(), TracerProvider)\n"
        "assert first.tracer_provider is trace.get_tracer_provider()\n"
        "print(len(first.processors))\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"  # only the trace-file processor: no OTLP endpoint set


def test_trace_dir_defaults_to_env_then_cwd(run_python, tmp_path):
    env_dir = tmp_path / "from-env"
    result = run_python(RUN_ONE.replace("import orch_otel\n", "import orch_otel\norch_otel.instrument()\n"),
                        env={"ORCH_OTEL_TRACE_DIR": str(env_dir)})
    assert result.returncode == 0, result.stderr
    assert only_trace(env_dir)["task_id"] == "zero"
    result = run_python(RUN_ONE.replace("import orch_otel\n", "import orch_otel\norch_otel.instrument()\n"),
                        env={"ORCH_OTEL_TRACE_DIR": ""})
    assert result.returncode == 0, result.stderr
    assert only_trace(tmp_path / "orch-traces")["task_id"] == "zero"  # cwd of the snippet


def test_otlp_is_wired_when_the_endpoint_is_set(run_python, tmp_path):
    result = run_python(
        "import os, orch_otel\n"
        f"state = orch_otel.instrument(trace_dir={str(tmp_path)!r})\n"
        "trace_file, otlp = state.processors\n"
        "print(type(trace_file.span_exporter).__module__)\n"
        "print(type(otlp.sender.inner).__module__, otlp.spool.directory)\n"
        "os._exit(0)\n",  # nothing listens on the endpoint; skip the exit-time export
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "ORCH_OTEL_SPOOL_DIR": str(tmp_path / "spool"),
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "orch_otel.exporters.trace_file",
        f"opentelemetry.exporter.otlp.proto.grpc.trace_exporter {tmp_path / 'spool'}",
    ]


def test_user_provider_is_used_and_flush_writes(run_python, tmp_path):
    result = run_python(
        "import orch_otel\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "mine = TracerProvider(shutdown_on_exit=False)\n"
        f"state = orch_otel.instrument(tracer_provider=mine, trace_dir={str(tmp_path)!r})\n"
        "assert state.tracer_provider is mine\n"
        + RUN_ONE.split("\n", 1)[1]
        + "assert orch_otel.flush()\n"
        "import pathlib\n"
        f"assert list(pathlib.Path({str(tmp_path)!r}).glob('traces-*.jsonl'))\n"
        "orch_otel.uninstrument()\n"
        "orch_otel.uninstrument()\n"  # twice is fine
    )
    assert result.returncode == 0, result.stderr
    assert only_trace(tmp_path)["task_id"] == "zero"


def test_exporter_is_registered_for_zero_code_setups():
    names = {ep.name: ep.value for ep in entry_points(group="opentelemetry_traces_exporter")}
    assert names.get("orch_otel") == "orch_otel._zero_code:ZeroCodeExporter"


def test_opentelemetry_instrument_writes_traces_with_no_code(run_zero_code, tmp_path):
    out = tmp_path / "zero-code"
    result = run_zero_code(RUN_ONE, out)
    assert result.returncode == 0, result.stderr
    trace = only_trace(out)
    assert trace["task_id"] == "zero"
    assert [e["to"] for e in trace["events"] if e.get("decision") == "delegate"] == ["b"]


def test_integrations_on_a_tracer_provider_that_records_nothing_warn_the_app_of_nothing(run_python):
    """With no SDK configured (opentelemetry-instrument without a distro; a NoOp provider) the integrations'
    spans do not record. Their decisions are then not recorded, quietly: the app called no spawn(),
    delegate() or aggregate(), so it gets no warning about them (issue 32, item 20). An app's own bare
    helper call outside any run still warns once."""
    tests = Path(__file__).parent
    result = run_python(
        "import asyncio, logging, sys\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        f"sys.path.insert(0, {str(tests)!r})\n"
        "from opentelemetry import trace\n"
        "import orch_otel\n"
        "orch_otel.instrument(tracer_provider=trace.NoOpTracerProvider())\n"
        "import autogen_apps as A, langgraph_apps as L\n"
        "async def main():\n"
        "    for team in (A.selector_team(), A.graph_flow(), A.society_of_mind_team(), A.team_as_participant()):\n"
        "        await team.run(task='go')\n"
        "    for app in (L.build_supervisor(), L.build_fanout(), L.build_command_handoffs()):\n"
        "        app.invoke(L.user_input())\n"
        "asyncio.run(main())\n"
        "print('-- app done --', file=sys.stderr)\n"
        "orch_otel.delegate('b')\n"
    )
    assert result.returncode == 0, result.stderr
    during, _, after = result.stderr.partition("-- app done --")
    assert "called outside any traced agent" not in during
    assert after.count("delegate() called outside any traced agent or run") == 1
