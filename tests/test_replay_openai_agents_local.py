"""Replay of OpenAI Agents SDK apps with local tools that are no function
tools (shell with a local executor, custom tool, computer, apply_patch): the
recording answers their calls, and the replayed app's executor, computer and
editor are never called; only with ``serve_tools=False`` (``--live-tools``)
do they run. Each app is recorded with content, then replayed on an agent
whose model has no scripted reply left and whose tools note every call."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from agents import Agent, ApplyPatchTool, ComputerTool, CustomTool, Runner, ShellTool  # noqa: E402
from agents.computer import AsyncComputer  # noqa: E402
from agents.testing import ScriptedModel  # noqa: E402
from conftest import check_trace, instrumentor_fixture, recorded_with_content  # noqa: E402

import orch_otel  # noqa: E402
from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.replaying import replay  # noqa: E402
from orch_otel.vocabulary import Attr  # noqa: E402

instrumented = instrumentor_fixture(OpenAIAgentsInstrumentor)


def _operator(called: list[str]) -> Agent:
    """The operator app again: its executor and custom function note each call and answer as the app's did."""

    def shell(request) -> str:
        called.append("shell " + " ".join(request.data.action.commands))
        return "ran: " + " ".join(request.data.action.commands)

    def shout(context, text: str) -> str:
        called.append("shout " + text)
        return text.upper()

    return Agent(name="operator", model=ScriptedModel([]), tools=[
        ShellTool(executor=shell), CustomTool(name="shout", description="Shout a text.", on_invoke_tool=shout)])


@pytest.mark.parametrize("live", [False, True], ids=["served", "live_tools"])
def test_a_shell_command_and_a_custom_tool_are_served_and_never_run_by_a_replay(captured, monkeypatch, live):
    trace, contents = recorded_with_content(apps.local_tools, captured, monkeypatch)
    called: list[str] = []
    result = replay(trace, _operator(called), contents=contents, serve_tools=not live)
    assert result.equal, result.divergence
    if live:  # the user's choice: the app's tools run, the two model calls are served
        assert sorted(called) == ["shell echo hi", "shout hello"]
        assert result.served == 2 and result.live == 2
    else:
        assert called == []
        assert result.served == 4 and result.live == 0  # two model calls, the command s1 and the custom call c1


def test_a_shell_executors_structured_result_is_served_as_the_model_got_it_and_the_replay_is_equal(
        captured, monkeypatch):
    """The model was given the command's output structured (stdout, stderr, exit code per command), not the
    text the SDK renders for its hooks ("$ echo hi\nhi"); the recording keeps that structure, so the replay
    hands the SDK the same structured result, the model's next prompt is the recorded one, and the command
    does not run."""
    trace, contents = recorded_with_content(apps.structured_shell, captured, monkeypatch)
    called: list[str] = []
    result = replay(trace, _operator(called), contents=contents)
    assert result.equal, result.divergence
    assert called == []
    assert result.served == 4 and result.live == 0  # two model calls, the command s1 and the custom call c1


def test_a_hosted_shell_call_is_part_of_the_served_reply_and_the_replay_is_equal(captured, monkeypatch):
    """hs1 ran in the provider's container: the served reply carries it and its output, the app runs nothing for
    it, and the replayed trace has it again as a hosted call inside the model call."""
    trace, contents = recorded_with_content(apps.hosted_shell, captured, monkeypatch)
    result = replay(trace, apps.hosted_shell_agent(script=False), contents=contents)
    assert result.equal, result.divergence
    assert result.served == 3 and result.live == 0  # two model calls and lookup_invoice t1
    replayed = [s for s in captured.spans if s.attributes.get(Attr.TOOL_CALL_ID) == "hs1"]
    assert [s.attributes.get(Attr.TOOL_HOSTED) for s in replayed] == [True, True]  # recorded, then replayed


@pytest.mark.parametrize("approve", [True, False], ids=["approved", "rejected"])
def test_a_hosted_mcp_approval_answered_in_the_run_replays_equal(captured, monkeypatch, approve):
    """The app's on_approval_request answers again in the replay (it is the app's code, not a tool); the served
    replies carry the listing and the provider's call."""
    trace, contents = recorded_with_content(lambda: apps.hosted_mcp_approval(approve), captured, monkeypatch)
    result = replay(trace, apps.hosted_mcp_agent(approve, script=False), contents=contents)
    assert result.equal, result.divergence
    assert (result.served, result.live) == (2, 0)
    (intervention,) = [e for e in result.traces[0]["events"] if e["type"] == "human_intervention"]
    assert (intervention["approved"], intervention["rejected"]) == ((["mcpr_1"], []) if approve else ([], ["mcpr_1"]))


