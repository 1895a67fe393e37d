"""Content policy: content refs, opt-in capture and redaction.

A content ref is a stable hash of the content's canonical JSON text, so the
same content gets the same ref in every run. Raw content is kept only when the
user opts in; then redactors run on it before it reaches any span, file or
exporter, and the ref is the hash of the redacted text, which the content
store holds, so every ref resolves.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import orjson

from . import _env as env
from ._tokens import Prefixes, TokenRecord
from .redaction import redact_secrets

__all__ = ["Content", "ContentPolicy", "LocalContents"]

_log = logging.getLogger(__name__)

Redactor = Callable[[str], str]
"""Takes the JSON text of one piece of content, returns it redacted."""

def _json_default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


_DUMP_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def canonical_json(content: Any) -> bytes:
    """Canonical JSON of any content, UTF-8 (sorted keys; unknown objects as text)."""
    return orjson.dumps(content, default=_json_default, option=_DUMP_OPTIONS)


class Content(NamedTuple):
    ref: str
    text: str | None  # JSON text, present only when capture is on


class LocalContents:
    """Redacted content texts held in this process until their trace is
    written to the local content store: the record-for-replay mode's channel,
    which never passes through span attributes, so no exporter sees it.
    Bounded: past ``max_bytes`` the oldest texts go first, and are counted."""

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self.dropped = 0
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def keep(self, ref: str, text: str) -> None:
        with self._lock:
            if ref in self._texts:
                self._texts.move_to_end(ref)
                return
            self._texts[ref] = text
            self._bytes += len(text)
            while self._bytes > self.max_bytes and len(self._texts) > 1:
                _, old = self._texts.popitem(last=False)
                self._bytes -= len(old)
                self.dropped += 1

    def texts(self, refs: Iterable[str]) -> dict[str, str]:
        """The held texts of ``refs`` (those no longer held are left out)."""
        with self._lock:
            return {ref: self._texts[ref] for ref in refs if ref in self._texts}

    def take(self, refs: Iterable[str]) -> dict[str, str]:
        """Like :meth:`texts`, and let them go: once a trace's texts are in the
        content store, a later trace that names them finds them there."""
        with self._lock:
            taken = {ref: self._texts.pop(ref) for ref in refs if ref in self._texts}
            self._bytes -= sum(map(len, taken.values()))
            return taken


class ContentPolicy:
    """Decides what of a piece of content is kept: always its ref, its text
    only when ``capture`` is on, and then only after the redactors ran.

    With ``local`` set (record for replay), texts go to that store instead of
    span attributes: they reach the local trace files and nothing else.

    With ``tokens`` set (token capture), the token ids and logprobs of model
    calls are kept there, always local (never on a span, whatever ``capture``
    says): :meth:`keep_tokens`."""

    __slots__ = ("capture", "redactors", "max_chars", "local", "tokens", "prefixes", "_hash_key")

    def __init__(
        self,
        capture: bool = False,
        redactors: Iterable[Redactor] | None = None,
        hash_key: bytes | None = None,
        max_chars: int = env.DEFAULT_MAX_CONTENT_CHARS,
        local: LocalContents | None = None,
        tokens: LocalContents | None = None,
    ) -> None:
        self.capture = capture or local is not None
        self.redactors: list[Redactor] = [redact_secrets] if redactors is None else list(redactors)
        self.max_chars = max_chars
        self.local = local
        self.tokens = tokens
        self.prefixes = Prefixes()
        self._hash_key = hash_key

    @classmethod
    def from_env(cls, capture: bool | None = None, redactors: Iterable[Redactor] | None = None,
                 record_for_replay: bool | None = None, capture_tokens: bool | None = None) -> ContentPolicy:
        """The policy the environment asks for. Recording for replay without
        capture keeps texts local (``local``); with capture on they are on the
        spans anyway, so the local store is not needed. Token capture always
        has its own local store (``tokens``)."""
        capture = env.capture_content() if capture is None else capture
        replay = env.record_for_replay() if record_for_replay is None else record_for_replay
        tokens = env.capture_tokens() if capture_tokens is None else capture_tokens
        return cls(
            capture=capture,
            redactors=redactors,
            hash_key=env.content_hash_key(),
            max_chars=env.max_content_chars(),
            local=LocalContents(env.replay_content_max_bytes()) if replay and not capture else None,
            tokens=LocalContents(env.token_content_max_bytes()) if tokens else None,
        )

    @property
    def on_spans(self) -> bool:
        """Whether content texts are written into span attributes."""
        return self.capture and self.local is None

    def keep_tokens(self, trace_key: Any, record: TokenRecord) -> str | None:
        """Keep one model call's token record in the local token store; its
        ref (None when token capture is off). Redactors do not apply: ids and
        logprobs are numbers, which is why they never leave this process but
        for the local content store."""
        if self.tokens is None:
            return None
        ref, text = self.prefixes.encode(trace_key, record, self.ref_of)
        self.tokens.keep(ref, text)
        return ref

    def add_redactor(self, redactor: Redactor) -> None:
        self.redactors.append(redactor)

    def ref_of(self, data: bytes) -> str:
        """The ref of UTF-8 JSON text (keyed when a hash key is set)."""
        digest = hashlib.blake2b(data, digest_size=16, key=self._hash_key or b"").hexdigest()
        return ("hb2:" if self._hash_key else "b2:") + digest

    def apply(self, content: Any) -> Content | None:
        """The ref (and, with capture on, the redacted text) of ``content``."""
        if content is None:
            return None
        data = canonical_json(content)
        if not self.capture:  # hot path: the ref only, straight from orjson's bytes
            return Content(self.ref_of(data), None)
        text = self.redact(data.decode())
        return Content(self.ref_of(text.encode()), text)

    def redact(self, text: str) -> str:
        """``text`` through the redactors. Text longer than ``max_chars`` is
        replaced by a note of its size instead: redaction stays bounded on the
        app's thread, and nothing unredacted is kept. A failing redactor
        withholds the text rather than pass it on unredacted."""
        if len(text) > self.max_chars:
            return canonical_json(f"[orch-otel: {len(text)} characters, over the {self.max_chars}-character "
                                  f"capture limit ({env.ORCH_OTEL_MAX_CONTENT_CHARS}); not captured]").decode()
        for redactor in self.redactors:
            try:
                text = redactor(text)
            except Exception as exc:  # a user's redactor bug must neither break the host nor leak
                _log.warning("orch-otel: a redactor failed (%s); content withheld", type(exc).__name__)
                return canonical_json("[orch-otel: withheld, a redactor failed]").decode()
        return text

