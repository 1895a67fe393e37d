"""Token ids and logprobs of model calls (issue 33): captured below the
frameworks, at the openai SDK, from a loopback server that sends them as vLLM
(or SGLang) does; read back in the ``turns`` rows; never on a span.

The expected values are what the server put on the wire (``server.sent``),
matched to rows by the request each row's call made."""

from __future__ import annotations

import asyncio
import json
import math
from contextlib import contextmanager
from pathlib import Path

import pytest
from openai_server import OpenAIServer, Reply

from orch_otel import testing
from orch_otel._tokens import Prefixes, TokenReader, TokenRecord
from orch_otel.content import ContentPolicy, LocalContents
from orch_otel.converter import content_refs
from orch_otel.datasets import Config, build
from orch_otel.integrations.openai_sdk import OpenAITokensInstrumentor
from orch_otel.recorder import Recorder, get_recorder, set_recorder
from orch_otel.tracefiles import TraceWriter

ASK = {"logprobs": True, "extra_body": {"return_token_ids": True}}  # what a vLLM user sends
MODEL_INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
              "structured_output": False}


@pytest.fixture
def server():
    servers: list[OpenAIServer] = []

    def start(layout: str = "vllm") -> OpenAIServer:
        servers.append(OpenAIServer(layout=layout).start())
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


class Recording:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.traces: list[dict] = []
        self.spans: list = []
        self.contents: dict[str, str] = {}

    def turns(self) -> list[dict]:
        build([self.directory], self.directory / "out", Config(view="turns"))
        return [json.loads(line) for line in (self.directory / "out" / "turns.jsonl").read_text().splitlines()]


@contextmanager
def recording(tmp_path: Path, *instrumentors, capture_content: bool = True, tokens: bool = True):
    """Record with token capture on (and content capture, to show the ids stay off spans even then),
    then write the traces and the content store, as the live exporter does."""
    old = get_recorder()
    policy = ContentPolicy(capture=capture_content, tokens=LocalContents() if tokens else None)
    set_recorder(Recorder(content=policy))
    sdk = OpenAITokensInstrumentor()
    sdk.instrument()
    for instrumentor in instrumentors:
        instrumentor.instrument()
    rec = Recording(tmp_path / "traces")
    try:
        with testing.capture() as captured:
            yield rec
    finally:
        for instrumentor in reversed(instrumentors):
            instrumentor.uninstrument()
        sdk.uninstrument()
        set_recorder(old)
    writer = TraceWriter(rec.directory)
    for c in captured.conversions():
        local = policy.tokens.take(content_refs(c.trace)) if policy.tokens is not None else {}
        writer.write(c.trace, {**local, **c.contents})
        rec.traces.append(c.trace)
        rec.contents.update({**local, **c.contents})
    writer.close()
    rec.spans = captured.spans


def sent_for(sent: list[dict], row: dict) -> dict:
    """The server's record of the request whose prompt ids the row holds."""
    hits = [s for s in sent if s["prompt_token_ids"] == row["prompt_token_ids"]]
    assert len(hits) == 1, f"{len(hits)} requests had the prompt of event {row['event_id']}"
    return hits[0]


def assert_rows_equal_sent(server: OpenAIServer | list[dict], rows: list[dict]) -> None:
    sent = server if isinstance(server, list) else server.sent
    assert len(rows) == len(sent)
    for row in rows:
        one = sent_for(sent, row)
        assert row["response_token_ids"] == one["response_token_ids"]
        assert row["response_logprobs"] == one["logprobs"]  # exact floats, as sent
    assert sorted(map(str, (r["prompt_token_ids"] for r in rows))) == sorted(map(str, (s["prompt_token_ids"]
                                                                                      for s in sent)))