def test_a_hosted_mcp_approval_awaited_and_resumed_replays_as_a_chain(captured, monkeypatch):
    """The app approved mcpr_1 between the runs: the replayed interrupted run awaits the same request, the
    recorded approval is applied to its state, and the resume replays equal."""
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        apps.hosted_mcp_approved_after_interrupt()
    conversions = captured.conversions()
    chain = [check_trace(c.trace) for c in conversions]
    contents = {k: v for c in conversions for k, v in c.contents.items()}
    result = replay(chain, apps.hosted_mcp_agent(None, script=False), contents=contents)
    assert result.equal, result.divergence
    assert result.app_errors == [None, None]
    assert (result.traces[1]["events"][0]["approved"], result.traces[1]["events"][0]["rejected"]) == (
        ["mcpr_1"], [])


def _ops(agent: Agent, errors: list[str]) -> Any:
    """An app of the user's own: a workflow function running the SDK, noting the errors the run raises."""

    @orch_otel.workflow("ops")
    async def ops(text: str) -> str:
        try:
            return str((await Runner.run(agent, text)).final_output)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            raise

    return ops


def test_a_local_tool_call_the_recording_lacks_stops_the_replay_and_does_not_run(captured, monkeypatch):
    trace, contents = recorded_with_content(lambda: asyncio.run(_ops(apps.operator(), [])("go")), captured, monkeypatch)
    trace["events"] = [e for e in trace["events"] if e.get("call_id") != "s1" or e["type"] not in {
        "tool_call", "tool_result"}]  # the recording no longer holds the command s1
    called: list[str] = []
    errors: list[str] = []
    result = replay(trace, _ops(_operator(called), errors), contents=contents)
    assert "shell echo hi" not in called
    assert not result.equal and result.app_errors == ["NotRecorded"]
    assert "'shell'" in result.divergence.note
    assert [s.attributes.get(Attr.ERROR_TYPE) for s in captured.spans if s.attributes.get(Attr.TOOL_CALL_ID) == "s1"
            ] == [None, "NotRecorded"]  # recorded, then replayed: its span fails with the miss
    (error,) = errors  # the app is told which tool was not run, and how to run it
    assert error.startswith("NotRecorded: ") and "does not run local tool 'shell'" in error
    assert "serve_tools=False" in error and "--live-tools" in error


@pytest.mark.parametrize("live", [False, True], ids=["served", "live_tools"])
def test_a_local_shell_command_is_served_and_never_run_by_a_replay(captured, monkeypatch, live):
    trace, contents = recorded_with_content(lambda: apps.run(apps.local_shell(lambda request: "a.txt\nb.txt")), captured,
                              monkeypatch)
    called: list[list[str]] = []

    async def listing(request) -> str:
        called.append(request.data.action.command)
        return "a.txt\nb.txt"

    result = replay(trace, apps.local_shell(listing, script=False), contents=contents, serve_tools=not live)
    assert result.equal, result.divergence
    if live:
        assert called == [["ls", "/tmp"]]
        assert result.served == 2 and result.live == 1
    else:
        assert called == []
        assert result.served == 3 and result.live == 0  # two model calls and the command l1


@pytest.mark.parametrize("live", [False, True], ids=["served", "live_tools"])
def test_a_local_shell_command_that_failed_when_recorded_is_not_run_again_by_a_replay(captured, monkeypatch, live):
    """A function tool that failed runs again in a replay (its failure is no result to serve); a local
    command that failed is not: it may have done half its work. Only live tools run it."""

    def busy(request) -> str:
        raise RuntimeError("disk busy")

    with pytest.raises(RuntimeError):
        recorded_with_content(lambda: apps.run(apps.local_shell(busy)), captured, monkeypatch)
    (conversion,) = captured.conversions()
    trace, contents = check_trace(conversion.trace), conversion.contents
    called: list[list[str]] = []

    def failing_again(request) -> str:
        called.append(request.data.action.command)
        raise RuntimeError("disk busy")

    result = replay(trace, apps.local_shell(failing_again, script=False), contents=contents, serve_tools=not live)
    if live:  # the user's choice: the command runs, and fails as recorded
        assert called == [["ls", "/tmp"]]
        assert result.equal, result.divergence
        assert result.app_errors == ["RuntimeError"] and (result.served, result.live) == (1, 1)
    else:
        assert called == []
        assert not result.equal and result.app_errors == ["NotRecorded"]
        assert "failed when recorded, and 'local_shell' is not run again" in result.divergence.note


class Desk(AsyncComputer):
    """An async computer for the replayed pilot: notes what it is asked; its screenshot is the recorded app's."""

    def __init__(self) -> None:
        self.done: list[str] = []

    @property
    def environment(self):
        return "linux"

    @property
    def dimensions(self):
        return (800, 600)

    async def screenshot(self) -> str:
        self.done.append("screenshot")
        return apps.Screen().screenshot()

    async def click(self, x: int, y: int, button: str) -> None:
        self.done.append(f"click {x},{y} {button}")

    async def double_click(self, x: int, y: int) -> None:
        self.done.append("double_click")

    async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None:
        self.done.append("scroll")

    async def type(self, text: str) -> None:
        self.done.append("type")

    async def wait(self) -> None:
        self.done.append("wait")

    async def move(self, x: int, y: int) -> None:
        self.done.append("move")

    async def keypress(self, keys: list[str]) -> None:
        self.done.append("keypress")

    async def drag(self, path: list[tuple[int, int]]) -> None:
        self.done.append("drag")


