"""Token capture (issue 33): storage per model call and capture overhead.

    .venv/bin/python -m benchmarks.bench_tokens [--turns 20] [--calls 40] [--rounds 16]

Runs in the main venv (it needs the openai SDK, which the ``dev`` extra has),
against the tests' loopback OpenAI-compatible server in vLLM's layout
(``tests/openai_server.py``), so the numbers include a real HTTP round trip on
loopback, as a local vLLM would (minus the model's own time, which only makes
the ratio smaller).

- Storage: one agent's 20-turn conversation (each turn: a user message, a
  reply of about 150 tokens), recorded with ``capture_tokens=True``; bytes of
  the token records' content-store lines per call, with prefix sharing and
  without (each prompt stored whole).
- Overhead: the same model call (streaming and not) inside ``llm_call``,
  with token capture on and off, interleaved rounds, median per call; the
  ratio is on / off, for wall time (noisy on a shared machine: the capture's
  share is small) and for the app thread's CPU time (the server runs on its own
  threads).
  Also the capture's own work alone per call (reading the response or the
  stream's chunks, keeping the record), timed on SDK objects received once,
  and the ratio it gives: (off + capture) / off.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from openai_server import OpenAIServer, Reply  # noqa: E402

import orch_otel  # noqa: E402
from orch_otel.tracefiles import load_contents  # noqa: E402

ASK = {"logprobs": True, "extra_body": {"return_token_ids": True}}
WORDS = "the agent reads the tool result and decides which teammate should act next given the plan ".split()


def _reply(turn: int, tokens: int = 150) -> Reply:
    text = " ".join(WORDS[(turn + k) % len(WORDS)] for k in range(tokens))[:tokens]
    return Reply(text)


def _conversation(client: Any, turns: int) -> None:
    messages = [{"role": "system", "content": "You are a careful planner. " * 20},
                {"role": "user", "content": "Plan the task."}]
    with orch_otel.agent("planner"):
        for turn in range(turns):
            with orch_otel.llm_call("m"):
                response = client.chat.completions.create(model="m", messages=messages, **ASK)
            messages += [{"role": "assistant", "content": response.choices[0].message.content},
                         {"role": "user", "content": f"Tool result {turn}: ok, {turn * 7} rows."}]


def storage(turns: int) -> dict[str, float]:
    import openai

    out: dict[str, float] = {}
    for sharing in (True, False):
        server = OpenAIServer(layout="vllm").start()
        server.script(*(_reply(t) for t in range(turns)))
        with tempfile.TemporaryDirectory() as directory:
            state = orch_otel.instrument(trace_dir=directory, capture_tokens=True)
            state.recorder.content.prefixes.sharing = sharing
            _conversation(openai.OpenAI(base_url=server.base_url, api_key="x"), turns)
            orch_otel.flush()
            orch_otel.uninstrument()
            # the bytes on disk: each record's whole content-store line, by the length of its call's prompt
            records = sorted((orjson.dumps({"ref": ref, "text": text}) + b"\n"
                              for ref, text in load_contents(directory).items() if text.startswith('{"v":1')),
                             key=_prompt_length)
        server.stop()
        key = "shared" if sharing else "whole"
        out[f"bytes_per_call_{key}"] = sum(map(len, records)) / len(records)
        out[f"bytes_last_call_{key}"] = len(records[-1])  # the prompt grows every turn: the longest is the last call's
        out["tokens_per_call"] = statistics.mean(len(s["prompt_token_ids"]) + len(s["response_token_ids"])
                                                 for s in server.sent)
    return out


def _prompt_length(line: bytes) -> int:
    """The prompt ids a token record's content-store line stands for (whole, or a reference's take + new ids)."""
    prompt = orjson.loads(orjson.loads(line)["text"])["prompt"]
    return len(prompt) if isinstance(prompt, list) else prompt["take"] + len(prompt["add"])


def _calls(client: Any, calls: int, stream: bool) -> tuple[float, float]:
    """(wall seconds, this thread's CPU seconds) per call: the server answers on
    its own threads, so the CPU time is the app's side, where the capture runs."""
    messages = [{"role": "user", "content": "hello " * 200}]
    start, cpu = time.perf_counter(), time.thread_time()
    with orch_otel.agent("a"):
        for _ in range(calls):
            with orch_otel.llm_call("m"):
                response = client.chat.completions.create(model="m", messages=messages, stream=stream, **ASK)
                if stream:
                    for _chunk in response:
                        pass
    return (time.perf_counter() - start) / calls, (time.thread_time() - cpu) / calls


def overhead(calls: int, rounds: int) -> dict[str, float]:
    import openai

    server = OpenAIServer(layout="vllm").start()
    client = openai.OpenAI(base_url=server.base_url, api_key="x")
    times: dict[tuple[bool, bool], list[tuple[float, float]]] = {(s, c): [] for s in (False, True) for c in (False, True)}
    with tempfile.TemporaryDirectory() as directory:
        for round_ in range(rounds):
            for stream in (False, True):
                for capture in (False, True) if round_ % 2 == 0 else (True, False):  # neither always goes first
                    orch_otel.instrument(trace_dir=directory, capture_tokens=capture)
                    server.script(*(_reply(k) for k in range(calls + 1)))
                    _calls(client, 1, stream)  # warm: the SDK patched (or not) and the connection open
                    times[(stream, capture)].append(_calls(client, calls, stream))
                    orch_otel.flush()
                    orch_otel.uninstrument()
    server.stop()
    out = {}
    for stream in (False, True):
        kind = "stream" if stream else "create"
        for i, measure in enumerate(("wall", "cpu")):
            off = statistics.median(t[i] for t in times[(stream, False)])
            on = statistics.median(t[i] for t in times[(stream, True)])
            out[f"{kind}_{measure}_ms_off"] = off * 1e3
            out[f"{kind}_{measure}_ms_on"] = on * 1e3
            out[f"{kind}_{measure}_ratio"] = on / off
    return out


def capture_cost(repeat: int = 200) -> dict[str, float]:
    """The capture's own work per call, alone: reading one response (and one
    stream's chunks) and keeping the record, timed over SDK objects received once."""
    import openai

    from orch_otel._tokens import TokenRecord
    from orch_otel.content import ContentPolicy, LocalContents
    from orch_otel.integrations.openai_sdk._read import completion_tokens

    server = OpenAIServer(layout="vllm").start()
    client = openai.OpenAI(base_url=server.base_url, api_key="x")
    server.script(_reply(0), _reply(1))
    messages = [{"role": "user", "content": "hello " * 200}]
    response = client.chat.completions.create(model="m", messages=messages, **ASK)
    chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True, **ASK))
    server.stop()
    out = {}
    for kind, read in (("create", lambda: completion_tokens(response)), ("stream", lambda: _joined(chunks))):
        policy = ContentPolicy(tokens=LocalContents(1 << 40))
        start = time.perf_counter()
        for k in range(repeat):
            record = read()
            assert isinstance(record, TokenRecord)
            policy.keep_tokens(k, record)  # a trace per call: no sharing to search (the search is timed below)
        out[f"{kind}_capture_us"] = (time.perf_counter() - start) / repeat * 1e6
    policy = ContentPolicy(tokens=LocalContents(1 << 40))
    record = completion_tokens(response)
    start = time.perf_counter()
    for _ in range(repeat):
        policy.keep_tokens("one trace", record)  # 32 earlier calls to compare with, once warm
    out["keep_with_prefix_search_us"] = (time.perf_counter() - start) / repeat * 1e6
    out["stream_chunks"] = len(chunks)
    return out


def _joined(chunks: list[Any]) -> Any:
    from orch_otel.integrations.openai_sdk._read import StreamTokens

    tokens = StreamTokens()
    for chunk in chunks:
        tokens.add(chunk)
    return tokens.record()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=16)
    args = parser.parse_args()
    results = {**storage(args.turns), **capture_cost(), **overhead(args.calls, args.rounds)}
    for kind in ("create", "stream"):
        results[f"{kind}_isolated_ratio"] = 1 + results[f"{kind}_capture_us"] / 1e3 / results[f"{kind}_wall_ms_off"]
    for name, value in results.items():
        print(f"{name}: {value:.3f}")


if __name__ == "__main__":
    main()
