"""A loopback OpenAI-compatible chat completions server that returns token ids and logprobs as vLLM and
SGLang do (tests/test_tokens.py, benchmarks/bench_tokens.py); tests/openai_server.py is the plain one the
AutoGen client tests use (served model ids, usage or none when streaming).

It answers ``POST /v1/chat/completions`` (streaming and not) with scripted
replies, and returns token ids and logprobs the way the server it imitates
does, only when the request asks (as the real servers do):

- ``layout="vllm"``: ``return_token_ids`` -> top-level ``prompt_token_ids``
  (streaming: on the first chunk) and per choice ``token_ids`` (streaming: each
  chunk's own ids, chunks with no text included); ``logprobs`` ->
  ``choices[i].logprobs.content[j] = {token, logprob, bytes, top_logprobs}``.
- ``layout="sglang"``: ``return_prompt_token_ids`` / ``return_token_ids`` ->
  ``choices[i].prompt_token_ids`` / ``response_token_ids`` (refused when
  streaming, as SGLang does); ``return_input_ids_in_sglext`` /
  ``return_output_ids_in_sglext`` -> ``sglext.input_ids`` / ``output_ids`` (streaming:
  one trailing chunk with no choices).
- ``layout="plain"``: no ids, no logprobs, whatever is asked.

The prompt ids are a toy chat template over the request's messages (one id
per character, role and end markers), so a growing conversation gives
growing prompt ids, as a real template does; like ChatML templates, it
renders an earlier reply as the ids the model generated (its text, its tool
calls spelled as the reply spells them, and the end of turn, which is also
the end-of-sequence id), so the next prompt extends the previous prompt and
reply, and a trainer's exact-prefix merge can join them. ``sent`` holds, per request,
exactly the ids and logprobs the server put on the wire: tests compare
recorded values with it.

    server = OpenAIServer("vllm").start()
    server.script(Reply("hello"), Reply(tool_calls=[("search", {"q": "x"})]))
    ChatOpenAI(base_url=server.url, api_key="x", ...)
    server.stop()
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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


@dataclass
class Reply:
    """One scripted answer: text, or tool calls as ``(name, arguments)`` pairs."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def body_text(self) -> str:
        """The text the completion ids spell (a tool call's JSON for tool calls)."""
        if self.tool_calls:
            return "".join(json.dumps({"name": n, "arguments": a}, sort_keys=True) for n, a in self.tool_calls)
        return self.text


