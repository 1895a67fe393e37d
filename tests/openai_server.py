"""A local OpenAI-compatible chat completions server on loopback, for tests of
real OpenAI clients (autogen-ext's ``OpenAIChatCompletionClient``, LangChain's
``ChatOpenAI``, the Agents SDK's OpenAI models) without a network: ``POST
/v1/chat/completions`` (and the Responses API's ``POST /v1/responses``) answers each
request with the next scripted :class:`Reply`, as a whole completion or, when
the request says ``"stream": true``, as server-sent chunks, with a final usage
chunk only when ``stream_options.include_usage`` asks (as OpenAI does).

    with OpenAIServer([Reply("hello"), Reply(tool_calls=[("c1", "f", "{}")])]) as server:
        client = OpenAIChatCompletionClient(model="gpt-4o", base_url=server.base_url, api_key="k")

Every reply names ``model`` (the served model id, ``gpt-4o-2024-08-06`` by
default, whatever the request asked for), and the request bodies are kept in
``requests``. A request with no reply left gets HTTP 500.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SERVED_MODEL = "gpt-4o-2024-08-06"


@dataclass(frozen=True)
class Reply:
    content: str | None = None
    tool_calls: tuple[tuple[str, str, str], ...] = ()  # (call id, function name, JSON arguments)
    prompt_tokens: int = 11
    completion_tokens: int = 7


class OpenAIServer:
    def __init__(self, replies: Iterable[Reply | str], model: str = SERVED_MODEL) -> None:
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._replies = [r if isinstance(r, Reply) else Reply(r) for r in replies]
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                route = self.path.rstrip("/")
                if route not in ("/v1/chat/completions", "/v1/responses"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                with server._lock:
                    server.requests.append(body)
                    reply = server._replies.pop(0) if server._replies else None
                if reply is None:
                    return self._send(500, {"error": {"message": "no scripted reply left"}})
                if route == "/v1/responses":
                    if body.get("stream"):
                        return self._stream(server._response_events(reply))
                    return self._send(200, server._response(reply))
                if body.get("stream"):
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    return self._stream(server._chunks(reply, usage))
                return self._send(200, server._completion(reply))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, chunks: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="openai-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- the OpenAI wire format -----------------------------------------------------------

    def _usage(self, reply: Reply) -> dict[str, int]:
        return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens}

    def _completion(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                     for i, n, a in reply.tool_calls]
        return {"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": self.model,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
                "usage": self._usage(reply)}

    def _response(self, reply: Reply) -> dict[str, Any]:
        """The Responses API's answer (``POST /v1/responses``, not streamed)."""
        output: list[dict[str, Any]] = []
        if reply.content is not None:
            output.append({"type": "message", "id": "msg-test", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": reply.content, "annotations": []}]})
        output += [{"type": "function_call", "id": f"fc-{i}", "call_id": i, "name": n, "arguments": a,
                    "status": "completed"} for i, n, a in reply.tool_calls]
        return {"id": "resp-test", "object": "response", "created_at": 1, "model": self.model, "status": "completed",
                "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens,
                          "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}

    def _response_events(self, reply: Reply) -> list[dict[str, Any]]:
        """The Responses API's stream: created, each output item added and done, completed."""
        done = self._response(reply)
        events: list[dict[str, Any]] = [{"type": "response.created",
                                         "response": {**done, "output": [], "status": "in_progress", "usage": None}}]
        for index, item in enumerate(done["output"]):
            events += [{"type": "response.output_item.added", "output_index": index, "item": item},
                       {"type": "response.output_item.done", "output_index": index, "item": item}]
        events.append({"type": "response.completed", "response": done})
        return [{**event, "sequence_number": number} for number, event in enumerate(events)]

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    def _chunks(self, reply: Reply, usage: bool) -> list[dict[str, Any]]:
        chunks = [self._chunk({"role": "assistant", "content": ""})]
        words = (reply.content or "").split(" ")
        chunks += [self._chunk({"content": w if i == 0 else " " + w}) for i, w in enumerate(words) if reply.content]
        for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
            chunks.append(self._chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                                       "function": {"name": name, "arguments": arguments}}]}))
        chunks.append(self._chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        if usage:
            chunks.append({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1,
                           "model": self.model, "choices": [], "usage": self._usage(reply)})
        return chunks
