"""Replay of AutoGen teams: each test app is recorded with content, then run
again by a factory whose model clients and tools raise if they are called at
all, so every answer must come from the recording; the orchestration must be
the recorded one. Forks change a speaker selection and a handoff."""

from __future__ import annotations

import asyncio

import autogen_apps as apps
import pytest
from autogen_ext.models.replay import ReplayChatCompletionClient
from conftest import check_trace, decisions_of, instrumentor_fixture

from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.autogen.testing import MODEL_INFO
from orch_otel.recorder import get_recorder
from orch_otel.replaying import ForkError, MissingContent, options_at, orchestration, replay

TIMEOUT = 20

instrumented = instrumentor_fixture(AutoGenInstrumentor)

APPS = ["two_agent_round_robin", "failing_tool_team", "selector_team", "swarm_team", "graph_flow",
        "society_of_mind_team", "team_as_participant", "magentic_one", "tool_round_robin_max_messages",
        "nested_text_mention", "workbench_team"]


class CalledForReal(AssertionError):
    """A replay called a model or a tool instead of serving it."""


class RaisingClient(ReplayChatCompletionClient):
    async def create(self, *args, **kwargs):
        raise CalledForReal("a model was called during replay")

    async def create_stream(self, *args, **kwargs):
        raise CalledForReal("a model was called during replay")
        yield  # pragma: no cover - makes this an async generator


def raising_client(*outputs, model_info=None):
    return RaisingClient(list(outputs), model_info=model_info or MODEL_INFO)


async def lookup(q: str) -> str:
    """Look something up."""  # the docstring and signature of the app's tool: the same tool schema
    raise CalledForReal("a tool was called during replay")


def record(name: str, captured, monkeypatch) -> tuple[dict, dict[str, str]]:
    """Run the app ``name`` with content captured; its trace and contents."""
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        asyncio.run(asyncio.wait_for(getattr(apps, name)().run(task="go"), TIMEOUT))
    (conversion,) = captured.conversions()
    return check_trace(conversion.trace), conversion.contents


def raising_app(name: str, monkeypatch):
    """The same app, built with model clients and tools that raise when called."""
    monkeypatch.setattr(apps, "replay", raising_client)
    monkeypatch.setattr(apps, "lookup", lookup)
    return getattr(apps, name)()


@pytest.mark.parametrize("name", APPS)
def test_replay_serves_every_call_and_gives_the_recorded_orchestration(name, captured, monkeypatch):
    trace, contents = record(name, captured, monkeypatch)
    result = replay(trace, raising_app(name, monkeypatch), contents=contents)
    assert result.equal, result.divergence.describe()
    assert result.app_errors == [None]
    replayed = check_trace(result.trace)
    assert [orchestration(e) for e in replayed["events"]] != []
    assert result.served == sum(1 for e in trace["events"] if e.get("channel") == "llm") + sum(
        1 for e in trace["events"] if e["type"] == "tool_result" and e["status"] == "ok")


def test_failing_tool_runs_as_itself_and_fails_again(captured, monkeypatch):
    """boom raises: its recorded result is the failure, which a replay cannot serve, so the tool runs again."""
    trace, contents = record("failing_tool_team", captured, monkeypatch)
    result = replay(trace, raising_app("failing_tool_team", monkeypatch), contents=contents)
    assert result.equal and result.live == 1
    (failed,) = [e for e in result.trace["events"] if e["type"] == "tool_result"]
    assert failed["tool"] == "boom" and failed["status"] == "error"


def test_a_changed_tool_diverges_at_its_result(captured, monkeypatch):
    """With the tools run for real, a lookup that now answers otherwise is the first difference."""
    trace, contents = record("swarm_team", captured, monkeypatch)

    async def lookup(q: str) -> str:  # the tool's own name: the model calls it by name
        """Look something up."""
        return "something else"

    monkeypatch.setattr(apps, "lookup", lookup)
    result = replay(trace, apps.swarm_team(), contents=contents, serve_tools=False)
    assert not result.equal
    assert result.divergence.expected["type"] == "tool_result"
    assert result.divergence.expected["tool"] == "lookup"
    assert result.divergence.expected["content_ref"] != result.divergence.got["content_ref"]


def test_a_changed_prompt_is_a_divergence_not_a_guess(captured, monkeypatch):
    """Another system message gives planner another prompt: no recorded reply answers it."""
    trace, contents = record("selector_team", captured, monkeypatch)
    monkeypatch.setattr(apps, "replay", raising_client)
    team = apps.selector_team()
    team._participants[0]._system_messages[0].content = "You are a different planner."
    result = replay(trace, team, contents=contents)
    assert not result.equal
    assert "prompt the recording does not have" in result.divergence.note
    planner_call = next(e for e in trace["events"] if e.get("channel") == "llm" and e["agent"] == "planner")
    assert result.divergence.event_id == planner_call["id"]


def test_fork_at_a_speaker_selection_forces_the_chosen_speaker(captured, monkeypatch):
    trace, contents = record("selector_team", captured, monkeypatch)
    first = decisions_of(trace, "delegate")[0]
    assert first["targets"] == ["planner"]
    result = replay(trace, apps.selector_team(), contents=contents, fork=first["id"], choose="reviewer")
    branch = check_trace(result.trace)
    assert result.equal  # the prefix before the selection is the recorded one
    forced = decisions_of(branch, "delegate")[0]
    assert forced["targets"] == ["reviewer"] and forced["id"] == first["id"]
    assert forced["fork"] == {"source_trace_id": trace["trace_id"], "event_id": first["id"], "decision": "delegate",
                              "recorded": ["planner"], "forced": ["reviewer"],
                              "group": f"{trace['trace_id']}/{first['id']}"}
    assert branch["task_id"] == trace["task_id"] and branch["trace_id"] != trace["trace_id"]
    speakers = [e["agent"] for e in branch["events"] if e.get("channel") == "agent"]
    assert speakers[0] == "reviewer"