@pytest.mark.parametrize("live", [False, True], ids=["served", "live_tools"])
def test_a_computer_action_is_served_and_the_computer_is_not_touched_by_a_replay(captured, monkeypatch, live):
    trace, contents = recorded_with_content(lambda: apps.computer_use(), captured, monkeypatch)
    desk = Desk()
    pilot = Agent(name="pilot", tools=[ComputerTool(computer=desk)], model=ScriptedModel([]))
    result = replay(trace, pilot, contents=contents, serve_tools=not live)
    assert result.equal, result.divergence
    if live:  # the click, then the screenshot the SDK takes after it
        assert desk.done == ["click 10,20 left", "screenshot"]
        assert result.served == 2 and result.live == 1
    else:
        assert desk.done == []
        assert result.served == 3 and result.live == 0  # two model calls and the click k1


@pytest.mark.parametrize(("live", "streamed"), [(False, False), (True, False), (False, True)],
                         ids=["served", "live_tools", "streamed"])
def test_an_apply_patch_call_is_served_and_the_editor_writes_nothing_in_a_replay(captured, monkeypatch, tmp_path,
                                                                                  live, streamed):
    """A run recorded streamed replays streamed: the same action serves the call."""
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    recorded.mkdir(), replayed.mkdir()
    trace, contents = recorded_with_content(lambda: apps.patching(apps.Notebook(recorded), streamed), captured, monkeypatch)
    assert (recorded / "notes.txt").read_text() == "hello\nworld\n"
    writer = Agent(name="writer", tools=[ApplyPatchTool(editor=apps.Notebook(replayed))], model=ScriptedModel([]))
    result = replay(trace, writer, contents=contents, serve_tools=not live)
    assert result.equal, result.divergence
    if live:
        assert (replayed / "notes.txt").read_text() == "hello\nworld\n"
        assert result.served == 2 and result.live == 1
    else:
        assert list(replayed.iterdir()) == []
        assert result.served == 3 and result.live == 0  # two model calls and the patch a1


SHELL_APP = '''
import subprocess
import sys

sys.path.insert(0, {tests!r})
import openai_agents_apps as apps
from agents import Agent, ShellTool
from agents.testing import ScriptedModel


def run_commands(request):  # the app's own executor: each command in a shell, for real
    return "".join(subprocess.run(command, shell=True, capture_output=True, text=True, check=False).stdout
                   for command in request.data.action.commands)


def operator(model):
    return Agent(name="operator", tools=[ShellTool(executor=run_commands)], model=model)


def record():
    call = {{"type": "shell_call", "id": "sh_1", "call_id": "s1", "status": "completed",
            "action": {{"commands": ["touch made-by-the-command && echo made"]}}}}
    return apps.run(operator(apps.model(apps.step(call), apps.step(apps.assistant_message("done")))))


def factory():  # its model has no reply left: every answer must come from the recording
    return operator(ScriptedModel([]))
'''


def test_orch_otel_replay_does_not_run_a_recorded_shell_command_again_unless_told_to(tmp_path):
    """Recorded in a process of its own, replayed by the CLI: the command's file is made by the recorded run
    and by a replay with --live-tools, never by a plain replay."""
    (tmp_path / "shellapp.py").write_text(SHELL_APP.format(tests=str(Path(__file__).resolve().parent)))
    env = {"ORCH_OTEL_RECORD_FOR_REPLAY": "true", "ORCH_OTEL_TRACE_DIR": str(tmp_path / "orch-traces"),
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", "import orch_otel, shellapp\norch_otel.instrument()\n"
                           "print(shellapp.record().final_output)\norch_otel.flush()\n"], capture_output=True,
                          text=True, cwd=tmp_path, env={**env, "PYTHONPATH": str(tmp_path)}, timeout=300, check=False)
    assert done.returncode == 0 and "done" in done.stdout, done.stderr
    made = tmp_path / "made-by-the-command"
    made.unlink()  # made by the recorded run

    def replay_cli(*flags: str) -> str:
        done = subprocess.run([sys.executable, "-m", "orch_otel.cli", "replay", "orch-traces", "--app",
                               "shellapp:factory", "-o", str(tmp_path / "out"), *flags], capture_output=True,
                              text=True, cwd=tmp_path, env={**env, "ORCH_OTEL_RECORD_FOR_REPLAY": "",
                                                            "PYTHONPATH": str(tmp_path)}, timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return " ".join(done.stdout.split())

    assert "the same orchestration (3 calls served, 0 run by the app)" in replay_cli()
    assert not made.exists()
    assert "the same orchestration (2 calls served, 1 run by the app)" in replay_cli("--live-tools")
    assert made.exists()