class OpenAIServer:
    def __init__(self, layout: str = "vllm", seed: int = 7) -> None:
        assert layout in ("vllm", "sglang", "plain")
        self.layout = layout
        self.requests: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []  # per request: prompt_token_ids, response_token_ids, logprobs (None if not sent)
        self._replies: list[Reply] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._calls = 0

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order; with none left, the answer is ``"done"``."""
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> OpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                status, payload, chunks = server._answer(body)
                if chunks is None:
                    data = json.dumps(payload).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # -- answers ------------------------------------------------------------------------------

    def _answer(self, body: dict[str, Any]) -> tuple[int, Any, list[dict[str, Any]] | None]:
        extra = body  # the SDK merges extra_body into the request's top level
        stream = bool(body.get("stream"))
        with self._lock:
            self.requests.append(body)
            reply = self._replies.pop(0) if self._replies else Reply("done")
            self._calls += 1
            number = self._calls
            text = reply.body_text()
            out_ids = encode(text) + [EOS]
            logprobs = [-round(self._rng.random() * 6, 12) for _ in out_ids]
            pids = prompt_ids(body.get("messages") or [])
        if self.layout == "sglang" and stream and (extra.get("return_token_ids") or extra.get("return_prompt_token_ids")):
            return 400, {"error": {"message": "return_token_ids is not supported with streaming", "type": "BadRequestError",
                                   "code": 400}}, None
        want_logprobs = bool(body.get("logprobs")) and self.layout != "plain"
        if self.layout == "vllm":
            send_prompt = send_out = bool(extra.get("return_token_ids"))
        elif self.layout == "sglang":
            send_prompt = bool(extra.get("return_prompt_token_ids") or extra.get("return_input_ids_in_sglext"))
            send_out = bool(extra.get("return_token_ids") or extra.get("return_output_ids_in_sglext"))
        else:
            send_prompt = send_out = False
        with self._lock:
            self.sent.append({"prompt_token_ids": pids if send_prompt else None,
                              "response_token_ids": out_ids if send_out else None,
                              "logprobs": logprobs if want_logprobs else None})
        common = {"id": f"chatcmpl-{number}", "created": 0, "model": body.get("model", "m")}
        usage = {"prompt_tokens": len(pids), "completion_tokens": len(out_ids), "total_tokens": len(pids) + len(out_ids)}
        pieces = [(i, tid, chr(tid - 100) if tid >= 100 else "") for i, tid in enumerate(out_ids)]
        if not stream:
            return 200, self._completion(common, reply, out_ids, pids, pieces, logprobs, usage, want_logprobs, send_prompt,
                                         send_out, extra), None
        return 200, None, self._chunks(common, reply, out_ids, pids, pieces, logprobs, usage, want_logprobs, send_prompt,
                                       send_out, extra, body)

    @staticmethod
    def _entry(piece: tuple[int, int, str], logprobs: list[float]) -> dict[str, Any]:
        i, _, token = piece
        return {"token": token, "logprob": logprobs[i], "bytes": list(token.encode()), "top_logprobs": []}

    @staticmethod
    def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
        return [{"id": f"call_{k}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for k, (n, a) in enumerate(reply.tool_calls)]

    def _completion(self, common, reply, out_ids, pids, pieces, logprobs, usage, want_logprobs, send_prompt, send_out,
                    extra) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None if reply.tool_calls else reply.text}
        if reply.tool_calls:
            message["tool_calls"] = self._tool_calls(reply)
        choice: dict[str, Any] = {"index": 0, "message": message,
                                  "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                                  "logprobs": {"content": [self._entry(p, logprobs) for p in pieces]} if want_logprobs else None}
        out: dict[str, Any] = {**common, "object": "chat.completion", "choices": [choice], "usage": usage}
        if self.layout == "vllm" and send_out:
            out["prompt_token_ids"] = pids
            choice["token_ids"] = out_ids
        elif self.layout == "sglang":
            if extra.get("return_prompt_token_ids"):
                choice["prompt_token_ids"] = pids
            if extra.get("return_token_ids"):
                choice["response_token_ids"] = out_ids
        return out

    def _chunks(self, common, reply, out_ids, pids, pieces, logprobs, usage, want_logprobs, send_prompt, send_out, extra,
                body) -> list[dict[str, Any]]:
        vllm_ids = self.layout == "vllm" and send_out

        def chunk(delta: dict[str, Any], part: list[tuple[int, int, str]], finish: str | None = None) -> dict[str, Any]:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish,
                                      "logprobs": {"content": [self._entry(p, logprobs) for p in part]}
                                      if want_logprobs and part else None}
            if vllm_ids:
                choice["token_ids"] = [tid for _, tid, _ in part]
            return {**common, "object": "chat.completion.chunk", "choices": [choice]}

        first = chunk({"role": "assistant", "content": ""}, [])
        if vllm_ids:
            first["prompt_token_ids"] = pids
        chunks = [first]
        body_pieces, eos = pieces[:-1], pieces[-1:]
        if reply.tool_calls:  # a tool parser swallows the text: chunks with ids and no text
            calls = self._tool_calls(reply)
            half = max(1, len(body_pieces) // 2)
            for k, call in enumerate(calls):
                head = {"index": k, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"],
                                                                                     "arguments": ""}}
                chunks.append(chunk({"tool_calls": [head]}, body_pieces[:half] if k == 0 else []))
                chunks.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": call["function"]["arguments"]}}]},
                                    body_pieces[half:] if k == 0 else []))
        else:
            for piece in body_pieces:
                chunks.append(chunk({"content": piece[2]}, [piece]))
        chunks.append(chunk({"content": ""} if not reply.tool_calls else {}, eos))  # EOS: an id with no text
        chunks.append(chunk({}, [], "tool_calls" if reply.tool_calls else "stop"))
        if self.layout == "sglang" and send_prompt | send_out:
            ext: dict[str, Any] = {}
            if extra.get("return_input_ids_in_sglext"):
                ext["input_ids"] = pids
            if extra.get("return_output_ids_in_sglext"):
                ext["output_ids"] = [out_ids]
            chunks.append({**common, "object": "chat.completion.chunk", "choices": [], "sglext": ext})
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**common, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        return chunks
