"""Content policy: off by default, opt-in capture, content store, redaction."""

from __future__ import annotations

import hashlib

import orjson
import pytest
from conftest import check_trace, events_of
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from orch_otel import Attr, ContentPolicy, Recorder, redact_secrets
from orch_otel._invocation import content_into
from orch_otel.content import LocalContents
from orch_otel.exporters import TraceFileExporter
from orch_otel.tracefiles import load_contents, read_lines

SECRET_TEXT = "call with key sk-abcdefghijklmnopqrstuvwx and Authorization: Bearer abc.def.ghijklmnop"


def record_run(recorder: Recorder) -> None:
    with recorder.workflow("flow", task_id="t"):
        with recorder.agent("a"):
            recorder.message({"text": SECRET_TEXT}, recipients=["b"])
            with recorder.tool("fetch", call_id="c1", arguments={"url": "https://bob:hunter2@example.com/x"}) as call:
                call.set_result("ok")
            with recorder.llm("m", input_messages=[{"role": "user", "content": "hi"}],
                              tools=[{"name": "lookup", "description": "token=abc.def.ghijklmnop"}]) as llm:
                llm.set_response([{"role": "assistant", "content": "hello"}], input_tokens=1, output_tokens=1)


def isolated(tmp_path, policy: ContentPolicy):
    provider = TracerProvider()
    exporter = TraceFileExporter(tmp_path)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Recorder(tracer_provider=provider, content=policy), exporter


def written_trace(exporter: TraceFileExporter) -> dict:
    (line,) = list(read_lines(exporter.writer.trace_path))
    return check_trace(line.trace)


def test_content_is_off_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    policy = ContentPolicy.from_env()
    assert policy.capture is False
    recorder, exporter = isolated(tmp_path, policy)
    record_run(recorder)
    trace = written_trace(exporter)
    raw = exporter.writer.trace_path.read_text()
    assert "sk-abc" not in raw and "hunter2" not in raw and "hello" not in raw
    assert not exporter.writer.content_path.exists()
    (msg,) = events_of(trace, "message", channel="agent")
    assert msg["content_ref"].startswith("b2:")
    (call,) = events_of(trace, "tool_call")
    assert call["content_ref"].startswith("b2:")


def test_refs_are_stable_across_runs(tmp_path):
    first = ContentPolicy().apply({"b": 1, "a": [1, 2]})
    again = ContentPolicy().apply({"a": [1, 2], "b": 1})
    assert first.ref == again.ref and first.text is None
    assert ContentPolicy(hash_key=b"k").apply({"b": 1, "a": [1, 2]}).ref != first.ref


@pytest.mark.parametrize("value", ["true", "span_only", "SPAN_AND_EVENT"])
def test_capture_env_variable_turns_capture_on(monkeypatch, value):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    assert ContentPolicy.from_env().capture is True
    assert ContentPolicy.from_env(capture=False).capture is False  # explicit argument wins


