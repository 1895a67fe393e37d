"""The wrappers of the openai SDK's ``chat.completions.create`` (sync and
async): inside a recorded model call, read the response's token ids and
logprobs (a stream's as its chunks pass) and keep them with that call.

Outside a recorded model call nothing is touched. The response the app gets
is the SDK's own object; for a stream, only its private chunk iterator is
wrapped, which hands on every chunk unchanged. A fault here is logged (type
name only) and never reaches the app.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ..._faults import log_fault
from ..._invocation import LLMInvocation, current_llm_call
from ..._tokens import TokenRecord
from ._read import StreamTokens, completion_tokens

_log = logging.getLogger(__name__)

_SGLANG_FIELDS = {False: ("return_prompt_token_ids", "return_token_ids"),
                  True: ("return_input_ids_in_sglext", "return_output_ids_in_sglext")}


def request_fields(kwargs: dict[str, Any], server: str) -> dict[str, Any]:
    """``kwargs`` with the fields that ask ``server`` (vllm / sglang) for ids and
    logprobs added, where the call did not set them (a new dict; the caller's
    ``extra_body`` is copied, never changed)."""
    out = dict(kwargs)
    out.setdefault("logprobs", True)
    extra = dict(out.get("extra_body") or {})
    if server == "sglang":
        for name in _SGLANG_FIELDS[bool(out.get("stream"))]:
            extra.setdefault(name, True)
    else:
        extra.setdefault("return_token_ids", True)
    out["extra_body"] = extra
    return out


def _keep(call: LLMInvocation, record: TokenRecord | None) -> None:
    if record is not None:
        call.set_tokens(record)


class Observer:
    """What the wrappers share: the SDK's response types, and the server whose request fields to add (or None)."""

    def __init__(self, stream_types: tuple[type, ...], raw_type: Any, request: str | None) -> None:
        self.stream_types = stream_types
        self.raw_type = raw_type
        self.request = request

    def prepare(self, kwargs: dict[str, Any]) -> tuple[LLMInvocation | None, dict[str, Any]]:
        call = current_llm_call()
        if call is not None and self.request is not None:
            try:
                kwargs = request_fields(kwargs, self.request)
            except Exception:  # a kwargs shape the SDK would refuse anyway: send it as it is
                log_fault(_log, logging.DEBUG, "orch-otel: could not add the token request fields")
        return call, kwargs

    def observe(self, call: LLMInvocation, result: Any) -> None:
        try:
            if isinstance(result, self.raw_type):  # with_raw_response: parse() caches, the app gets the same object
                result = result.parse()
            if isinstance(result, self.stream_types):
                _watch(result, call)
            else:
                _keep(call, completion_tokens(result))
        except Exception:  # telemetry never raises into the host
            log_fault(_log, logging.DEBUG, "orch-otel: reading a model response's token ids failed")


def _watch(stream: Any, call: LLMInvocation) -> None:
    """Read each chunk as the app iterates ``stream``; keep the ids once it is exhausted."""
    inner = getattr(stream, "_iterator", None)
    if inner is None:
        _log.debug("orch-otel: an openai stream without _iterator; its token ids are not read")
        return
    tokens = StreamTokens()
    stream._iterator = _async_chunks(inner, tokens, call) if hasattr(inner, "__anext__") else _chunks(inner, tokens, call)


def _add(tokens: StreamTokens, chunk: Any) -> None:
    try:
        tokens.add(chunk)
    except Exception:
        log_fault(_log, logging.DEBUG, "orch-otel: reading a stream chunk's token ids failed")


def _done(tokens: StreamTokens, call: LLMInvocation) -> None:
    try:
        _keep(call, tokens.record())
    except Exception:
        log_fault(_log, logging.DEBUG, "orch-otel: keeping a stream's token ids failed")


def _chunks(inner: Iterator[Any], tokens: StreamTokens, call: LLMInvocation) -> Iterator[Any]:
    try:
        for chunk in inner:
            _add(tokens, chunk)
            yield chunk
    except GeneratorExit:  # the app stopped early: close the SDK's iterator as it would be, keep nothing
        close = getattr(inner, "close", None)
        if close is not None:
            close()
        raise
    _done(tokens, call)


async def _async_chunks(inner: AsyncIterator[Any], tokens: StreamTokens, call: LLMInvocation) -> AsyncIterator[Any]:
    try:
        async for chunk in inner:
            _add(tokens, chunk)
            yield chunk
    except GeneratorExit:
        close = getattr(inner, "aclose", None)
        if close is not None:
            await close()
        raise
    _done(tokens, call)


def create_wrapper(observer: Observer) -> Callable[..., Any]:
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call, kwargs = observer.prepare(kwargs)
        result = wrapped(*args, **kwargs)
        if call is not None:
            observer.observe(call, result)
        return result

    return wrapper


def async_create_wrapper(observer: Observer) -> Callable[..., Any]:
    async def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call, kwargs = observer.prepare(kwargs)
        result = await wrapped(*args, **kwargs)
        if call is not None:
            observer.observe(call, result)
        return result

    return wrapper