def assert_no_tokens_on_spans(rec: Recording, server: OpenAIServer) -> None:
    """No id list nor logprob in any span attribute or span event, nor in any trace line."""
    logprob_texts = {repr(v) for s in server.sent for v in (s["logprobs"] or ())}
    id_lists = [s[k] for s in server.sent for k in ("prompt_token_ids", "response_token_ids") if s[k]]
    for span in rec.spans:
        values = list(span.attributes.values()) + [v for e in span.events for v in e.attributes.values()]
        for value in values:
            assert not (isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value)), span.name
            text = str(value)
            assert not any(t in text for t in logprob_texts), f"a logprob in an attribute of {span.name}"
            assert not any(json.dumps(ids)[1:-1] in text for ids in id_lists), f"token ids in an attribute of {span.name}"
    for path in rec.directory.glob("traces-*.jsonl"):
        text = path.read_text()
        assert not any(t in text for t in logprob_texts)
        assert not any(json.dumps(ids, separators=(",", ":"))[1:-1] in text for ids in id_lists if len(ids) > 3)


# -- the openai SDK, directly, inside @llm_call ---------------------------------------------


def _sdk_conversation(client, stream: bool) -> None:
    import orch_otel

    messages = [{"role": "user", "content": "hi"}]
    with orch_otel.agent("solo"):
        for question in ("more", "again"):
            with orch_otel.llm_call("m"):
                response = client.chat.completions.create(model="m", messages=messages, stream=stream, **ASK)
                text = "".join(c.choices[0].delta.content or "" for c in response if c.choices) if stream \
                    else response.choices[0].message.content
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": question}]


@pytest.mark.parametrize("stream", [False, True])
def test_openai_sdk_calls_keep_the_ids_and_logprobs_the_server_sent(tmp_path, server, stream):
    import openai

    srv = server()
    srv.script(Reply("hello there"), Reply("a second, longer answer"))
    with recording(tmp_path) as rec:
        _sdk_conversation(openai.OpenAI(base_url=srv.base_url, api_key="x"), stream)
    rows = rec.turns()
    assert [r["agent"] for r in rows] == ["solo", "solo"]
    # the orchestration context stays with each call: the agent's run ends (its stop) after its second call
    assert [r["decisions"] for r in rows] == [[], ["stop"]]
    assert rows[0]["instance"] == rows[1]["instance"] is not None
    assert_rows_equal_sent(srv, rows)
    assert all(s["prompt_token_ids"] and s["response_token_ids"] and s["logprobs"] for s in srv.sent)
    assert_no_tokens_on_spans(rec, srv)


async def test_async_openai_sdk_stream_and_create(tmp_path, server):
    import openai

    import orch_otel

    srv = server()
    client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x")
    with recording(tmp_path) as rec:
        with orch_otel.agent("solo"):
            with orch_otel.llm_call("m"):
                await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}], **ASK)
            with orch_otel.llm_call("m"):
                chunks = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}],
                                                              stream=True, **ASK)
                async for _ in chunks:
                    pass
    assert_rows_equal_sent(srv, rec.turns())


def test_sdk_calls_outside_a_recorded_model_call_are_left_alone(tmp_path, server):
    import openai

    srv = server()
    client = openai.OpenAI(base_url=srv.base_url, api_key="x")
    with recording(tmp_path) as rec:
        response = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], **ASK)
    assert response.model_extra["prompt_token_ids"] == srv.sent[0]["prompt_token_ids"]  # the app's response as sent
    assert rec.traces == [] and rec.contents == {}


# -- LangGraph, ChatOpenAI -----------------------------------------------------------------------


def _add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _chat_openai(srv: OpenAIServer, streaming: bool | None = None):
    from langchain_openai import ChatOpenAI

    options = {} if streaming is None else {"streaming": streaming}  # streaming=False would turn .stream() into .invoke()
    return ChatOpenAI(model="m", base_url=srv.base_url, api_key="x", **options, **ASK)


