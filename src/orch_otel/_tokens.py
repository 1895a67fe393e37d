"""Token ids and logprobs of model calls, as kept in the local content store.

One record per model call: the completion's ids and logprobs, and the prompt
ids. A prompt repeats the conversation so far, so it is stored as a
reference to an earlier call of the same trace (that call's prompt and
completion ids, of which the first ``take`` are shared) plus the new ids;
the stored size then grows with the new tokens only. A record is JSON text
whose ref is its hash, like any content, so it resolves through the content
store (:class:`Prefixes` writes, :class:`TokenReader` reads).

Record: ``{"v": 1, "prompt": [ids] | {"base": ref, "take": n, "add": [ids]} | null,
"response": [ids] | null, "logprobs": [floats] | null}``.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import orjson

__all__: list[str] = []

VERSION = 1
MIN_SHARED = 8  # a shorter shared prefix is not worth a reference


class TokenRecord(NamedTuple):
    """What one model call's tokens were: each part None when the server did not send it."""

    prompt_token_ids: list[int] | None
    response_token_ids: list[int] | None
    response_logprobs: list[float] | None


def token_ids(value: Any) -> list[int] | None:
    """``value`` as a list of token ids, or None unless it is a list of whole numbers."""
    if not isinstance(value, (list, tuple)) or not all(type(v) is int for v in value):
        return None
    return list(value)


def logprob_values(values: Sequence[Any] | None) -> list[float] | None:
    """The logprobs as floats; None when any is missing or not finite (as
    agent-lightning does: a trainer cannot use a partial list)."""
    if values is None:
        return None
    out = []
    for v in values:
        if type(v) not in (int, float) or not math.isfinite(v):
            return None
        out.append(float(v))
    return out


def shared_prefix(a: array, b: array) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (slice compares run in C)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class Prefixes:
    """Recent calls' ids per trace (prompt + completion), to store a new
    prompt as a reference plus the new ids. Bounded: at most ``per_trace``
    calls per trace and ``max_tokens`` ids in all, 4 bytes each (the least
    recently used traces go first); a prompt that finds no earlier call is
    stored whole."""

    def __init__(self, per_trace: int = 32, max_tokens: int = 4_000_000, sharing: bool = True) -> None:
        self.per_trace = per_trace
        self.max_tokens = max_tokens
        self.sharing = sharing
        self._traces: OrderedDict[Any, list[tuple[str, array]]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def encode(self, trace_key: Any, record: TokenRecord, ref_of: Callable[[bytes], str]) -> tuple[str, str]:
        """The (ref, JSON text) that stores ``record``, and remember its ids for later calls of the trace."""
        prompt = _ids_array(record.prompt_token_ids)
        with self._lock:
            recent = self._traces.get(trace_key)
            body: dict[str, Any] = {"v": VERSION, "prompt": record.prompt_token_ids,
                                    "response": record.response_token_ids, "logprobs": record.response_logprobs}
            if prompt is not None and recent and self.sharing:
                base, take = None, 0
                for ref, seq in reversed(recent):  # the latest first: the one a prompt usually extends
                    n = shared_prefix(prompt, seq)
                    if n > take:
                        base, take = ref, n
                    if n == len(seq):  # the prompt extends this call whole: good enough, stop searching
                        break
                if base is not None and take >= MIN_SHARED:
                    body["prompt"] = {"base": base, "take": take, "add": record.prompt_token_ids[take:]}  # type: ignore[index]
            data = orjson.dumps(body)
            ref = ref_of(data)
            response = _ids_array(record.response_token_ids or [])
            if prompt is not None and response is not None:
                self._remember(trace_key, ref, prompt + response)
        return ref, data.decode()

    def _remember(self, trace_key: Any, ref: str, full: array) -> None:
        recent = self._traces.get(trace_key)
        if recent is None:
            recent = self._traces[trace_key] = []
        else:
            self._traces.move_to_end(trace_key)
        recent.append((ref, full))
        self._held += len(full)
        if len(recent) > self.per_trace:
            self._held -= len(recent.pop(0)[1])
        while self._held > self.max_tokens and self._traces:
            _, dropped = self._traces.popitem(last=False)
            self._held -= sum(len(seq) for _, seq in dropped)


def _ids_array(ids: list[int] | None) -> array | None:
    """``ids`` as 4-byte integers (None for ids that do not fit: that call is then not a base)."""
    if ids is None:
        return None
    try:
        return array("i", ids)
    except OverflowError:
        return None


class TokenReader:
    """Reads token records back: ``text_of(ref)`` gives a stored JSON text
    (e.g. ``ContentIndex.get``). Prompt references are followed through the
    earlier calls, each resolved once (the last ``cache`` full sequences are kept)."""

    def __init__(self, text_of: Callable[[str], str | None], cache: int = 256) -> None:
        self._text_of = text_of
        self._full: OrderedDict[str, list[int] | None] = OrderedDict()  # ref -> prompt + response ids
        self._cache = cache

    def read(self, ref: str | None) -> TokenRecord | None:
        """The record of ``ref``; None when it is not in the store. A prompt
        whose reference cannot be followed (a record missing) reads as None."""
        body = self._body(ref)
        if body is None:
            return None
        return TokenRecord(self._prompt(body), token_ids(body.get("response")), logprob_values(body.get("logprobs")))

    def _body(self, ref: str | None) -> dict[str, Any] | None:
        text = self._text_of(ref) if ref else None
        if text is None:
            return None
        try:
            body = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        return body if isinstance(body, dict) and body.get("v") == VERSION else None

    def _prompt(self, body: dict[str, Any]) -> list[int] | None:
        """The prompt ids of ``body``: the chain of references walked back to a
        whole prompt (or a sequence already known), then forward, without recursion."""
        chain: list[tuple[str | None, dict[str, Any]]] = [(None, body)]
        full: list[int] | None = None
        while True:
            prompt = chain[-1][1].get("prompt")
            if not isinstance(prompt, dict):
                full = token_ids(prompt)
                break
            base = prompt.get("base")
            if not isinstance(base, str) or len(chain) > 100_000:
                return None
            if base in self._full:
                full = self._full[base]
                break
            base_body = self._body(base)
            if base_body is None:
                return None
            chain.append((base, base_body))
        # full: the whole ids (prompt + response) of the last link's base, or the last link's own prompt
        for i in range(len(chain) - 1, -1, -1):
            ref, link = chain[i]
            prompt = link.get("prompt")
            if isinstance(prompt, dict):
                take, add = prompt.get("take"), token_ids(prompt.get("add"))
                if full is None or type(take) is not int or add is None or not 0 <= take <= len(full):
                    full = None
                else:
                    full = full[:take] + add
            if i == 0:
                return full
            response = token_ids(link.get("response"))
            full = full + (response or []) if full is not None else None
            self._keep(ref, full)  # type: ignore[arg-type]
        return full

    def _keep(self, ref: str, full: list[int] | None) -> None:
        self._full[ref] = full
        if len(self._full) > self._cache:
            self._full.popitem(last=False)
