"""Normalising captured LLM content into chat messages ``{role, content}``.

Recorded content is whatever the app or integration passed: a string, a list
of strings, OpenAI-style messages, LangChain message dicts (``type``: human /
ai / system / tool), GenAI-convention messages with ``parts``, AutoGen
messages with ``source``, or Responses-API input items (the OpenAI Agents
SDK's: ``message`` items with ``input_text`` / ``output_text`` parts,
``function_call`` and ``function_call_output``, and the same pairs of local
tools that are no functions: ``shell_call``, ``computer_call``,
``custom_tool_call``...; hosted tool calls, run by the model's provider
inside the call, are left out, as reasoning is, a shell call in a hosted
environment and its output included). Every shape becomes a list of messages whose role is
one of system, user, assistant, tool and whose content is a string; assistant
tool calls are kept in OpenAI form (``tool_calls``: ``{id, type, function:
{name, arguments}}``, arguments as JSON text).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from typing import Any

import orjson

ROLES = ("system", "user", "assistant", "tool")
_ROLE_ALIASES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}
_TYPE_ROLES = {  # AutoGen / LangChain class-ish type names
    "SystemMessage": "system",
    "UserMessage": "user",
    "HumanMessage": "user",
    "AssistantMessage": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "FunctionExecutionResultMessage": "tool",
    "ToolMessage": "tool",
}


_TEXT_PARTS = ("text", "input_text", "output_text", None)
# Responses items that are no chat message: reasoning, and the calls the model's provider ran
# inside the model call (hosted tools). A hosted call has no tool turn of its own to answer it,
# so as a tool call it would dangle in a chat template; the trace keeps it as a hosted tool call.
_SKIPPED_ITEMS = frozenset({
    "reasoning", "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
    "mcp_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "tool_search_call",
    "tool_search_output",
})


# Responses items of a tool call the app ran (a function, or a local tool that is no function:
# shell, computer, apply_patch, a custom tool) -> the tool's name when the item does not carry it;
# each has an output item (``<type>_output``) answering it by call_id.
_CALL_ITEMS = {"function_call": None, "custom_tool_call": None, "shell_call": "shell", "local_shell_call": "local_shell",
               "computer_call": "computer", "apply_patch_call": "apply_patch"}
_OUTPUT_ITEMS = frozenset(f"{kind}_output" for kind in _CALL_ITEMS)
_LOCAL_INPUTS = ("input", "action", "actions", "operation")  # a local tool call's input: custom, shell, computer, patch


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def text_of(content: Any) -> str:
    """A content value as plain text (text parts joined; other values as JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(
                text := part.get("text", part.get("content")), str
            ):
                texts.append(text)
            elif isinstance(part, dict) and part.get("type") in ("tool_call", "function_call", "tool_call_response"):
                continue  # carried as tool_calls / tool messages
            else:
                texts.append(_json(part))
        return "\n".join(texts)
    return _json(content)


def _role(message: dict[str, Any]) -> str:
    role = message.get("role") or message.get("type")
    if isinstance(role, str):
        if role in _TYPE_ROLES:
            return _TYPE_ROLES[role]
        if role.lower() in _ROLE_ALIASES:
            return _ROLE_ALIASES[role.lower()]
    if message.get("source") == "user":
        return "user"
    return "user" if "source" not in message else "assistant"


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    raw = message.get("tool_calls")
    parts = message.get("parts")
    if not isinstance(parts, list):
        parts = []
    calls = []
    for call in list(raw or []) + [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call"]:
        if not isinstance(call, dict):
            continue
        fn = call.get("function")
        if not isinstance(fn, dict):
            fn = call
        args = fn.get("arguments", fn.get("args", {}))
        calls.append({
            "id": str(call.get("id") or ""),
            "type": "function",
            "function": {"name": str(fn.get("name") or ""), "arguments": args if isinstance(args, str) else _json(args)},
        })
    return calls


def _is_function_calls(content: Any) -> bool:
    return isinstance(content, list) and bool(content) and all(
        isinstance(c, dict) and "name" in c and "arguments" in c and "type" not in c for c in content)


def normalize_message(message: Any, default_role: str = "user") -> dict[str, Any]:
    if not isinstance(message, dict):
        return {"role": default_role, "content": text_of(message)}
    role = _role(message) if ("role" in message or "type" in message or "source" in message) else default_role
    content = message.get("content")
    if content is None and isinstance(message.get("parts"), list):
        content = message["parts"]
    calls = _tool_calls(message)
    if _is_function_calls(content):  # a raw AutoGen AssistantMessage / CreateResult (older recordings)
        calls += _tool_calls({"tool_calls": content})
        content = message.get("thought")
    out: dict[str, Any] = {"role": role, "content": text_of(content)}
    if calls and role == "assistant":
        out["tool_calls"] = calls
    call_id = message.get("tool_call_id") or message.get("call_id")
    if role == "tool" and call_id:
        out["tool_call_id"] = str(call_id)
    name = message.get("name")
    if isinstance(name, str) and name and role != "system":
        out["name"] = name  # who said it (AutoGen's source); read by as_seen_by
    return out


def normalize_messages(value: Any, default_role: str = "user") -> list[dict[str, Any]]:
    """Captured input messages as a list of chat messages."""
    if value is None:
        return []
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        value = [value]
    out: list[dict[str, Any]] = []
    hosted_shells: set[Any] = set()  # call ids of shell calls the provider ran: left out as hosted calls are
    for m in value:
        kind = m.get("type") if isinstance(m, dict) else None
        if kind == "shell_call" and _in_hosted_environment(m):
            hosted_shells.add(m.get("call_id"))
        elif kind == "shell_call_output" and m.get("call_id") in hosted_shells:
            continue
        elif kind == "FunctionExecutionResultMessage" and isinstance(m.get("content"), list):
            out.extend(_autogen_results(m["content"]))  # recorded raw by orch-otel before 0.x: one message per result
        elif kind in _CALL_ITEMS and "call_id" in m:
            _add_responses_call(out, m)
        elif kind in _OUTPUT_ITEMS and "call_id" in m:
            output = _shell_text(m["output"]) if kind == "shell_call_output" and _is_shell_output(
                m.get("output")) else text_of(m.get("output"))
            out.append({"role": "tool", "content": output, "tool_call_id": str(m["call_id"])})
        elif kind not in _SKIPPED_ITEMS:
            out.append(normalize_message(m, default_role))
    return out


def _in_hosted_environment(call: dict[str, Any]) -> bool:
    """A ``shell_call`` naming a hosted environment (a container; a local call names ``local`` or nothing)."""
    environment = call.get("environment")
    return isinstance(environment, dict) and environment.get("type") not in (None, "local")


def _is_shell_output(output: Any) -> bool:
    return isinstance(output, list) and all(isinstance(e, dict) and ("stdout" in e or "stderr" in e) for e in output)


def _shell_text(entries: list[dict[str, Any]]) -> str:
    """A ``shell_call_output``'s commands (stdout, stderr, outcome each) as
    one text: each command's output, its stderr labelled, a non-zero exit
    code or a timeout named; commands apart by a blank line."""
    chunks = []
    for entry in entries:
        lines = []
        stdout, stderr = str(entry.get("stdout") or "").rstrip("\n"), str(entry.get("stderr") or "").rstrip("\n")
        if stdout:
            lines.append(stdout)
        if stderr:
            lines += ["", "stderr:", stderr] if stdout else ["stderr:", stderr]
        outcome = entry.get("outcome")
        outcome = outcome if isinstance(outcome, dict) else {}
        if outcome.get("type") == "timeout":
            lines.append("timed out")
        elif outcome.get("exit_code") not in (None, 0):
            lines.append(f"exit code: {outcome['exit_code']}")
        chunks.append("\n".join(lines) or "(no output)")
    return "\n\n".join(chunks)


def _add_responses_call(out: list[dict[str, Any]], item: dict[str, Any]) -> None:
    """A Responses ``function_call`` item (or a local tool's call: shell,
    computer, custom...): a tool call of the assistant message it follows
    (the items of one reply), else an assistant message of its own."""
    kind = item["type"]
    args = item.get("arguments", "{}") if kind == "function_call" else next(
        (item[f] for f in _LOCAL_INPUTS if item.get(f) is not None), "")
    name = item.get("name") or _CALL_ITEMS[kind]
    call = {"id": str(item["call_id"]), "type": "function",
            "function": {"name": str(name or ""), "arguments": args if isinstance(args, str) else _json(args)}}
    if out and out[-1]["role"] == "assistant":
        out[-1].setdefault("tool_calls", []).append(call)
    else:
        out.append({"role": "assistant", "content": "", "tool_calls": [call]})


def _autogen_results(results: list[Any]) -> list[dict[str, Any]]:
    return [{"role": "tool", "content": text_of(r.get("content")), "tool_call_id": str(r.get("call_id") or ""),
             "name": str(r.get("name") or "")} for r in results if isinstance(r, dict)]


def shows_in_chat(value: Any) -> bool:
    """Whether a captured reply holds a chat message: text (even empty) or a
    call of a function or local tool. A reply made only of items left out of
    the chat (hosted tool calls, reasoning) holds none: the next prompt has no
    message for it, so it is no chat turn."""
    return bool(normalize_messages(value, default_role="assistant"))


def normalize_output(value: Any) -> dict[str, Any]:
    """Captured output as one assistant message (the last assistant message
    when several were returned)."""
    messages = normalize_messages(value, default_role="assistant")
    assistant = [m for m in messages if m["role"] == "assistant"] or messages
    if not assistant:
        return {"role": "assistant", "content": ""}
    last = dict(assistant[-1])
    last["role"] = "assistant"
    return last


def reply_key(message: dict[str, Any]) -> bytes:
    """What identifies an assistant turn across prompts and traces: a digest
    of its text and its tool calls (id and name)."""
    calls = [(c["id"], c["function"]["name"]) for c in message.get("tool_calls") or ()]
    return hashlib.blake2b(orjson.dumps([message["content"], calls]), digest_size=16).digest()


def _as_input(message: dict[str, Any], speaker: str | None, call_names: dict[str, str]) -> dict[str, Any]:
    """Another speaker's turn (or its tool result) as a user message: what the
    model read, with no tool call of its own."""
    if message["role"] == "tool":
        name = call_names.get(message.get("tool_call_id", "")) or message.get("name") or "tool"
        text = f"[tool result {name}] {message['content']}"
    else:
        lines = [message["content"]] if message["content"] else []
        lines += [f"[tool call {c['function']['name']}] {c['function']['arguments']}" for c in message.get("tool_calls") or ()]
        text = "\n".join(lines)
    out: dict[str, Any] = {"role": "user", "content": text}
    if speaker:
        out["name"] = speaker
    return out


def as_seen_by(messages: list[dict[str, Any]], agent: str,
               speakers_of: Callable[[bytes], Collection[str]], sole: bool = False) -> list[dict[str, Any]]:
    """A prompt from ``agent``'s side: an assistant message stays one only if
    ``agent``'s model produced it (``agent`` is among the speakers
    ``speakers_of`` names for its :func:`reply_key`: the agents that gave it,
    in this trace or in another run of the same task, :mod:`.tasks`), or the
    recording names ``agent`` as its source. Any other assistant message
    (another agent's turn, or one the framework wrote) becomes a user message
    naming its speaker, its tool calls as text; a tool result that answers a
    call not kept here becomes a user message too.

    ``sole``: ``agent`` is the only agent with LLM calls in the task's traces
    read. Then an assistant message that names no speaker and that no agent
    gave stays ``agent``'s own: one the app put in the prompt (a few-shot
    turn), or a reply of a run not read. With several agents its speaker
    cannot be told, and it is input."""
    kept: set[str] = set()
    call_names: dict[str, str] = {}
    out = []
    for m in messages:
        role = m["role"]
        if role == "assistant":
            calls = m.get("tool_calls") or ()
            call_names.update((c["id"], c["function"]["name"]) for c in calls)
            speakers = list(speakers_of(reply_key(m)))
            if agent in speakers or m.get("name") == agent or (sole and not speakers and not m.get("name")):
                kept.update(c["id"] for c in calls)
                out.append({k: v for k, v in m.items() if k != "name"})
            else:
                out.append(_as_input(m, m.get("name") or (speakers[0] if speakers else None), call_names))
        elif role == "tool":
            if "tool_call_id" in m and m["tool_call_id"] not in kept:
                out.append(_as_input(m, None, call_names))
            else:  # answers a call kept here (or names none: nothing to tell)
                out.append({k: v for k, v in m.items() if k != "name"})
        else:
            out.append(m)
    return out
