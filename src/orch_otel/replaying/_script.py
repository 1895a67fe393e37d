"""A recorded run as a script of answers: every model reply and tool result
of its trace, in order, with the request each answered; and the server that
hands them out while the app runs again (``orch_otel._serving.Server``).

A model call is answered by the first unused recorded call whose request
(the prompt's content ref) is the same, so parallel branches that start in
another order are still answered right; a call no recorded request matches
is a divergence. A tool call is answered by its call id, else by its name
and arguments. Tools whose recorded result is a framework's control flow (a
handoff tool's command, recorded as the delegation it made) run as
themselves: they hold no model and no user code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._serving import ModelCall, NotRecorded, Served, ToolCall
from ..redaction import REDACTED
from ..vocabulary import Channel, DecisionKind, EventKind

Then = Callable[[ModelCall | ToolCall], Any]
"""After a fork: given a call, its reply in the recorded JSON form, or None to make the call itself."""


@dataclass
class Recorded:
    """One recorded model or tool call."""

    event: dict[str, Any]  # the llm message, or the tool result
    index: int  # the event's position in the trace
    request_ref: str | None
    output_text: str | None
    used: bool = False

    @property
    def where(self) -> str:
        e = self.event
        return f"{e['id']} ({e.get('instance') or e['agent']})"


class MissingContent(ValueError):
    """A trace lacks content a replay needs."""


@dataclass
class Script:
    """The answers of one recorded trace, and what the replay did with them."""

    trace: dict[str, Any]
    contents: Mapping[str, str]
    models: list[Recorded] = field(default_factory=list)
    tools: list[Recorded] = field(default_factory=list)
    live_spans: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)  # what the replay could not serve exactly, in words
    misses: list[str] = field(default_factory=list)  # calls no recorded answer matched
    served = 0
    live = 0

    @classmethod
    def of(cls, trace: dict[str, Any], contents: Mapping[str, str]) -> Script:
        script = cls(trace, contents)
        events = trace["events"]
        open_calls: dict[str, dict[str, Any]] = {}  # tool span -> its call, until its result
        for index, e in enumerate(events):
            kind = e["type"]
            if kind == EventKind.MESSAGE.value and e.get("channel") == Channel.LLM.value:
                script.models.append(Recorded(e, index, e.get("input_ref"), script._text(e.get("content_ref"))))
            elif kind == EventKind.TOOL_CALL.value:
                open_calls[e["span_id"]] = e
            elif kind == EventKind.TOOL_RESULT.value:
                call = open_calls.pop(e["span_id"], {})
                script.tools.append(Recorded(e, index, call.get("content_ref"), script._text(e.get("content_ref"))))
            elif (e.get("decision") == DecisionKind.DELEGATE.value or e.get("message_type") == "handoff"
                  or kind == EventKind.SPAWN.value):
                # a delegation made while a tool runs: that tool is a handoff tool; an agent started while
                # it runs: the tool runs that agent (agents as tools), whose own calls are served
                script.live_spans.update(s for s, c in open_calls.items() if c.get("instance") == e.get("instance"))
        return script

    def _text(self, ref: str | None) -> str | None:
        return self.contents.get(ref) if ref else None

    def missing(self) -> list[str]:
        """The events whose content a replay needs and the recording lacks."""
        lacking = [r.event["id"] for r in self.models if r.output_text is None]
        lacking += [r.event["id"] for r in self.tools
                    if r.output_text is None and not self._runs_live(r)]
        return lacking

    def _runs_live(self, tool: Recorded) -> bool:
        """A tool that runs as itself: a handoff tool, a tool that runs an agent, or one that failed (it fails again)."""
        return tool.event.get("span_id") in self.live_spans or tool.event.get("status") == "error"

    # -- serving ----------------------------------------------------------------------------

    def model_answer(self, call: ModelCall, live_text: Callable[[str], str | None]) -> Recorded:
        pending = [r for r in self.models if not r.used]
        same = [r for r in pending if call.request_ref is not None and r.request_ref == call.request_ref]
        # two agents may send one prompt at once (parallel tasks): each gets its own model's reply
        match = next((r for r in same if r.event.get("model") == call.model), same[0] if same else None)
        if match is None and call.request_ref is None and pending:
            match = pending[0]
        if match is None and call.request_ref is not None:  # the same prompt but for ids a framework made up
            text = live_text(call.request_ref)
            shape = _without_call_ids(text) if text is not None else None
            match = next((r for r in pending if shape is not None and r.request_ref
                          and _without_call_ids(self.contents.get(r.request_ref)) == shape), None)
        if match is None:
            expected = pending[0].where if pending else "no further model call"
            self.misses.append(f"a model call with a prompt the recording does not have (next recorded: {expected})")
            raise NotRecorded(self.misses[-1])
        match.used = True
        return match

    def tool_answer(self, call: ToolCall, rerun_failed: bool = True) -> Recorded | None:
        pending = [r for r in self.tools if not r.used and r.event.get("tool") == call.name]
        match = None
        if call.call_id is not None:
            match = next((r for r in pending if r.event.get("call_id") == call.call_id), None)
        if match is None:
            match = next((r for r in pending if call.args_ref is not None and r.request_ref == call.args_ref), None)
        if match is None:
            self.misses.append(f"a call of tool {call.name!r} the recording does not have")
            raise NotRecorded(self.misses[-1])
        match.used = True
        if call.args_ref is not None and match.request_ref is not None and call.args_ref != match.request_ref:
            self.misses.append(f"tool call {match.where} got other arguments than recorded")
            raise NotRecorded(self.misses[-1])
        if not rerun_failed and match.event.get("status") == "error":
            self.misses.append(f"tool call {match.where} failed when recorded, and {call.name!r} is not run again")
            raise NotRecorded(self.misses[-1])
        return None if self._runs_live(match) else match

    def served_from(self, recorded: Recorded) -> Served:
        text = recorded.output_text or "null"
        if REDACTED in text:
            self.notes.append(f"{recorded.where}: the recorded content was redacted; the replay serves the "
                              "redacted text, not the original")
        e = recorded.event
        self.served += 1
        return Served(orjson.loads(text), e.get("input_tokens"), e.get("output_tokens"), e.get("model"))


def _without_call_ids(text: str | None) -> Any:
    """A prompt with its tool-call ids renamed in order of appearance: some
    frameworks make up fresh ids for calls no model made (langgraph-supervisor's
    transfer back to the supervisor), so two runs of one app differ there."""
    if text is None:
        return None
    names: dict[str, str] = {}

    def rename(value: Any) -> Any:
        return names.setdefault(value, f"#{len(names) + 1}") if isinstance(value, str) else value

    def walk(value: Any, key: str | None = None) -> Any:
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k == "tool_call_id" or (k == "id" and key == "tool_calls"):
                    out[k] = rename(v)
                else:
                    out[k] = walk(v, k)
            return out
        return value

    return walk(orjson.loads(text))


class ScriptServer:
    """Serves one script; past a fork, hands calls to ``then`` (or lets them run)."""

    def __init__(self, script: Script, live_text: Callable[[str], str | None],
                 rewrite: tuple[int, Callable[[Any], Any]] | None = None, then: Then | None = None,
                 serve_tools: bool = True) -> None:
        self.script = script
        self.serve_tools = serve_tools  # False: tools run as themselves; their results are compared
        self.live_text = live_text  # the replay's own content, by ref
        self.rewrite = rewrite  # (index of the model call to change, how) for a fork
        self.then = then
        self.forked = False

    def model(self, call: ModelCall) -> Served | None:
        if self.forked:
            return self._after_fork(call)
        recorded = self.script.model_answer(call, self.live_text)
        served = self.script.served_from(recorded)
        if self.rewrite is not None and recorded.index == self.rewrite[0]:
            self.forked = True
            served = Served(self.rewrite[1](served.output), served.input_tokens, served.output_tokens, served.model)
        return served

    def fork(self) -> None:
        self.forked = True

    def tool(self, call: ToolCall) -> Served | None:
        if self.forked:
            return self._after_fork(call)
        recorded = self.script.tool_answer(call, call.rerun_failed or not self.serve_tools)
        if recorded is None or not self.serve_tools:
            self.script.live += 1
            return None
        return self.script.served_from(recorded)

    def _after_fork(self, call: ModelCall | ToolCall) -> Served | None:
        self.script.live += 1
        if self.then is None:
            return None
        output = self.then(call)
        return None if output is None else Served(output)