@pytest.mark.parametrize("streaming", [False, True])
def test_langgraph_agent_with_chat_openai(tmp_path, server, streaming):
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    srv = server()
    srv.script(Reply(tool_calls=[("_add", {"a": 1, "b": 2})]), Reply("1 + 2 = 3"))
    with recording(tmp_path, LangGraphInstrumentor()) as rec:
        agent = create_agent(_chat_openai(srv, streaming), tools=[tool(_add)], name="math")
        result = agent.invoke({"messages": [("user", "what is 1+2?")]})
    assert result["messages"][-1].content == "1 + 2 = 3"
    rows = rec.turns()
    assert [(r["agent"], [c["tool"] for c in r["tool_calls"]]) for r in rows] == [("math", ["_add"]), ("math", [])]
    assert_rows_equal_sent(srv, rows)
    # the second prompt extends the first call's prompt and answer: stored as a reference, read back whole
    first, second = (json.loads(rec.contents[r["tokens_ref"]]) for r in rows)
    assert isinstance(first["prompt"], list) and second["prompt"]["base"] == rows[0]["tokens_ref"]
    assert_no_tokens_on_spans(rec, srv)
    pq = pytest.importorskip("pyarrow.parquet")
    build([rec.directory], tmp_path / "pq", Config(view="turns"), fmt="parquet")
    table = pq.read_table(tmp_path / "pq" / "turns.parquet")
    assert str(table.schema.field("response_token_ids").type.value_type) == "int64"
    assert table.column("response_logprobs").to_pylist() == [r["response_logprobs"] for r in rows]


def test_langgraph_node_streaming_a_chat_model(tmp_path, server):
    """``model.stream()`` in a node: langchain-core makes the request without a run id; the handler's start names it."""
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    class State(TypedDict):
        question: str
        answer: str

    srv = server()
    srv.script(Reply("streamed answer"), Reply("checked"))
    model = _chat_openai(srv)
    requests = srv.requests

    def writer(state: State) -> dict:
        return {"answer": "".join(str(c.content) for c in model.stream(state["question"]))}

    def checker(state: State) -> dict:
        return {"answer": model.invoke(state["answer"]).content}

    graph = StateGraph(State)
    graph.add_node("writer", writer)
    graph.add_node("checker", checker)
    graph.add_edge(START, "writer")
    graph.add_edge("writer", "checker")
    graph.add_edge("checker", END)
    with recording(tmp_path, LangGraphInstrumentor()) as rec:
        out = graph.compile().invoke({"question": "q", "answer": ""})
    assert out["answer"] == "checked"
    assert [bool(r.get("stream")) for r in requests] == [True, False]  # the writer's request really streamed
    rows = rec.turns()
    assert [r["agent"] for r in rows] == ["writer", "checker"]
    assert_rows_equal_sent(srv, rows)


async def test_langgraph_concurrent_runs_and_batched_calls_each_keep_their_own_ids(tmp_path, server):
    """Eight runs at once, and in each a node that sends two requests in one ``agenerate``
    (both calls start before either request): every row holds its own request's ids."""
    from langchain_core.messages import HumanMessage
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    class State(TypedDict):
        question: str
        answers: list[str]

    srv = server()
    model = _chat_openai(srv)

    async def pair(state: State) -> dict:
        q = state["question"]
        result = await model.agenerate([[HumanMessage(f"{q} first")], [HumanMessage(f"{q} second")]])
        return {"answers": [g[0].text for g in result.generations]}

    async def single(state: State) -> dict:
        reply = await model.ainvoke(f"{state['question']} alone")
        return {"answers": state["answers"] + [str(reply.content)]}

    graph = StateGraph(State)
    graph.add_node("pair", pair)
    graph.add_node("single", single)
    graph.add_edge(START, "pair")
    graph.add_edge("pair", "single")
    graph.add_edge("single", END)
    app = graph.compile()
    with recording(tmp_path, LangGraphInstrumentor()) as rec:
        await asyncio.gather(*(app.ainvoke({"question": f"q{i}", "answers": []}) for i in range(8)))
    rows = rec.turns()
    assert len(rec.traces) == 8 and len(rows) == 24
    assert_rows_equal_sent(srv, rows)
    assert sorted(r["trace_id"] for r in rows) == sorted(t["trace_id"] for t in rec.traces for _ in range(3))


# -- AutoGen, OpenAIChatCompletionClient ------------------------------------------------------


def _autogen_team(srv: OpenAIServer, stream: bool):
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(model="m", base_url=srv.base_url, api_key="x", model_info=MODEL_INFO, **ASK)
    agents = [AssistantAgent(name, model_client=client, model_client_stream=stream) for name in ("writer", "critic")]
    return RoundRobinGroupChat(agents, termination_condition=MaxMessageTermination(4))


