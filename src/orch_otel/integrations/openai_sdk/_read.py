"""Token ids and logprobs read from the openai SDK's chat completion objects.

Servers put them in different places (``docs/tokens.md``):

- vLLM: top-level ``prompt_token_ids`` (streaming: on the first chunk), per
  choice ``token_ids`` (streaming: each chunk's new ids, also in chunks with
  no text) and ``logprobs.content[j].logprob``;
- SGLang: per choice ``prompt_token_ids`` and ``response_token_ids``, or
  ``sglext.input_ids`` / ``sglext.output_ids[choice]`` (streaming: only in a
  trailing chunk with no choices).

The SDK keeps fields it does not know in ``model_extra``. Only the first
choice is read: it is the one the frameworks record.
"""

from __future__ import annotations

from typing import Any

from ..._tokens import TokenRecord, logprob_values, token_ids


def _field(obj: Any, name: str) -> Any:
    """A field the SDK knows (``choices``, ``index``, ``logprobs``...), of a model or a dict."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _extra(obj: Any, name: str) -> Any:
    """A field the SDK does not know (``token_ids``, ``sglext``...): kept in
    ``model_extra`` (looked up there, not by attribute: a miss would raise and
    catch an AttributeError on every chunk)."""
    if isinstance(obj, dict):
        return obj.get(name)
    extra = getattr(obj, "__pydantic_extra__", None)
    if extra is None:  # not pydantic 2's own slot: the SDK's model_extra
        extra = getattr(obj, "model_extra", None)
    return extra.get(name) if isinstance(extra, dict) else None


def _first_choice(obj: Any) -> Any:
    for choice in _field(obj, "choices") or ():
        if (_field(choice, "index") or 0) == 0:
            return choice
    return None


def _logprobs(choice: Any) -> list[Any] | None:
    logprobs = _field(choice, "logprobs")
    content = _field(logprobs, "content") if logprobs is not None else None
    if content is None:
        return None
    return [_field(entry, "logprob") for entry in content]


def _sglext_ids(obj: Any) -> tuple[list[int] | None, list[int] | None]:
    ext = _extra(obj, "sglext")
    if not isinstance(ext, dict):
        return None, None
    outputs = ext.get("output_ids")
    first = outputs[0] if isinstance(outputs, list) and outputs else None
    return token_ids(ext.get("input_ids")), token_ids(first)


def completion_tokens(response: Any) -> TokenRecord | None:
    """The token record of a whole ``ChatCompletion``; None when it has no ids nor logprobs."""
    choice = _first_choice(response)
    ext_prompt, ext_response = _sglext_ids(response)
    prompt = token_ids(_extra(response, "prompt_token_ids"))
    response_ids = None
    logprobs = None
    if choice is not None:
        prompt = prompt or token_ids(_extra(choice, "prompt_token_ids"))
        response_ids = token_ids(_extra(choice, "token_ids"))
        if response_ids is None:
            response_ids = token_ids(_extra(choice, "response_token_ids"))
        logprobs = _logprobs(choice)
    record = TokenRecord(prompt if prompt is not None else ext_prompt,
                         response_ids if response_ids is not None else ext_response,
                         logprob_values(logprobs))
    return record if any(part is not None for part in record) else None


class StreamTokens:
    """Token ids and logprobs joined over a stream's chunks."""

    __slots__ = ("prompt", "ids", "logprobs", "ext_prompt", "ext_response", "_has_ids", "_has_logprobs")

    def __init__(self) -> None:
        self.prompt: list[int] | None = None
        self.ids: list[int] = []
        self.logprobs: list[Any] = []
        self.ext_prompt: list[int] | None = None
        self.ext_response: list[int] | None = None
        self._has_ids = self._has_logprobs = False

    def add(self, chunk: Any) -> None:
        if self.prompt is None:
            self.prompt = token_ids(_extra(chunk, "prompt_token_ids"))
        ext_prompt, ext_response = _sglext_ids(chunk)
        self.ext_prompt = ext_prompt or self.ext_prompt
        self.ext_response = ext_response or self.ext_response
        choice = _first_choice(chunk)
        if choice is None:
            return
        if self.prompt is None:
            self.prompt = token_ids(_extra(choice, "prompt_token_ids"))
        ids = token_ids(_extra(choice, "token_ids"))
        if ids is not None:
            self.ids.extend(ids)
            self._has_ids = True
        logprobs = _logprobs(choice)
        if logprobs is not None:
            self.logprobs.extend(logprobs)
            self._has_logprobs = True

    def record(self) -> TokenRecord | None:
        record = TokenRecord(self.prompt if self.prompt is not None else self.ext_prompt,
                             self.ids if self._has_ids else self.ext_response,
                             logprob_values(self.logprobs) if self._has_logprobs else None)
        return record if any(part is not None for part in record) else None
