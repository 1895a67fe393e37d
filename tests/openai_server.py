"""A local OpenAI-compatible server on loopback, for tests and benchmarks of
real OpenAI clients (the openai SDK, autogen-ext's ``OpenAIChatCompletionClient``,
LangChain's ``ChatOpenAI``, the Agents SDK's OpenAI models) without a network.
``POST /v1/responses`` (the Responses API, whole or streamed: created, each
output item added and done, completed) answers from the same script, with no
token ids in any layout.

``POST /v1/chat/completions`` answers each request with the next scripted
:class:`Reply` (with none left: ``"done"``), as a whole completion or, when the
request says ``"stream": true``, as server-sent chunks, one per token, with a
final usage chunk only when ``stream_options.include_usage`` asks (as OpenAI
does). The request bodies are kept in ``requests``.

Its ``layout`` is the server it imitates:

- ``"plain"`` (OpenAI): no token ids, no logprobs, whatever is asked; answers
  name the served model's dated id (:data:`SERVED_MODEL`), not the one asked for.
- ``"vllm"``: ``return_token_ids`` -> top-level ``prompt_token_ids``
  (streaming: on the first chunk) and per choice ``token_ids`` (streaming: each
  chunk's own ids, chunks with no text included); ``logprobs`` ->
  ``choices[i].logprobs.content[j] = {token, logprob, bytes, top_logprobs}``.
- ``"sglang"``: ``return_prompt_token_ids`` / ``return_token_ids`` ->
  ``choices[i].prompt_token_ids`` / ``response_token_ids`` (refused when
  streaming, as SGLang does); ``return_input_ids_in_sglext`` /
  ``return_output_ids_in_sglext`` -> ``sglext.input_ids`` / ``output_ids`` (streaming:
  one trailing chunk with no choices); logprobs as vLLM.

vLLM and SGLang answer under the model name asked for; ``model=`` names another.

The prompt ids are a toy chat template over the request's messages (one id
per character, role and end markers), so a growing conversation gives
growing prompt ids, as a real template does; like ChatML templates, it
renders an earlier reply as the ids the model generated (its text, its tool
calls spelled as the reply spells them, and the end of turn, which is also
the end-of-sequence id), so the next prompt extends the previous prompt and
reply, and a trainer's exact-prefix merge can join them. ``sent`` holds, per
request, exactly the ids and logprobs the server put on the wire (None where
it sent none): tests compare recorded values with it. Usage counts these ids,
unless the reply names its own counts.

    with OpenAIServer([Reply("hello"), Reply(tool_calls=[("search", {"q": "x"})])], layout="vllm") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")

(``start()`` / ``stop()`` do the same as the ``with`` block, and ``script()``
queues more replies.)
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SERVED_MODEL = "gpt-4o-2024-08-06"
LAYOUTS = ("plain", "vllm", "sglang")
EOS = 2  # ends a reply and, as ChatML's <|im_end|>, every message of the template
_ROLE_IDS = {"system": 10, "user": 11, "assistant": 12, "tool": 13}


def encode(text: str) -> list[int]:
    """The toy tokenizer: one id per character."""
    return [100 + ord(c) for c in text]


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)


def _spelled_call(function: dict[str, Any]) -> str:
    """A tool call as a reply spells it (:meth:`Reply.body_text`): arguments as an object."""
    arguments = function.get("arguments")
    try:
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        pass
    return json.dumps({"name": function.get("name"), "arguments": arguments}, sort_keys=True)


def prompt_ids(messages: list[dict[str, Any]]) -> list[int]:
    """The toy chat template: ``<role> text [tool calls] <eos>`` per message, then the assistant's header."""
    ids: list[int] = []
    for m in messages:
        ids.append(_ROLE_IDS.get(m.get("role", "user"), 14))
        ids.extend(encode(_content_text(m.get("content"))))
        for call in m.get("tool_calls") or ():
            ids.extend(encode(_spelled_call(call.get("function", {}))))
        ids.append(EOS)
    ids.append(_ROLE_IDS["assistant"])
    return ids


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text, or tool calls as ``(name, arguments)`` pairs.

    ``call_ids`` names the calls (``call_0``, ``call_1``... where not given);
    ``prompt_tokens`` / ``completion_tokens`` set the usage reported (by default
    the ids' counts)."""

    text: str = ""
    tool_calls: Sequence[tuple[str, dict[str, Any]]] = ()
    call_ids: Sequence[str] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def body_text(self) -> str:
        """The text the completion ids spell (a tool call's JSON for tool calls)."""
        if self.tool_calls:
            return "".join(json.dumps({"name": n, "arguments": a}, sort_keys=True) for n, a in self.tool_calls)
        return self.text

    def wire_calls(self) -> list[dict[str, Any]]:
        ids = list(self.call_ids) + [f"call_{k}" for k in range(len(self.call_ids), len(self.tool_calls))]
        return [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, (n, a) in zip(ids, self.tool_calls)]


@dataclass
class _Answer:
    """One request's answer: what the server generated, and which of it the request asked to be sent."""

    common: dict[str, Any]  # id, created, model: on the completion and every chunk
    reply: Reply
    prompt: list[int]
    output: list[int]
    logprobs: list[float]
    asked: dict[str, Any]  # the request body (the SDK merges extra_body into its top level)
    send_prompt: bool
    send_output: bool
    send_logprobs: bool

    @property
    def usage(self) -> dict[str, int]:
        prompt = len(self.prompt) if self.reply.prompt_tokens is None else self.reply.prompt_tokens
        completion = len(self.output) if self.reply.completion_tokens is None else self.reply.completion_tokens
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def pieces(self) -> list[tuple[int, int, str]]:
        """Per generated id: (position, id, its text); the end-of-sequence id has none."""
        return [(i, tid, chr(tid - 100) if tid >= 100 else "") for i, tid in enumerate(self.output)]

    def logprobs_of(self, pieces: list[tuple[int, int, str]]) -> dict[str, Any] | None:
        if not (self.send_logprobs and pieces):
            return None
        return {"content": [{"token": t, "logprob": self.logprobs[i], "bytes": list(t.encode()), "top_logprobs": []}
                            for i, _, t in pieces]}


class OpenAIServer:
    def __init__(self, replies: Iterable[Reply | str] = (), *, layout: str = "plain", model: str | None = None,
                 seed: int = 7) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout {layout!r}: one of {', '.join(LAYOUTS)}")
        self.layout = layout
        self.model = model if model is not None or layout != "plain" else SERVED_MODEL
        self.requests: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []  # per request: prompt_token_ids, response_token_ids, logprobs (None if not sent)
        self._replies = [r if isinstance(r, Reply) else Reply(r) for r in replies]
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start the server first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply | str) -> None:
        """Queue replies, answered in order."""
        with self._lock:
            self._replies.extend(r if isinstance(r, Reply) else Reply(r) for r in replies)

    def start(self) -> OpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                route = self.path.rstrip("/")
                if route not in ("/v1/chat/completions", "/v1/responses"):
                    return self._send(404, "application/json", json.dumps({"error": {"message": f"no route {self.path}"}}))
                answer = server._answer if route == "/v1/chat/completions" else server._respond
                status, payload, chunks = answer(body)
                if chunks is None:
                    return self._send(status, "application/json", json.dumps(payload))
                events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                return self._send(200, "text/event-stream", events)

            def _send(self, status: int, content_type: str, text: str) -> None:
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- answers ------------------------------------------------------------------------------

    def _answer(self, body: dict[str, Any]) -> tuple[int, Any, list[dict[str, Any]] | None]:
        stream = bool(body.get("stream"))
        with self._lock:
            self.requests.append(body)
            reply = self._replies.pop(0) if self._replies else Reply("done")
            number = len(self.requests)
            output = encode(reply.body_text()) + [EOS]
            logprobs = [-round(self._rng.random() * 6, 12) for _ in output]
        if self.layout == "sglang" and stream and (body.get("return_token_ids") or body.get("return_prompt_token_ids")):
            return 400, {"error": {"message": "return_token_ids is not supported with streaming", "type": "BadRequestError",
                                   "code": 400}}, None
        if self.layout == "vllm":
            send_prompt = send_output = bool(body.get("return_token_ids"))
        elif self.layout == "sglang":
            send_prompt = bool(body.get("return_prompt_token_ids") or body.get("return_input_ids_in_sglext"))
            send_output = bool(body.get("return_token_ids") or body.get("return_output_ids_in_sglext"))
        else:
            send_prompt = send_output = False
        answer = _Answer(common={"id": f"chatcmpl-{number}", "created": 0, "model": self.model or body.get("model", "m")},
                         reply=reply, prompt=prompt_ids(body.get("messages") or []), output=output, logprobs=logprobs,
                         asked=body, send_prompt=send_prompt, send_output=send_output,
                         send_logprobs=bool(body.get("logprobs")) and self.layout != "plain")
        with self._lock:
            self.sent.append({"prompt_token_ids": answer.prompt if send_prompt else None,
                              "response_token_ids": output if send_output else None,
                              "logprobs": logprobs if answer.send_logprobs else None})
        if not stream:
            return 200, self._completion(answer), None
        return 200, None, self._chunks(answer)

    def _respond(self, body: dict[str, Any]) -> tuple[int, Any, list[dict[str, Any]] | None]:
        """The Responses API (``POST /v1/responses``): the whole response, or its
        stream: created, each output item added and done, completed."""
        with self._lock:
            self.requests.append(body)
            reply = self._replies.pop(0) if self._replies else Reply("done")
            number = len(self.requests)
        output: list[dict[str, Any]] = []
        if not reply.tool_calls:
            output.append({"type": "message", "id": f"msg-{number}", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
        output += [{"type": "function_call", "id": f"fc-{number}-{k}", "call_id": call["id"],
                    "name": call["function"]["name"], "arguments": call["function"]["arguments"], "status": "completed"}
                   for k, call in enumerate(reply.wire_calls())]
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else 10
        completion = reply.completion_tokens if reply.completion_tokens is not None else len(reply.body_text())
        done = {"id": f"resp-{number}", "object": "response", "created_at": 0, "model": self.model or body.get("model", "m"),
                "status": "completed", "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion,
                          "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
        if not body.get("stream"):
            return 200, done, None
        events: list[dict[str, Any]] = [{"type": "response.created",
                                         "response": {**done, "output": [], "status": "in_progress", "usage": None}}]
        for index, item in enumerate(output):
            events += [{"type": "response.output_item.added", "output_index": index, "item": item},
                       {"type": "response.output_item.done", "output_index": index, "item": item}]
        events.append({"type": "response.completed", "response": done})
        return 200, None, [{**event, "sequence_number": k} for k, event in enumerate(events)]

    def _completion(self, answer: _Answer) -> dict[str, Any]:
        reply = answer.reply
        message: dict[str, Any] = {"role": "assistant", "content": None if reply.tool_calls else reply.text}
        if reply.tool_calls:
            message["tool_calls"] = reply.wire_calls()
        choice: dict[str, Any] = {"index": 0, "message": message,
                                  "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                                  "logprobs": answer.logprobs_of(answer.pieces())}
        out: dict[str, Any] = {**answer.common, "object": "chat.completion", "choices": [choice], "usage": answer.usage}
        if self.layout == "vllm" and answer.send_output:
            out["prompt_token_ids"] = answer.prompt
            choice["token_ids"] = answer.output
        elif self.layout == "sglang":
            if answer.asked.get("return_prompt_token_ids"):
                choice["prompt_token_ids"] = answer.prompt
            if answer.asked.get("return_token_ids"):
                choice["response_token_ids"] = answer.output
        return out

    def _chunks(self, answer: _Answer) -> list[dict[str, Any]]:
        vllm_ids = self.layout == "vllm" and answer.send_output
        reply, asked = answer.reply, answer.asked

        def chunk(delta: dict[str, Any], part: list[tuple[int, int, str]], finish: str | None = None) -> dict[str, Any]:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish,
                                      "logprobs": answer.logprobs_of(part)}
            if vllm_ids:
                choice["token_ids"] = [tid for _, tid, _ in part]
            return {**answer.common, "object": "chat.completion.chunk", "choices": [choice]}

        first = chunk({"role": "assistant", "content": ""}, [])
        if vllm_ids:
            first["prompt_token_ids"] = answer.prompt
        chunks = [first]
        pieces = answer.pieces()
        body_pieces, eos = pieces[:-1], pieces[-1:]
        if reply.tool_calls:  # a tool parser swallows the text: chunks with ids and no text
            half = max(1, len(body_pieces) // 2)
            for k, call in enumerate(reply.wire_calls()):
                head = {"index": k, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"],
                                                                                     "arguments": ""}}
                chunks.append(chunk({"tool_calls": [head]}, body_pieces[:half] if k == 0 else []))
                chunks.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": call["function"]["arguments"]}}]},
                                    body_pieces[half:] if k == 0 else []))
        else:
            chunks += [chunk({"content": piece[2]}, [piece]) for piece in body_pieces]
        chunks.append(chunk({"content": ""} if not reply.tool_calls else {}, eos))  # EOS: an id with no text
        chunks.append(chunk({}, [], "tool_calls" if reply.tool_calls else "stop"))
        if self.layout == "sglang" and (answer.send_prompt or answer.send_output):
            ext: dict[str, Any] = {}
            if asked.get("return_input_ids_in_sglext"):
                ext["input_ids"] = answer.prompt
            if asked.get("return_output_ids_in_sglext"):
                ext["output_ids"] = [answer.output]
            chunks.append({**answer.common, "object": "chat.completion.chunk", "choices": [], "sglext": ext})
        if (asked.get("stream_options") or {}).get("include_usage"):
            chunks.append({**answer.common, "object": "chat.completion.chunk", "choices": [], "usage": answer.usage})
        return chunks