@pytest.mark.parametrize("stream", [False, True])
async def test_autogen_team_with_openai_client(tmp_path, server, stream):
    from orch_otel.integrations.autogen import AutoGenInstrumentor

    srv = server()
    srv.script(Reply("draft"), Reply("too short"), Reply("a longer draft"))
    with recording(tmp_path, AutoGenInstrumentor()) as rec:
        await _autogen_team(srv, stream).run(task="write a line")
    rows = rec.turns()
    assert [r["agent"] for r in rows] == ["writer", "critic", "writer"]
    assert_rows_equal_sent(srv, rows)
    assert all(r["response_logprobs"] and len(r["response_logprobs"]) == len(r["response_token_ids"]) for r in rows)
    assert_no_tokens_on_spans(rec, srv)


# -- SGLang's layout, and servers that send nothing ---------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_sglang_layout(tmp_path, server, stream):
    import openai

    srv = server("sglang")
    ask = {"logprobs": True, "extra_body": {"return_input_ids_in_sglext": True, "return_output_ids_in_sglext": True}
           if stream else {"return_prompt_token_ids": True, "return_token_ids": True}}
    client = openai.OpenAI(base_url=srv.base_url, api_key="x")
    import orch_otel

    with recording(tmp_path) as rec:
        with orch_otel.agent("solo"), orch_otel.llm_call("m"):
            response = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                      stream=stream, **ask)
            if stream:
                list(response)
    assert_rows_equal_sent(srv, rec.turns())
    assert srv.sent[0]["prompt_token_ids"] and srv.sent[0]["response_token_ids"]


def test_a_server_without_ids_changes_nothing_and_rows_say_absent(tmp_path, server):
    import langgraph.pregel  # noqa: F401 - the LangGraph integration applies on its import

    import orch_otel
    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    srv = server("plain")
    with recording(tmp_path, LangGraphInstrumentor()) as rec, orch_otel.agent("solo"):
        reply = _chat_openai(srv).invoke("hi")
    with recording(tmp_path / "off", LangGraphInstrumentor(), tokens=False), orch_otel.agent("solo"):
        reply_off = _chat_openai(srv).invoke("hi")
    assert reply.content == reply_off.content == "done"
    assert reply.response_metadata.get("logprobs") == reply_off.response_metadata.get("logprobs")
    (row,) = rec.turns()
    assert (row["prompt_token_ids"], row["response_token_ids"], row["response_logprobs"], row["tokens_ref"]) == \
        (None, None, None, None)
    assert rec.traces[0]["events"] and all("tokens_ref" not in e for e in rec.traces[0]["events"])
    assert srv.requests[0] == srv.requests[1]  # capture asks the server for nothing by itself


def test_capture_off_leaves_the_sdk_unpatched():
    from openai.resources.chat.completions import completions

    before = completions.Completions.create
    old = get_recorder()
    set_recorder(Recorder(content=ContentPolicy()))
    instrumentor = OpenAITokensInstrumentor()
    try:
        instrumentor.instrument()
        assert completions.Completions.create is before
    finally:
        instrumentor.uninstrument()
        set_recorder(old)


def test_request_tokens_asks_vllm_for_ids_only_in_recorded_calls(tmp_path, server):
    import openai

    import orch_otel

    srv = server()
    client = openai.OpenAI(base_url=srv.base_url, api_key="x")
    old = get_recorder()
    set_recorder(Recorder(content=ContentPolicy(tokens=LocalContents())))
    instrumentor = OpenAITokensInstrumentor()
    instrumentor.instrument(request_tokens="vllm")
    try:
        extra = {"top_k": 5}
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "outside"}], extra_body=extra)
        with testing.capture(), orch_otel.agent("a"), orch_otel.llm_call("m"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "inside"}], extra_body=extra)
    finally:
        instrumentor.uninstrument()
        set_recorder(old)
    outside, inside = srv.requests
    assert "logprobs" not in outside and "return_token_ids" not in outside
    assert inside["logprobs"] is True and inside["return_token_ids"] is True and inside["top_k"] == 5
    assert extra == {"top_k": 5}  # the app's own dict is not changed


