"""Token ids for the rows that trainers read as tokens (agent-lightning
triplets, ART Choices): the ids captured at the model call when there are
some, else, with ``--tokenizer``, the prompt and reply tokenized here with a
Hugging Face tokenizer's chat template (``retokenized``: the model may have
produced other ids for the same text; no logprobs). Without either a view
that needs ids raises :class:`TokensMissing`.

``transformers`` (and ``jinja2`` for chat templates) are optional:
``pip install 'orch-otel[tokenize]'``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import orjson

from .views import ContentMissing

CAPTURED, RETOKENIZED = "captured", "retokenized"
TOKENS_HINT = (
    "the {what} needs token ids, and trace {trace_id} has a model call ({where}) without them. Either "
    "record the runs against a server that returns ids (vLLM: extra_body={{'return_token_ids': True, "
    "'logprobs': True}}; SGLang: return_token_ids / return_prompt_token_ids) with token capture on, "
    "or pass --tokenizer PATH_OR_NAME (a Hugging Face tokenizer with a chat template) to tokenize the "
    "recorded prompts and replies offline (rows marked token_source 'retokenized', without logprobs)"
)


class TokensMissing(ContentMissing):
    """A view or format that needs token ids got a model call without captured
    ids, and no tokenizer was given to make them."""


@dataclass
class CallTokens:
    """One model call's prompt and reply as ids, where they came from, and the reply's logprobs (captured only)."""

    prompt_ids: list[int]
    response_ids: list[int]
    log_probs: list[float] | None
    source: str  # CAPTURED or RETOKENIZED


def captured(row: dict[str, Any]) -> CallTokens | None:
    """The ids a ``turns`` row carries from the model server, if any."""
    prompt, response = row.get("prompt_token_ids"), row.get("response_token_ids")
    if not prompt or not response:
        return None
    log_probs = row.get("response_logprobs")
    if log_probs is not None and len(log_probs) != len(response):
        log_probs = None  # as agent-lightning does: logprobs that do not match the ids are none
    return CallTokens(list(prompt), list(response), log_probs, CAPTURED)


@functools.lru_cache(maxsize=4)
def load_tokenizer(name_or_path: str) -> Any:
    """A Hugging Face tokenizer (a local folder or a hub name), loaded once per process."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise RuntimeError("--tokenizer needs the 'transformers' package (and 'jinja2' for chat templates): "
                           "pip install 'orch-otel[tokenize]'") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"--tokenizer {name_or_path}: cannot load a tokenizer there: {exc}") from None
    if not getattr(tokenizer, "chat_template", None):
        raise RuntimeError(f"--tokenizer {name_or_path}: the tokenizer has no chat template, so prompts cannot be "
                           "rendered as the model read them; use the tokenizer of the model that ran")
    return tokenizer


def _template_message(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message as chat templates expect it: tool-call arguments as a dict, no trainable marks."""
    out = {k: v for k, v in message.items() if k not in ("trainable", "weight")}
    if out.get("tool_calls"):
        out["tool_calls"] = [{**c, "function": {**c["function"], "arguments": _arguments(c["function"].get("arguments"))}}
                             for c in out["tool_calls"]]
    return out


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _ids(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation: bool) -> list[int]:
    out = tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=generation, tokenize=True)
    if hasattr(out, "keys"):  # transformers 5 returns a BatchEncoding
        out = out["input_ids"]
    return list(out)


def retokenize(name_or_path: str, prompt: list[dict[str, Any]], reply: dict[str, Any],
               tools: list[dict[str, Any]] | None) -> CallTokens:
    """The prompt rendered with the generation prompt, and the reply as the
    tokens that the template adds after it (its text, tool calls and end of turn)."""
    tokenizer = load_tokenizer(name_or_path)
    messages = [_template_message(m) for m in prompt]
    prompt_ids = _ids(tokenizer, messages, tools, True)
    full = _ids(tokenizer, messages + [_template_message(reply)], tools, False)
    if full[:len(prompt_ids)] != prompt_ids or len(full) == len(prompt_ids):
        raise RuntimeError(f"--tokenizer {name_or_path}: its chat template does not render a reply as an extension "
                           "of the generation prompt, so the reply's tokens cannot be told apart")
    return CallTokens(prompt_ids, full[len(prompt_ids):], None, RETOKENIZED)


def call_tokens(row: dict[str, Any], reply: dict[str, Any], tools: list[dict[str, Any]] | None,
                tokenizer: str | None, what: str, trace_id: str, required: bool = True) -> CallTokens | None:
    """A ``turns`` row's ids: captured, else retokenized, else :class:`TokensMissing` (None when not ``required``)."""
    found = captured(row)
    if found is not None:
        return found
    if tokenizer is None:
        if not required:
            return None
        where = f"event {row['event_id']} of agent {row['agent']!r}"
        raise TokensMissing(TOKENS_HINT.format(what=what, trace_id=trace_id, where=where))
    return retokenize(tokenizer, row["input_messages"] or [], reply, tools)
