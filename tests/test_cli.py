"""The orch-otel command: demo, validate (with bad files), show, schema."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import check_trace

from orch_otel.cli import main
from orch_otel.tracefiles import read_lines, trace_files


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orch_otel.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    result = cli("demo", "--trace-dir", str(out))
    assert result.returncode == 0, result.stderr
    return out, result.stdout


def test_demo_writes_a_valid_trace_and_summarises_it(demo_dir):
    out, stdout = demo_dir
    (path,) = trace_files([out])
    (line,) = list(read_lines(path))
    trace = check_trace(line.trace)
    for word in ("decisions", "stop reason", "spawn", "delegate", str(path.name)):
        assert word in stdout.replace("\n", "")
    assert any(e.get("decision") == "stop" for e in trace["events"])


def test_validate_accepts_the_demo_trace(demo_dir):
    out, _ = demo_dir
    result = cli("validate", str(out))
    assert result.returncode == 0, result.stderr
    assert "1 trace(s) in 1 file(s): valid" in result.stdout


def good_trace(demo_dir) -> dict:
    (path,) = trace_files([demo_dir[0]])
    return next(read_lines(path)).trace


def test_validate_reports_malformed_json_with_file_and_line(demo_dir, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(good_trace(demo_dir)) + "\n{not json\n")
    result = cli("validate", str(bad))
    assert result.returncode == 1
    assert f"{bad}:2: malformed JSON" in result.stderr
    assert "1 invalid" in result.stdout


def test_validate_names_the_field_with_the_wrong_type(demo_dir, tmp_path):
    trace = good_trace(demo_dir)
    trace["events"][2]["t"] = "soon"
    trace["costs"]["tokens"] = -1
    bad = tmp_path / "types.jsonl"
    bad.write_text(json.dumps(trace) + "\n")
    result = cli("validate", str(bad))
    assert result.returncode == 1
    assert f"{bad}:1: events[2].t: 'soon' is not of type 'number'" in result.stderr
    assert f"{bad}:1: costs.tokens: -1 is less than the minimum of 0" in result.stderr


def test_validate_names_unknown_top_level_keys(demo_dir, tmp_path):
    trace = good_trace(demo_dir)
    trace["colour"] = "blue"
    bad = tmp_path / "keys.jsonl"
    bad.write_text(json.dumps(trace) + "\n")
    result = cli("validate", str(bad))
    assert result.returncode == 1
    assert "(top level): Additional properties are not allowed ('colour' was unexpected)" in result.stderr


def test_validate_checks_the_contract(demo_dir, tmp_path):
    trace = good_trace(demo_dir)
    stop = next(e for e in trace["events"] if e.get("decision") == "stop")
    del stop["reason"]
    trace["edges"].append({"src": "e1", "dst": "e999", "type": "causal"})
    bad = tmp_path / "contract.jsonl"
    bad.write_text(json.dumps(trace) + "\n")
    result = cli("validate", str(bad))
    assert result.returncode == 1
    assert "a stop decision needs a non-empty reason" in result.stderr
    assert "no event has id 'e999'" in result.stderr


def test_validate_missing_and_empty_inputs(tmp_path):
    missing = cli("validate", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "nope.jsonl: no such file" in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("validate", str(empty))
    assert result.returncode == 2 and "no traces found" in result.stderr


def test_show_prints_the_agent_tree(demo_dir):
    out, _ = demo_dir
    result = cli("show", str(out))
    assert result.returncode == 0, result.stderr
    assert "decide spawn" in result.stdout and "stop reason" in result.stdout
    assert cli("show", str(out), "--trace-id", "nope").returncode == 2  # no such trace: usage (docs/cli.md)


def test_demo_and_show_explain_implied_decisions_and_missing_rewards(demo_dir):
    # The demo's workflow re-enters its supervisor after each worker without a recorded decision: the converter
    # implies those spawns. Its run emits no reward. Both are said in words, not only as a bare [implied] tag.
    out, stdout = demo_dir
    (path,) = trace_files([out])
    (line,) = list(read_lines(path))
    implied = sum(1 for e in line.trace["events"] if e.get("implied"))
    assert implied > 0 and not line.trace["rewards"]
    for text in (stdout, cli("show", str(out)).stdout):
        flat = " ".join(text.replace("│", " ").split())
        assert f"{implied} decision(s) the converter inferred" in flat
        assert "rewards none: emit them with orch_otel.reward()" in flat


def test_schema_command_prints_the_generated_schema(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["additionalProperties"] is False and "events" in schema["required"]


def test_demo_falls_back_to_the_decorator_app_without_langgraph(monkeypatch):
    from rich.console import Console

    from orch_otel import demo as decorator_demo
    from orch_otel.cli import demo as demo_command

    monkeypatch.setitem(sys.modules, "orch_otel.integrations.langgraph.demo", None)  # import raises ImportError
    console = Console(record=True, width=200)
    assert demo_command._demo_app(console) is decorator_demo.run
    assert "LangGraph is not installed: pip install 'orch-otel[langgraph,examples]'" in console.export_text()


def test_demo_names_langchain_when_only_the_langgraph_extra_is_installed(monkeypatch):
    # [langgraph,cli] has LangGraph but not langchain (create_agent): the message must say so, extra included
    from rich.console import Console

    from orch_otel import demo as decorator_demo
    from orch_otel.cli import demo as demo_command

    monkeypatch.delitem(sys.modules, "orch_otel.integrations.langgraph.demo", raising=False)
    monkeypatch.setitem(sys.modules, "langchain.agents", None)  # import raises ImportError naming it
    console = Console(record=True, width=200)
    assert demo_command._demo_app(console) is decorator_demo.run
    text = console.export_text()
    assert "the LangGraph demo needs langchain, which is not installed" in text
    assert "pip install 'orch-otel[langgraph,examples]'" in text
    assert "LangGraph is not installed" not in text


@pytest.mark.parametrize("argv, usage, named", [
    (["dataset", "traces", "-o", "out", "--veiw", "decisions"], "usage: orch-otel dataset",
     "unknown option --veiw (did you mean --view?)"),
    (["replay", "traces", "--app", "m:f", "--fork", "e5", "--choose-eech"], "usage: orch-otel replay",
     "unknown option --choose-eech (did you mean --choose-each?)"),
    (["spool", "replay", "--include-lve"], "usage: orch-otel spool replay",
     "unknown option --include-lve (did you mean --include-live?)"),
])
def test_a_misspelt_option_is_named_with_its_commands_usage(capsys, argv, usage, named):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and named in err
    assert "the following arguments are required" not in err


def test_abbreviated_options_still_work(tmp_path, capsys):
    # argparse accepts a unique prefix; the misspelling check must not refuse it
    assert main(["dataset", str(tmp_path / "none"), "-o", str(tmp_path / "out"), "--vi", "decisions", "--form", "jsonl"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "unknown option" not in err


SPAN_LOGS = {  # what `orch-otel convert` reads, written by hand as a collector and a span dump write them
    "otlp.jsonl": [{"resourceSpans": [{"resource": {}, "scopeSpans": []}]}],
    "spans.jsonl": [{"trace_id": "ab" * 16, "span_id": "cd" * 8, "parent_id": None, "name": "invoke_agent writer",
                     "start_ns": 1, "end_ns": 2, "status": "ok", "attributes": {}, "events": [], "links": []}] * 3,
}


@pytest.mark.parametrize("name", sorted(SPAN_LOGS))
def test_a_span_log_given_for_traces_says_to_convert_it(tmp_path, name, capsys):
    # both are *.jsonl beside the traces: validate, show and dataset say what the file is, once per file for validate
    log = tmp_path / name
    log.write_text("".join(json.dumps(record) + "\n" for record in SPAN_LOGS[name]))
    hint = "a span log line (OTLP JSON or a span dump), not a trace: span logs are what `orch-otel convert LOG"
    assert main(["validate", str(log)]) == 1
    err = capsys.readouterr().err
    assert err.count(hint) == 1 and "is a required property" not in err
    assert main(["show", str(log)]) == 1  # lines read, none a trace
    assert hint in capsys.readouterr().err
    assert main(["dataset", str(log), "-o", str(tmp_path / "out"), "--view", "decisions"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"{log}:1: {hint}" in err and "task_id: missing" not in err