# -- storage ---------------------------------------------------------------------------------


def test_prefix_sharing_reads_back_every_prompt_and_grows_with_new_tokens():
    store = LocalContents()
    policy = ContentPolicy(tokens=store)
    prompt: list[int] = list(range(50))
    refs, records = [], []
    for turn in range(20):
        response = [1000 + turn * 10 + k for k in range(10)]
        record = TokenRecord(list(prompt), response, [-0.5 - k / 7 for k in range(10)])
        refs.append(policy.keep_tokens("trace", record))
        records.append(record)
        prompt = prompt + response[:-1] + [7, 8, 9]  # the template drops the last id and adds its own
    texts = store.texts(refs)
    reader = TokenReader(texts.get)
    assert [reader.read(ref) for ref in reversed(refs)] == list(reversed(records))  # any order, cold cache
    sizes = [len(texts[ref]) for ref in refs]
    assert max(sizes[1:]) < sizes[0] + 200  # each later record holds the new tokens, not the whole prompt
    whole = Prefixes(sharing=False)
    unshared = [len(whole.encode("t", r, policy.ref_of)[1]) for r in records]
    assert unshared[-1] > 3 * sizes[-1]


def test_a_prompt_whose_base_is_missing_reads_as_absent():
    policy = ContentPolicy(tokens=LocalContents())
    first = policy.keep_tokens("t", TokenRecord(list(range(20)), [1, 2], [-1.0, -2.0]))
    second = policy.keep_tokens("t", TokenRecord(list(range(20)) + [1, 2, 3], [4], [-0.25]))
    texts = policy.tokens.texts([first, second])  # type: ignore[union-attr]
    del texts[first]
    assert TokenReader(texts.get).read(second) == TokenRecord(None, [4], [-0.25])


def test_logprobs_that_are_not_finite_read_as_absent():
    policy = ContentPolicy(tokens=LocalContents())
    ref = policy.keep_tokens("t", TokenRecord([1], [2, 3], [-1.0, math.inf]))
    texts = policy.tokens.texts([ref])  # type: ignore[union-attr]
    assert TokenReader(texts.get).read(ref) == TokenRecord([1], [2, 3], None)


# -- live: instrument(), the trace-file exporter and OTLP export, in a fresh process --------------

_LIVE_APP = """
import json, sys
sys.path.insert(0, {tests!r})
from openai_server import OpenAIServer, Reply
import orch_otel
orch_otel.instrument(trace_dir={trace_dir!r}, capture_content=True, capture_tokens=True)
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

def add(a: int, b: int) -> int:
    '''Add two numbers.'''
    return a + b

srv = OpenAIServer(layout="vllm").start()
srv.script(Reply(tool_calls=[("add", {{"a": 1, "b": 2}})]), Reply("3"))
model = ChatOpenAI(model="m", base_url=srv.base_url, api_key="x", logprobs=True, extra_body={{"return_token_ids": True}})
create_agent(model, tools=[tool(add)], name="math").invoke({{"messages": [("user", "1+2?")]}})
assert orch_otel.flush()
print(json.dumps(srv.sent))
"""


def test_live_export_writes_ids_to_the_content_store_and_none_to_otlp(tmp_path, run_python):
    from otlp_receiver import OTLPReceiver, free_port

    receiver = OTLPReceiver(free_port()).start()
    trace_dir = tmp_path / "traces"
    code = _LIVE_APP.format(tests=str(Path(__file__).parent), trace_dir=str(trace_dir))
    try:
        done = run_python(code, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url,
                                     "ORCH_OTEL_SPOOL_DIR": str(tmp_path / "spool")})
    finally:
        receiver.stop()
    assert done.returncode == 0, done.stderr
    sent = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(sent) == 2
    refs = [kv for s in receiver.spans if s.name.startswith("chat") for kv in s.attributes if kv.key == "orch.tokens.ref"]
    assert len(refs) == 2  # both model calls reached the collector, with the ref of their ids and nothing more
    logprob_texts = {repr(v) for s in sent for v in s["logprobs"]}
    for span in receiver.spans:
        for kv in [*span.attributes, *(kv for event in span.events for kv in event.attributes)]:
            value = kv.value
            assert not value.HasField("array_value") or not any(v.HasField("int_value") for v in value.array_value.values)
        assert not any(t in str(span) for t in logprob_texts), span.name  # the whole OTLP span, as text
    spooled = b"".join(p.read_bytes() for p in (tmp_path / "spool").rglob("*") if p.is_file())
    assert not any(t.encode() in spooled for t in logprob_texts)
    assert_rows_equal_sent(sent, Recording(trace_dir).turns())
    lines = "".join(p.read_text() for p in trace_dir.glob("traces-*.jsonl"))
    assert not any(t in lines for t in logprob_texts)