def test_bad_capture_value_warns_and_stays_off(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "maybe")
    assert ContentPolicy.from_env().capture is False
    assert any("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in r.getMessage() for r in caplog.records)


def test_captured_content_resolves_and_is_redacted(tmp_path):
    recorder, exporter = isolated(tmp_path, ContentPolicy(capture=True))
    record_run(recorder)
    trace = written_trace(exporter)
    contents = load_contents(tmp_path)
    refs = {e[k] for e in trace["events"] for k in ("content_ref", "input_ref", "tools_ref") if k in e}
    assert refs and refs <= set(contents), "every ref resolves in the content store"
    for ref in refs:  # the store holds exactly the text the ref hashes
        assert ref == "b2:" + hashlib.blake2b(contents[ref].encode(), digest_size=16).hexdigest()
    everything = exporter.writer.content_path.read_text() + exporter.writer.trace_path.read_text()
    assert "sk-abcdefghijklmnopqrstuvwx" not in everything
    assert "abc.def.ghijklmnop" not in everything
    assert "hunter2" not in everything
    (msg,) = events_of(trace, "message", channel="agent")
    assert "[REDACTED]" in orjson.loads(contents[msg["content_ref"]])["text"]
    (llm,) = events_of(trace, "message", channel="llm")
    assert orjson.loads(contents[llm["content_ref"]]) == [{"role": "assistant", "content": "hello"}]


def test_custom_redactors_replace_or_extend_the_default(tmp_path):
    policy = ContentPolicy(capture=True, redactors=[lambda text: text.replace("alice", "<name>")])
    kept = policy.apply("alice used sk-abcdefghijklmnopqrstuvwx")
    assert "<name>" in kept.text and "sk-abcdefghijklmnopqrstuvwx" in kept.text  # default replaced
    policy = ContentPolicy(capture=True)
    policy.add_redactor(lambda text: text.replace("alice", "<name>"))
    kept = policy.apply("alice used sk-abcdefghijklmnopqrstuvwx")
    assert "<name>" in kept.text and "sk-abc" not in kept.text


def test_spans_carry_content_only_when_captured(captured):
    for capture in (False, True):
        recorder = Recorder(content=ContentPolicy(capture=capture))
        with recorder.agent("a"):
            with recorder.tool("t", call_id="x", arguments={"q": 1}) as call:
                call.set_result({"r": 2})
    off, on = [s for s in captured.spans if s.name == "execute_tool t"]
    assert Attr.TOOL_CALL_ARGUMENTS not in off.attributes and Attr.TOOL_CALL_RESULT not in off.attributes
    assert off.attributes[Attr.INPUT_REF] == on.attributes[Attr.INPUT_REF]
    assert orjson.loads(on.attributes[Attr.TOOL_CALL_ARGUMENTS]) == {"q": 1}
    assert orjson.loads(on.attributes[Attr.TOOL_CALL_RESULT]) == {"r": 2}


@pytest.mark.parametrize(
    "text, secret",
    [
        ("key AKIAABCDEFGHIJKLMNOP here", "AKIAABCDEFGHIJKLMNOP"),
        ("token ghp_" + "a" * 36, "ghp_" + "a" * 36),
        ('{"password": "hunter22"}', "hunter22"),
        ("postgres://user:s3cretpw@db/x", "s3cretpw"),
        ("api_key=abcd1234efgh", "abcd1234efgh"),
    ],
)
def test_default_redactor_patterns(text, secret):
    assert secret not in redact_secrets(text)


def test_local_contents_are_bounded_and_let_go_once_written():
    store = LocalContents(max_bytes=10)
    store.keep("r1", "aaaa")
    store.keep("r2", "bbbb")
    store.keep("r3", "cccc")  # 12 bytes held: the oldest goes
    assert store.dropped == 1
    assert store.texts(["r1", "r2", "r3"]) == {"r2": "bbbb", "r3": "cccc"}
    assert store.take(["r2", "missing"]) == {"r2": "bbbb"}
    assert store.texts(["r2"]) == {}
    store.keep("r4", "dddddd")  # 10 bytes with r3: nothing more to drop
    assert store.dropped == 1


def test_record_for_replay_keeps_texts_off_the_spans():
    policy = ContentPolicy.from_env(capture=False, record_for_replay=True)
    assert policy.capture and policy.local is not None and not policy.on_spans
    both = ContentPolicy.from_env(capture=True, record_for_replay=True)
    assert both.local is None and both.on_spans  # with capture on the texts are on the spans anyway
    attrs: dict = {}
    content_into(attrs, policy, {"q": "secret plan"}, Attr.INPUT_REF, Attr.INPUT_MESSAGES)
    assert set(attrs) == {Attr.INPUT_REF}
    assert policy.local.texts([attrs[Attr.INPUT_REF]]) == {attrs[Attr.INPUT_REF]: '{"q":"secret plan"}'}
