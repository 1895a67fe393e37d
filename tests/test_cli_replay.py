"""``orch-otel replay`` as a user runs it: an app module of their own in the
current folder, recorded with ORCH_OTEL_RECORD_FOR_REPLAY=true in a process
of its own (the content store beside the traces, nothing on the spans), then
replayed, forked, and given bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_trace

from orch_otel.tracefiles import load_contents, read_lines, trace_files

TESTS = Path(__file__).resolve().parent

APP = f'''
import sys
sys.path.insert(0, {str(TESTS)!r})
from langgraph_apps import build_supervisor, user_input


def factory():
    return build_supervisor()


def broken():
    raise RuntimeError("no such model")
'''

RECORD = '''
import orch_otel
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import myapp
from langgraph_apps import user_input

state = orch_otel.instrument()
exported = InMemorySpanExporter()  # stands in for an OTLP exporter: what would leave the process
state.tracer_provider.add_span_processor(SimpleSpanProcessor(exported))
myapp.factory().invoke(user_input("what is 1+2?"))
orch_otel.flush()
texts = [key for span in exported.get_finished_spans() for key, value in span.attributes.items()
         if key in ("orch.content", "orch.input", "gen_ai.input.messages", "gen_ai.output.messages",
                    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.tool.definitions")]
print("content attributes on exported spans:", len(texts))
'''


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orch_otel.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("replay_cli")
    (folder / "myapp.py").write_text(APP)
    (folder / "then_module.py").write_text(
        "from orch_otel.replaying import ModelCall\n\n"
        "def canned(call):\n"
        "    return {'role': 'ai', 'content': 'canned'} if isinstance(call, ModelCall) else None\n\n"
        "def down(call):\n"
        "    raise ConnectionError('model server down')\n")
    env = {"ORCH_OTEL_RECORD_FOR_REPLAY": "true", "ORCH_OTEL_TRACE_DIR": str(folder / "orch-traces"),
           "PATH": "/usr/bin:/bin", "PYTHONPATH": str(TESTS)}
    done = subprocess.run([sys.executable, "-c", RECORD], capture_output=True, text=True, cwd=folder, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "content attributes on exported spans: 0" in done.stdout  # recorded for replay, nothing exported
    return folder


def traces_in(folder: Path) -> list[dict]:
    return [line.trace for file in trace_files([folder]) for line in read_lines(file) if line.trace]


def test_the_recording_keeps_its_content_in_the_local_store_only(recorded):
    (trace,) = traces_in(recorded / "orch-traces")
    contents = load_contents(recorded / "orch-traces")
    llm_outputs = [e["content_ref"] for e in trace["events"] if e.get("channel") == "llm"]
    assert llm_outputs and all(ref in contents for ref in llm_outputs)
    assert trace["events"][0]["run_input_ref"] in contents


def test_replay_exits_0_and_writes_the_new_trace(recorded, tmp_path):
    done = cli("replay", "orch-traces", "--app", "myapp:factory", "-o", str(tmp_path), cwd=recorded)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the same orchestration" in done.stdout
    (new,) = traces_in(tmp_path)
    (old,) = traces_in(recorded / "orch-traces")
    check_trace(new)
    assert new["trace_id"] != old["trace_id"]


def test_choose_each_writes_one_branch_per_option(recorded, tmp_path):
    (old,) = traces_in(recorded / "orch-traces")
    first = next(e for e in old["events"] if e.get("decision") == "delegate")
    done = cli("replay", "orch-traces", "--app", "myapp:factory", "--fork", first["id"], "--choose-each",
               "-o", str(tmp_path), cwd=recorded)
    assert done.returncode == 0, done.stdout + done.stderr
    branches = traces_in(tmp_path)
    forced = sorted(e["fork"]["forced"][0] for b in branches for e in b["events"] if "fork" in e)
    assert forced == sorted(first["options"])
    for branch in branches:
        check_trace(branch)
        assert branch["task_id"] == old["task_id"]


def test_then_gives_the_calls_after_the_fork_to_a_callable(recorded, tmp_path):
    (old,) = traces_in(recorded / "orch-traces")
    first = next(e for e in old["events"] if e.get("decision") == "delegate")
    done = cli("replay", "orch-traces", "--app", "myapp:factory", "--fork", first["id"], "--choose",
               "research_expert", "--then", "then_module:canned", "-o", str(tmp_path), cwd=recorded)
    assert done.returncode == 0, done.stdout + done.stderr
    (branch,) = traces_in(tmp_path)
    contents = load_contents(tmp_path)
    research = [e for e in branch["events"] if e.get("channel") == "llm" and e["agent"] == "research_expert"]
    assert [json.loads(contents[e["content_ref"]])["content"] for e in research] == ["canned"]


@pytest.mark.parametrize(("args", "message"), [
    (["--app", "myapp:nothing"], "module 'myapp' has no attribute 'nothing'"),
    (["--app", "nomodule:factory"], "no module named 'nomodule'"),
    (["--app", "myapp"], "expected MODULE:NAME"),
    (["--app", "myapp:broken"], "the factory raised RuntimeError"),
    (["--app", "myapp:factory", "--trace-id", "0" * 32], f"no trace with id {'0' * 32}"),
    (["--app", "myapp:factory", "--fork", "e2", "--choose", "math_expert"], "event e2 is a spawn"),
    (["--app", "myapp:factory", "--fork", "e5"], "--fork needs --choose"),
])
def test_bad_input_exits_2_and_says_what(recorded, args, message):
    done = cli("replay", "orch-traces", *args, cwd=recorded)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr


def test_a_recording_without_replay_content_exits_2_naming_the_events(recorded, tmp_path):
    (old,) = traces_in(recorded / "orch-traces")
    (tmp_path / "traces.jsonl").write_text(json.dumps(old) + "\n")  # the trace without its content/ folder
    done = cli("replay", str(tmp_path / "traces.jsonl"), "--app", "myapp:factory", cwd=recorded)
    assert done.returncode == 2
    first_llm = next(e["id"] for e in old["events"] if e.get("channel") == "llm")
    assert "lacks the content of" in done.stderr and first_llm in done.stderr


def test_another_app_exits_1_with_the_first_difference(recorded, tmp_path):
    (tmp_path / "other.py").write_text(f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
                                       "from langgraph_apps import build_router as factory\n")
    done = cli("replay", str(recorded / "orch-traces"), "--app", "other:factory", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "diverged" in done.stdout and "first difference: event e" in done.stdout


def test_a_run_of_another_framework_exits_2_naming_both(recorded, tmp_path):
    # a folder of traces often holds several apps' runs: a LangGraph run given an AutoGen team says so
    (tmp_path / "team.py").write_text(
        "from autogen_agentchat.agents import AssistantAgent\n"
        "from autogen_agentchat.teams import RoundRobinGroupChat\n"
        "from autogen_ext.models.replay import ReplayChatCompletionClient\n\n"
        "def factory():\n"
        "    return RoundRobinGroupChat([AssistantAgent('a', model_client=ReplayChatCompletionClient(['hi']))],"
        " max_turns=1)\n")
    done = cli("replay", str(recorded / "orch-traces"), "--app", "team:factory", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is a run of a LangGraph app, and the app given is an AutoGen one" in done.stderr
    assert "--trace-id ID picks one run" in done.stderr


def test_a_branch_whose_app_raised_says_so(recorded, tmp_path):
    # after the fork the app's own models run; when they fail the branch is still written, and the report says so
    (old,) = traces_in(recorded / "orch-traces")
    first = next(e for e in old["events"] if e.get("decision") == "delegate")
    done = cli("replay", "orch-traces", "--app", "myapp:factory", "--fork", first["id"], "--choose",
               "research_expert", "--then", "then_module:down", "-o", str(tmp_path), cwd=recorded)
    # the model fails at once, so the forced delegation never happens: a divergence that names the exception
    assert done.returncode == 1, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "the forced option did not take: the app's run raised ConnectionError there" in out
    assert "its routing does not follow" not in out
    assert "note: the app's run raised ConnectionError; the new trace records it (stop reason: error)" in out
    assert "model server down" not in out  # the type only: an exception message may carry content