# -- the host is never broken ---------------------------------------------------------------------


def test_a_stream_left_early_keeps_nothing_and_the_app_goes_on(tmp_path, server):
    import openai

    import orch_otel

    srv = server()
    client = openai.OpenAI(base_url=srv.base_url, api_key="x")
    with recording(tmp_path) as rec:
        with orch_otel.agent("solo"), orch_otel.llm_call("m"):
            with client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True,
                                                **ASK) as stream:
                first = next(iter(stream))
    assert first.choices[0].delta.role == "assistant"
    (row,) = rec.turns()
    assert row["response_token_ids"] is None and row["tokens_ref"] is None


def test_malformed_ids_read_as_absent_and_the_response_is_untouched(tmp_path, server):
    import openai

    import orch_otel

    srv = server()
    original = srv._completion

    def broken(*args, **kwargs):
        out = original(*args, **kwargs)
        out["prompt_token_ids"] = "not a list"
        out["choices"][0]["token_ids"] = [1, "two", 3]
        return out

    srv._completion = broken  # type: ignore[method-assign]
    client = openai.OpenAI(base_url=srv.base_url, api_key="x")
    with recording(tmp_path) as rec:
        with orch_otel.agent("solo"), orch_otel.llm_call("m"):
            response = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], **ASK)
    assert response.model_extra["prompt_token_ids"] == "not a list"
    (row,) = rec.turns()
    assert row["prompt_token_ids"] is None and row["response_token_ids"] is None
    assert row["response_logprobs"] == srv.sent[0]["logprobs"]  # what was well formed is kept


def test_zero_code_capture_from_the_environment(tmp_path, run_zero_code):
    trace_dir = tmp_path / "traces"
    code = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from openai_server import OpenAIServer
import openai, orch_otel
srv = OpenAIServer(layout="vllm").start()
client = openai.OpenAI(base_url=srv.base_url, api_key="x")
with orch_otel.agent("solo"), orch_otel.llm_call("m"):
    client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "x"}}], logprobs=True,
                                   extra_body={{"return_token_ids": True}})
print(json.dumps(srv.sent))
"""
    done = run_zero_code(code, trace_dir, env={"ORCH_OTEL_CAPTURE_TOKENS": "true"})
    assert done.returncode == 0, done.stderr
    assert_rows_equal_sent(json.loads(done.stdout.strip().splitlines()[-1]), Recording(trace_dir).turns())


def test_langgraph_runs_on_threads_with_batched_calls_each_keep_their_own_ids(tmp_path, server):
    """The sync twin: ``app.batch`` runs the graphs on threads; a node's ``generate`` starts two calls at once."""
    from langchain_core.messages import HumanMessage
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    class State(TypedDict):
        question: str

    srv = server()
    model = _chat_openai(srv)

    def pair(state: State) -> dict:
        model.generate([[HumanMessage(f"{state['question']} first")], [HumanMessage(f"{state['question']} second")]])
        return {}

    graph = StateGraph(State)
    graph.add_node("pair", pair)
    graph.add_edge(START, "pair")
    graph.add_edge("pair", END)
    with recording(tmp_path, LangGraphInstrumentor()) as rec:
        graph.compile().batch([{"question": f"q{i}"} for i in range(6)])
    rows = rec.turns()
    assert len(rec.traces) == 6 and len(rows) == 12
    assert_rows_equal_sent(srv, rows)