def test_fork_checks_the_option_and_the_event(captured, monkeypatch):
    trace, contents = record("selector_team", captured, monkeypatch)
    first = decisions_of(trace, "delegate")[0]
    with pytest.raises(ForkError, match="not an option"):
        replay(trace, apps.selector_team(), contents=contents, fork=first["id"], choose="nobody")
    message = next(e for e in trace["events"] if e["type"] == "message")
    with pytest.raises(ForkError, match="not a delegation"):
        replay(trace, apps.selector_team(), contents=contents, fork=message["id"], choose="coder")
    stop = decisions_of(trace, "stop")[-1]
    with pytest.raises(ForkError, match="not made by a model call"):
        replay(trace, apps.selector_team(), contents=contents, fork=stop["id"], choose="coder")


def test_a_trace_without_content_says_which_events_lack_it(captured):
    asyncio.run(asyncio.wait_for(apps.selector_team().run(task="go"), TIMEOUT))
    (conversion,) = captured.conversions()
    with pytest.raises(MissingContent, match=r"lacks the content of 4 event\(s\)"):
        replay(conversion.trace, apps.selector_team(), contents=conversion.contents)


def test_fork_stop_here_ends_the_team_at_its_termination_check(captured, monkeypatch):
    """Stopping instead of the second selection (coder): the run ends after planner's reply."""
    trace, contents = record("selector_team", captured, monkeypatch)
    second = decisions_of(trace, "delegate")[1]
    assert second["targets"] == ["coder"]
    result = replay(trace, raising_app("selector_team", monkeypatch), contents=contents, fork=second["id"],
                    choose="stop")
    branch = check_trace(result.trace)
    assert result.equal and result.live == 0  # nothing past the fork: no model was called
    assert [d["targets"] for d in decisions_of(branch, "delegate")] == [["planner"]]
    (stop,) = decisions_of(branch, "stop")
    assert stop["reason"] == "orch-otel replay: stopped here by a fork"
    assert stop["fork"]["forced"] == [] and stop["fork"]["recorded"] == ["coder"]


def test_fork_continue_goes_on_past_a_recorded_stop(captured, monkeypatch):
    """The team stopped at coder's TERMINATE; forced to go on, the selector (live) picks again."""
    trace, contents = record("selector_team", captured, monkeypatch)
    stop = [d for d in decisions_of(trace, "stop") if d["agent"] == "SelectorGroupChat"][0]
    result = replay(trace, apps.selector_team(), contents=contents, fork=stop["id"], choose="continue")
    branch = check_trace(result.trace)
    assert result.equal  # the prefix, before the check, is the recorded one
    assert len(decisions_of(branch, "delegate")) > len(decisions_of(trace, "delegate"))
    assert decisions_of(branch, "delegate")[2]["fork"]["forced"] == ["continue"]


def test_a_participants_stop_points_to_the_teams_stop_to_fork(captured, monkeypatch):
    """coder's TERMINATE is recorded as coder's stop (by TextMentionTermination) and as the team's: only the
    team's check can be forced, and the error for coder's says which event that is."""
    trace, contents = record("selector_team", captured, monkeypatch)
    coder_stop = next(d for d in decisions_of(trace, "stop") if d["agent"] == "coder")
    team_stop = next(d for d in decisions_of(trace, "stop") if d["agent"] == "SelectorGroupChat")
    with pytest.raises(ForkError, match=f"the team's stop for that reason is {team_stop['id']}: fork there with "
                                        "--choose continue"):
        options_at(trace, contents, coder_stop["id"])  # what --choose-each asks first


def test_the_teams_recorded_stop_is_a_branch_beside_continue(captured, monkeypatch):
    trace, contents = record("selector_team", captured, monkeypatch)
    stop = next(d for d in decisions_of(trace, "stop") if d["agent"] == "SelectorGroupChat")
    assert options_at(trace, contents, stop["id"]) == ["stop", "continue"]
    kept = replay(trace, raising_app("selector_team", monkeypatch), contents=contents, fork=stop["id"], choose="stop")
    assert kept.equal and kept.live == 0  # every call served: the run as recorded
    (forked,) = [e for e in check_trace(kept.trace)["events"] if e.get("fork")]
    assert (forked["id"], forked["agent"], forked["decision"], forked["fork"]["forced"]) == \
        (stop["id"], "SelectorGroupChat", "stop", [])


def test_a_stop_the_team_decided_itself_cannot_be_continued(captured, monkeypatch):
    trace, contents = record("graph_flow", captured, monkeypatch)
    (stop,) = [d for d in decisions_of(trace, "stop") if d["agent"] == "GraphFlow"]
    with pytest.raises(ForkError, match="not by its termination check"):
        replay(trace, apps.graph_flow(), contents=contents, fork=stop["id"], choose="continue")


def streaming_pair(client_factory):
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    a = AssistantAgent("a", model_client=client_factory("a streams"), model_client_stream=True)
    b = AssistantAgent("b", model_client=client_factory("b streams"), model_client_stream=True)
    return RoundRobinGroupChat([a, b], termination_condition=MaxMessageTermination(3))


def test_streamed_model_calls_are_served_too(captured, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        asyncio.run(asyncio.wait_for(streaming_pair(apps.replay).run(task="go"), TIMEOUT))
    (conversion,) = captured.conversions()
    result = replay(conversion.trace, streaming_pair(raising_client), contents=conversion.contents)
    assert result.equal, result.divergence and result.divergence.describe()
    assert result.served == 2
