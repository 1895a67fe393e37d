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
import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import orjson

from . import env

Redactor = Callable[[str], str]
"""Takes the JSON text of one piece of content, returns it redacted."""

_REDACTED = "[REDACTED]"

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Provider API keys (OpenAI/Anthropic style, AWS, GitHub, Google, Slack).
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), _REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), _REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), _REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), _REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), _REDACTED),
    # Authorization: Bearer <token>
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"), r"\1" + _REDACTED),
    # scheme://user:password@host
    (re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^:/\s\"@]+:)[^@\s\"/]+(@)"), r"\1" + _REDACTED + r"\2"),
    # password=..., "api_key": "...", token: ...
    (
        re.compile(
            r"(?i)\b(api[_\-]?key|secret|password|passwd|pwd|access[_\-]?token|token)"
            r"(\\?[\"']?\s*[:=]\s*\\?[\"']?)[^\"'\s,&\\]{4,}"
        ),
        r"\1\2" + _REDACTED,
    ),
)


def redact_secrets(text: str) -> str:
    """The default redactor: removes common API keys, bearer tokens, passwords
    in URLs and ``password=``/``api_key:`` style values."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


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


class ContentPolicy:
    """Decides what of a piece of content is kept: always its ref, its text
    only when ``capture`` is on, and then only after the redactors ran."""

    __slots__ = ("capture", "redactors", "_hash_key")

    def __init__(
        self,
        capture: bool = False,
        redactors: Iterable[Redactor] | None = None,
        hash_key: bytes | None = None,
    ) -> None:
        self.capture = capture
        self.redactors: list[Redactor] = [redact_secrets] if redactors is None else list(redactors)
        self._hash_key = hash_key

    @classmethod
    def from_env(cls, capture: bool | None = None, redactors: Iterable[Redactor] | None = None) -> ContentPolicy:
        return cls(
            capture=env.capture_content() if capture is None else capture,
            redactors=redactors,
            hash_key=env.content_hash_key(),
        )

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
        text = data.decode()
        for redactor in self.redactors:
            text = redactor(text)
        return Content(self.ref_of(text.encode()), text)


def function_tool(name: str, description: str = "", parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool definition in the OpenAI function format, the one chat datasets
    (TRL, verl) take; no parameters means an object with none."""
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": parameters or {"type": "object", "properties": {}}}}