def test_request_tokens_for_sglang_streams_asks_for_the_sglext_ids(tmp_path, server, monkeypatch):
    import openai

    import orch_otel

    monkeypatch.setenv("ORCH_OTEL_REQUEST_TOKENS", "sglang")
    srv = server("sglang")
    client = openai.OpenAI(base_url=srv.base_url, api_key="x")
    with recording(tmp_path) as rec:
        with orch_otel.agent("solo"):
            for stream in (False, True):
                with orch_otel.llm_call("m"):
                    response = client.chat.completions.create(model="m", stream=stream,
                                                              messages=[{"role": "user", "content": f"stream={stream}"}])
                    if stream:
                        list(response)
    plain, streamed = srv.requests
    assert plain["return_token_ids"] is True and "return_output_ids_in_sglext" not in plain
    assert streamed["return_output_ids_in_sglext"] is True and "return_token_ids" not in streamed  # SGLang refuses it
    rows = rec.turns()
    assert_rows_equal_sent(srv, rows)
    assert all(r["prompt_token_ids"] and r["response_token_ids"] and r["response_logprobs"] for r in rows)


def test_chat_openai_streaming_through_with_raw_response(tmp_path, server):
    """``include_response_headers`` makes ChatOpenAI stream through ``with_raw_response``: the parsed stream is read."""
    import langgraph.pregel  # noqa: F401 - the LangGraph integration applies on its import
    from langchain_openai import ChatOpenAI

    import orch_otel
    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    srv = server()
    model = ChatOpenAI(model="m", base_url=srv.base_url, api_key="x", streaming=True, include_response_headers=True, **ASK)
    with recording(tmp_path, LangGraphInstrumentor()) as rec, orch_otel.agent("solo"):
        reply = model.invoke("hi")
    assert reply.content == "done" and "headers" in reply.response_metadata
    assert_rows_equal_sent(srv, rec.turns())


@pytest.mark.parametrize(("raw", "expected"), [("vllm", "vllm"), ("true", "vllm"), ("SGLang", "sglang"), ("false", None),
                                               ("", None), ("ollama", None)])
def test_request_tokens_setting(monkeypatch, raw, expected):
    from orch_otel import _env

    monkeypatch.setenv("ORCH_OTEL_REQUEST_TOKENS", raw)
    assert _env.request_tokens() == expected


def test_capture_tokens_from_the_environment(monkeypatch):
    monkeypatch.setenv("ORCH_OTEL_CAPTURE_TOKENS", "true")
    assert ContentPolicy.from_env().tokens is not None
    assert ContentPolicy.from_env(capture_tokens=False).tokens is None
    monkeypatch.setenv("ORCH_OTEL_CAPTURE_TOKENS", "maybe")  # a bad value: a warning and the default, off
    assert ContentPolicy.from_env().tokens is None


# -- the OpenAI Agents SDK's Chat Completions model ----------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_openai_agents_chat_completions_model_keeps_each_calls_ids(tmp_path, server, stream):
    pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")
    import openai
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool

    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    @function_tool
    def lookup(number: str) -> str:
        """Look an invoice up."""
        return f"invoice {number}: paid"

    srv = server()
    srv.script(Reply(tool_calls=[("lookup", {"number": "42"})]), Reply("paid"))
    model = OpenAIChatCompletionsModel(model="m", openai_client=openai.AsyncOpenAI(base_url=srv.base_url, api_key="x"))
    agent = Agent(name="clerk", tools=[lookup], model=model,
                  model_settings=ModelSettings(extra_args={"logprobs": True}, extra_body={"return_token_ids": True}))

    async def run() -> str:
        if not stream:
            return (await Runner.run(agent, "Is 42 paid?", run_config=RunConfig(workflow_name="billing"))).final_output
        result = Runner.run_streamed(agent, "Is 42 paid?", run_config=RunConfig(workflow_name="billing"))
        async for _ in result.stream_events():
            pass
        return result.final_output

    with recording(tmp_path, OpenAIAgentsInstrumentor()) as rec:
        assert asyncio.run(run()) == "paid"
    rows = rec.turns()
    assert [r["agent"] for r in rows] == ["clerk", "clerk"]
    assert_rows_equal_sent(srv, rows)
    assert_no_tokens_on_spans(rec, srv)
