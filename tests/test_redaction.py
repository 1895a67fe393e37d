"""Secrets: the default redactor's coverage and linearity, exceptions kept out
with capture off, and a corpus of planted secrets in every content location of
real LangGraph and AutoGen runs that must never leave the process."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import pytest
from conftest import instrumentor_fixture, recording
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from orch_otel import Attr, ContentPolicy, redact_secrets
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.redaction import _PATTERNS

# One planted secret of each kind the default redactor documents (values made up).
PLANTED = {
    "openai key": "sk-proj4f8Qw2Lx9Zt7Rb1Nc3Vd",
    "aws key id": "AKIAQX4TRN7ZL2PWKD5M",
    "aws secret, labelled": "aws_secret_access_key=q8Jf2Lm9Xr4Tz7Wb1Nc3Vd6Yh0Ks5Pa8Ge2Ui4Oq",
    "aws secret, bare": "Zr4T/z7Wb1Nc3Vd6Yh0Ks5Pa8Ge2Ui4Oqq8Jf2Lm",
    "github token": "ghp_R2d4F6h8J0k2L4m6N8p0Q2r4S6t8V0w2X4y6",
    "google key": "AIzaSyB3k9Qw2Lx7Zt1Rb5Nc8Vd4Yh6Ks0Pa2Ge",
    "slack token": "xoxb-20417-98123-QwErTyUiOp",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWhlcmUtMTIz",
    "bearer": "Bearer tok3nV4lue9Zq7Lw",
    "url password": "postgres://admin:Hunt3r2Pw@db.internal/app",
    "password value": "password=Corr3ctHorse",
    "api_key value": '"api_key": "k3y-V4lue-778"',
    "email": "alice.jones+ops@example.org",
    "card": "4242 4242 4242 4242",
}
# The part of each planted text that must disappear.
SECRET_PART = {
    "aws secret, labelled": "q8Jf2Lm9Xr4Tz7Wb1Nc3Vd6Yh0Ks5Pa8Ge2Ui4Oq",
    "bearer": "tok3nV4lue9Zq7Lw",
    "url password": "Hunt3r2Pw",
    "password value": "Corr3ctHorse",
    "api_key value": "k3y-V4lue-778",
}


def secret_of(kind: str) -> str:
    return SECRET_PART.get(kind, PLANTED[kind])


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_the_default_redactor_removes_every_documented_kind(kind):
    text = f"note: {PLANTED[kind]} (end)"
    out = redact_secrets(text)
    assert secret_of(kind) not in out and "[REDACTED]" in out
    assert out.startswith("note: ") and out.endswith(" (end)")  # only the secret goes


@pytest.mark.parametrize("text", [
    "commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",  # a hex digest is no AWS secret
    "at 1733212345678901234 ns",  # a timestamp is no card number
    "card 4242 4242 4242 4241",  # fails the Luhn check
    "see https://example.org/a:b/c",  # no user:password@
    "the token was rotated",  # a keyword without a value
    "plain words and numbers 42",
])
def test_the_default_redactor_leaves_look_alikes_alone(text):
    assert redact_secrets(text) == text


@pytest.mark.parametrize("text", [
    "client(api_key=sk-live0123456789abcdefXYZ)",
    "token=sk-live0123456789abcdefXYZ) and more",
    "{'secret': 'sk-live0123456789abcdefXYZ'}",
])
def test_a_key_already_redacted_keeps_the_characters_after_it(text):
    # The key=value rule runs after the sk- rule: it must not swallow the ')' or quote after the marker.
    expected = text.replace("sk-live0123456789abcdefXYZ", "[REDACTED]")
    assert redact_secrets(text) == expected


def _unbounded_repeats(tree: Any) -> list[str]:
    """Repetitions with no upper bound in a parsed pattern (the cause of quadratic backtracking)."""
    if sys.version_info >= (3, 11):
        from re import _constants as c
        from re import _parser as parser
    else:  # pragma: no cover
        import sre_constants as c
        import sre_parse as parser
    found: list[str] = []

    def walk(items: Any) -> None:
        for op, arg in items:
            if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
                low, high, sub = arg
                if high == c.MAXREPEAT:
                    found.append(f"{{{low},}}")
                walk(sub)
            elif op is c.SUBPATTERN:
                walk(arg[-1])
            elif op is c.BRANCH:
                for branch in arg[1]:
                    walk(branch)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                walk(arg[1])

    walk(tree if isinstance(tree, list) else parser.parse(tree).data)
    return found


def test_every_redaction_pattern_is_bounded_so_redaction_is_linear():
    for pattern, _, _ in _PATTERNS:
        assert not _unbounded_repeats(pattern.pattern), f"unbounded repetition in {pattern.pattern!r}"
    # The inputs that hung the old redactor (quadratic backtracking) now pass through unchanged.
    for text in ("a" * 80_000, "0123456789abcdef" * 12_500, "eyJ" * 30_000, "x://" * 20_000):
        assert redact_secrets(text) == text


def test_content_over_the_capture_limit_is_replaced_by_a_note_of_its_size():
    policy = ContentPolicy(capture=True, max_chars=1000)
    kept = policy.apply({"result": "0123456789abcdef" * 100 + PLANTED["openai key"]})
    assert PLANTED["openai key"] not in kept.text and "characters, over the 1000-character capture limit" in kept.text


def test_a_failing_redactor_withholds_the_content_instead_of_leaking_it(caplog):
    def broken(text: str) -> str:
        raise RuntimeError("redactor bug")

    kept = ContentPolicy(capture=True, redactors=[broken]).apply({"q": PLANTED["email"]})
    assert PLANTED["email"] not in kept.text and "withheld" in kept.text
    assert PLANTED["email"] not in caplog.text


# -- the corpus, planted in every content location of real runs --------------------------------


def _everything_recorded(spans) -> str:
    """All text that left the recorder: span names, statuses, attributes and event attributes."""
    parts: list[str] = []
    for span in spans:
        parts += [span.name, span.status_message]
        parts += [f"{k}={v}" for k, v in span.attributes.items()]
        for event in span.events:
            parts += [event.name] + [f"{k}={v}" for k, v in event.attributes.items()]
    return "\n".join(parts)


CORPUS = " | ".join(PLANTED.values())


def _assert_no_secret(text: str) -> None:
    leaked = [kind for kind in PLANTED if secret_of(kind) in text]
    assert not leaked, f"leaked: {leaked}"


class _State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    notes: str


def _langgraph_app(fail: bool):
    from langchain_core.messages import SystemMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call

    @tool
    def vault(query: str) -> str:
        """Look a secret up."""
        if fail:
            raise RuntimeError(f"vault refused {CORPUS}")
        return f"vault says {CORPUS}"

    model = FakeToolCallingModel(model_name="m", by_turn=True, responses=[
        ai(tool_calls=[tool_call("vault", {"query": CORPUS}, "call_vault")]), ai(f"answer {CORPUS}")])
    bound = model.bind_tools([vault])

    def agent(state: _State) -> dict:
        return {"messages": [bound.invoke([SystemMessage(f"system prompt {CORPUS}"), *state["messages"]])]}

    def route(state: _State) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(_State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([vault], handle_tool_errors=False))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(name="secrets_app")


def _approval_app():
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def ask(state: _State) -> dict:
        return {"notes": interrupt(f"approve? {CORPUS}")}

    graph = StateGraph(_State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=MemorySaver(), name="approval")


both_frameworks = instrumentor_fixture(LangGraphInstrumentor, AutoGenInstrumentor)


@pytest.mark.parametrize("capture", [False, True])
def test_planted_secrets_in_a_langgraph_run_never_leave_the_process(both_frameworks, captured, capture, caplog):
    from langchain_core.messages import HumanMessage
    from langgraph.types import Command

    with recording(capture):
        _langgraph_app(fail=False).invoke({"messages": [HumanMessage(f"human input {CORPUS}")], "notes": CORPUS})
        with pytest.raises(RuntimeError, match="vault refused"):  # the app's own exception, untouched
            _langgraph_app(fail=True).invoke({"messages": [HumanMessage("go")], "notes": CORPUS})
        approval, config = _approval_app(), {"configurable": {"thread_id": "t-secrets"}}
        approval.invoke({"notes": ""}, config)
        approval.invoke(Command(resume=f"human says {CORPUS}"), config)
    recorded = _everything_recorded(captured.spans)
    _assert_no_secret(recorded + caplog.text)
    assert "error.type=RuntimeError" in recorded
    if capture:  # the content is there, redacted
        assert "[REDACTED]" in recorded and "system prompt" in recorded and "vault refused" in recorded
        assert "human says" in recorded
    else:  # no content at all, exception messages included
        assert "vault refused" not in recorded and "system prompt" not in recorded
        assert Attr.EXCEPTION_MESSAGE not in recorded and Attr.EXCEPTION_STACKTRACE not in recorded


@pytest.mark.parametrize("capture", [False, True])
async def test_planted_secrets_in_an_autogen_run_never_leave_the_process(both_frameworks, captured, capture, caplog):
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    from orch_otel.integrations.autogen.testing import replay, tool_call

    def vault(query: str) -> str:
        """Look a secret up."""
        return f"vault says {CORPUS}"

    def broken(query: str) -> str:
        """Always fails, quoting its input."""
        raise ValueError(f"broken on {CORPUS}")

    client = replay(tool_call("vault", {"query": CORPUS}, "c1"), tool_call("broken", {"query": CORPUS}, "c2"),
                    f"model output {CORPUS}")
    agent = AssistantAgent("keeper", model_client=client, tools=[vault, broken],
                           system_message=f"system prompt {CORPUS}", reflect_on_tool_use=False)
    team = RoundRobinGroupChat([agent], termination_condition=MaxMessageTermination(4))
    with recording(capture):
        await team.run(task=f"task {CORPUS}")
    recorded = _everything_recorded(captured.spans)
    _assert_no_secret(recorded + caplog.text)
    if capture:
        assert "[REDACTED]" in recorded and "model output" in recorded
    else:
        assert "model output" not in recorded and "broken on" not in recorded


def test_exception_text_is_kept_out_with_capture_off_and_redacted_with_it_on(captured):
    import orch_otel

    @orch_otel.tool
    def leaky():
        raise PermissionError(f"denied for {PLANTED['email']} using {PLANTED['openai key']}")

    for capture in (False, True):
        with recording(capture), pytest.raises(PermissionError):
            leaky()
    off, on = [s for s in captured.spans if s.name == "execute_tool leaky"]
    for span in (off, on):
        assert span.status == "error" and span.status_message == "PermissionError"
        (event,) = [e for e in span.events if e.name == "exception"]
        assert event.attributes[Attr.EXCEPTION_TYPE] == "PermissionError"
    (off_event,) = [e for e in off.events if e.name == "exception"]
    assert Attr.EXCEPTION_MESSAGE not in off_event.attributes and Attr.EXCEPTION_STACKTRACE not in off_event.attributes
    (on_event,) = [e for e in on.events if e.name == "exception"]
    assert on_event.attributes[Attr.EXCEPTION_MESSAGE] == "denied for [REDACTED] using [REDACTED]"
    assert "PermissionError" in on_event.attributes[Attr.EXCEPTION_STACKTRACE]
    _assert_no_secret(_everything_recorded([off, on]))
