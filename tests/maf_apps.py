"""Microsoft Agent Framework apps for the tests, offline: real agents,
workflows and orchestration builders, with a scripted chat client built from
the framework's own layers (``FunctionInvocationLayer`` ->
``ChatMiddlewareLayer`` -> ``ChatTelemetryLayer`` -> ``BaseChatClient``, the
order its full clients use). Only the model is fake: each call pops the next
scripted reply, as a message or a function-call turn with fixed call ids.

Each builder function returns something to run; the truths about them are
written by hand in the tests from this code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from agent_framework import (
    Agent,
    BaseAgent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Executor,
    Message,
    ResponseStream,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    tool,
)
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer
from agent_framework.observability import ChatTelemetryLayer

USAGE = {"input_token_count": 7, "output_token_count": 3}


async def consume(target: Any, message: Any, stream: bool = False) -> Any:
    """Run an agent or a workflow once, as ``run(message)`` or by iterating ``run(message, stream=True)``."""
    if not stream:
        return await target.run(message)
    async for _ in target.run(message, stream=True):
        pass


class CalledForReal(AssertionError):
    """A replay called a model or a tool instead of serving it (tests set ``REPLAYING``)."""


REPLAYING = False  # True: the scripted model and the tools raise if called at all


class ScriptedChatClient(FunctionInvocationLayer, ChatMiddlewareLayer, ChatTelemetryLayer, BaseChatClient):
    """A chat client answering from a script: each reply is a text or a list
    of ``(call_id, tool, arguments_json)`` function calls. ``delay`` seconds
    before each answer, with ``waiting`` (an ``asyncio.Event``, if set) set
    when the wait begins (for cancellation tests)."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, replies: Sequence[str | list[tuple[str, str, str]]], model: str = "scripted-model",
                 delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replies = list(replies)
        self.model = model
        self.delay = delay
        self.waiting: asyncio.Event | None = None

    def _next(self) -> Message:
        reply = self.replies.pop(0) if self.replies else "(script ended)"
        if isinstance(reply, str):
            return Message(role="assistant", contents=[reply])
        return Message(role="assistant", contents=[Content.from_function_call(call_id=i, name=n, arguments=a)
                                                   for i, n, a in reply])

    async def _wait(self) -> None:
        if self.waiting is not None:
            self.waiting.set()
        await asyncio.sleep(self.delay)

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kwargs: Any) -> Any:
        if REPLAYING:
            raise CalledForReal(f"the model of {self.model} was called during a replay")
        if not stream:
            async def answer() -> ChatResponse:
                if self.delay:
                    await self._wait()
                return ChatResponse(messages=[self._next()], model=self.model, usage_details=dict(USAGE))

            return answer()

        async def updates():
            if self.delay:
                await self._wait()
            reply = self._next()
            yield ChatResponseUpdate(role="assistant", contents=list(reply.contents), model=self.model)
            yield ChatResponseUpdate(role="assistant", contents=[Content.from_usage(dict(USAGE))])

        return ResponseStream(updates(), finalizer=ChatResponse.from_updates)


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    if REPLAYING:
        raise CalledForReal("get_weather was called during a replay")
    return f"sunny in {city}"


@tool
def flaky_lookup(query: str) -> str:
    """Always fails."""
    raise RuntimeError(f"lookup of {query} failed")


def weather_agent(replies: Sequence[Any] | None = None) -> Agent:
    """Calls get_weather twice in one turn (w1, w2: parallel calls), then answers."""
    script = replies if replies is not None else [
        [("w1", "get_weather", '{"city": "Paris"}'), ("w2", "get_weather", '{"city": "Rome"}')],
        "Paris and Rome are sunny.",
    ]
    return Agent(client=ScriptedChatClient(script), name="weather", description="answers about the weather",
                 tools=[get_weather])


def flaky_agent() -> Agent:
    """Calls flaky_lookup (f1), which raises; the framework answers the model an error, and it apologizes."""
    return Agent(client=ScriptedChatClient([[("f1", "flaky_lookup", '{"query": "x"}')], "sorry, no data"]),
                 name="weather", tools=[flaky_lookup])


def writer(name: str, text: str) -> Agent:
    return Agent(client=ScriptedChatClient([text]), name=name, description=f"the {name}")


def agent_with_agent_tool() -> Agent:
    """The lead asks its researcher tool (call r1), which looks the weather up (w9), then answers."""
    researcher = Agent(client=ScriptedChatClient([[("w9", "get_weather", '{"city": "Oslo"}')], "Oslo is sunny."]),
                       name="researcher", description="finds facts", tools=[get_weather])
    lead = Agent(client=ScriptedChatClient([[("r1", "ask_researcher", '{"task": "weather in Oslo"}')], "Done: Oslo."]),
                 name="lead", description="leads", tools=[researcher.as_tool(name="ask_researcher")])
    return lead


def sequential(checkpoint_storage: Any = None):
    from agent_framework_orchestrations import SequentialBuilder

    return SequentialBuilder(participants=[writer("drafter", "a draft"), writer("reviewer", "looks good")],
                             checkpoint_storage=checkpoint_storage).build()


def concurrent():
    from agent_framework_orchestrations import ConcurrentBuilder

    return ConcurrentBuilder(participants=[writer("optimist", "yes"), writer("pessimist", "no"),
                                           writer("realist", "maybe")]).build()


class Classify(Executor):
    """A plain executor: the switch-case's source (not an agent)."""

    @handler
    async def classify(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)


def switch_case_loop(max_iterations: int = 20):
    """A custom graph: ``triage`` (an agent) -> switch-case on its reply ->
    ``billing`` (chosen) or ``support``; billing loops back to triage once,
    whose second reply goes to support."""
    from agent_framework import Case, Default

    triage = writer("triage", "unused")
    triage.client.replies = ["billing question", "support question"]  # type: ignore[attr-defined]
    billing = writer("billing", "refund sent")
    support = writer("support", "ticket closed")

    def says(word: str):
        return lambda response: word in response.agent_response.text

    return (
        WorkflowBuilder(name="helpdesk", start_executor=triage, max_iterations=max_iterations)
        .add_switch_case_edge_group(triage, [Case(condition=says("billing"), target=billing), Default(target=support)])
        .add_edge(billing, triage)
        .build()
    )


def handoff_agent(name: str, replies: Sequence[Any]) -> Agent:
    return Agent(client=ScriptedChatClient(replies), name=name, description=f"the {name} desk",
                 require_per_service_call_history_persistence=True)


def handoff(termination_condition: Any = None, checkpoint_storage: Any = None):
    """triage looks the weather up (t1) and hands off to billing (h1); billing
    answers without handing off, so the workflow asks the user (request_info)."""
    from agent_framework_orchestrations import HandoffBuilder

    triage = handoff_agent("triage", [[("t1", "get_weather", '{"city": "Oslo"}')],
                                      [("h1", "handoff_to_billing", "{}")]])
    triage.default_options["tools"] = [get_weather]
    billing = handoff_agent("billing", ["Your refund is on its way.", "Glad to help."])
    support = handoff_agent("support", ["unused"])
    return HandoffBuilder(participants=[triage, billing, support], termination_condition=termination_condition,
                          checkpoint_storage=checkpoint_storage).with_start_agent(triage).build()


async def handoff_and_resume(stream: bool = False) -> None:
    """The handoff app, then the user's answer to billing's reply (a responses= continuation)."""
    workflow = handoff()
    result = await workflow.run("my bill")
    (request,) = [e for e in result if e.type == "request_info"]
    await workflow.run(responses={request.request_id: [Message(role="user", contents=["thanks"])]})


def _approved(conversation: list[Message]) -> bool:
    return any("APPROVED" in m.text for m in conversation)


def group_chat_selection(max_rounds: int | None = None):
    """A selection function alternates writer and critic (code chooses); the
    critic's "APPROVED" fires the termination condition."""
    from agent_framework_orchestrations import GroupChatBuilder

    def next_speaker(state: Any) -> str:
        return ["writer", "critic"][state.current_round % 2]

    return GroupChatBuilder(participants=[writer("writer", "draft 1"), writer("critic", "APPROVED")],
                            selection_func=next_speaker, termination_condition=_approved,
                            max_rounds=max_rounds).build()


def _choice(next_speaker: str | None, reason: str, final: str | None = None) -> str:
    import json

    return json.dumps({"terminate": next_speaker is None, "reason": reason, "next_speaker": next_speaker,
                       "final_message": final})


def group_chat_manager():
    """A manager agent picks the writer, then ends the chat with a final message."""
    from agent_framework_orchestrations import GroupChatBuilder

    manager = writer("manager", "unused")
    manager.client.replies = [_choice("writer", "a draft is needed"),  # type: ignore[attr-defined]
                              _choice(None, "the draft is done", "Here is the draft.")]
    return GroupChatBuilder(participants=[writer("writer", "draft 1"), writer("critic", "fine")],
                            orchestrator_agent=manager).build()


def _ledger(satisfied: bool, reason: str, next_speaker: str, instruction: str) -> str:
    import json

    def item(answer: Any, why: str = "because") -> dict[str, Any]:
        return {"reason": why, "answer": answer}

    return json.dumps({"is_request_satisfied": item(satisfied, reason), "is_in_loop": item(False),
                       "is_progress_being_made": item(True), "next_speaker": item(next_speaker),
                       "instruction_or_question": item(instruction)})


def magentic(max_round_count: int | None = None):
    """The Magentic manager plans (facts, plan), asks the coder (the tester is the
    other option), then its ledger says the task is done; ``max_round_count=1``
    stops the run after the coder's round instead."""
    from agent_framework_orchestrations import MagenticBuilder

    manager = writer("magentic_manager", "unused")
    manager.client.replies = [  # type: ignore[attr-defined]
        "facts: none", "plan: ask the coder",
        _ledger(False, "not yet", "coder", "write the code"),
        _ledger(True, "the code is written", "coder", "none"),
        "The code: print(1)",
    ]
    return MagenticBuilder(participants=[writer("coder", "print(1)"), writer("tester", "unused")], manager_agent=manager,
                           max_round_count=max_round_count).build()


async def handoff_resumed_from_checkpoint() -> None:
    """The handoff app with checkpoints; the user's answer resumes it from its
    latest checkpoint on a new Workflow object (as a new process would)."""
    from agent_framework import InMemoryCheckpointStorage

    storage = InMemoryCheckpointStorage()
    result = await handoff(checkpoint_storage=storage).run("my bill")
    (request,) = [e for e in result if e.type == "request_info"]
    latest = await storage.get_latest(workflow_name="Handoff")
    restored = handoff(checkpoint_storage=storage)
    await restored.run(checkpoint_id=latest.checkpoint_id,
                       responses={request.request_id: [Message(role="user", contents=["thanks"])]})


def handoff_until_refund():
    """The handoff app with a termination condition that holds on billing's reply (it mentions a refund)."""
    return handoff(termination_condition=lambda conversation: any("refund" in m.text for m in conversation))


def looping_agent() -> Agent:
    """Calls get_weather (l1), then wants more; max_iterations=1 makes the framework ask it for a final answer."""
    agent = weather_agent([[("l1", "get_weather", '{"city": "Oslo"}')], "out of steps: Oslo is sunny"])
    agent.client.function_invocation_configuration["max_iterations"] = 1  # type: ignore[attr-defined]
    return agent


class EchoAgent(BaseAgent):
    """An agent of its own class (no model): answers with a fixed text."""

    def __init__(self, name: str, text: str) -> None:
        super().__init__(name=name, description=f"the {name}")
        self.text = text

    def run(self, messages: Any = None, *, stream: bool = False, session: Any = None, **kwargs: Any) -> Any:
        from agent_framework import AgentResponse, AgentResponseUpdate

        if stream:
            async def updates():
                yield AgentResponseUpdate(role="assistant", contents=[Content.from_text(self.text)],
                                          author_name=self.name)

            return ResponseStream(updates(), finalizer=AgentResponse.from_updates)

        async def answer() -> AgentResponse:
            return AgentResponse(messages=[Message(role="assistant", contents=[self.text], author_name=self.name)])

        return answer()


def sequential_with_other_agents():
    """A RawAgent (no middleware or telemetry layers) and an agent of its own class, in sequence."""
    from agent_framework import RawAgent
    from agent_framework_orchestrations import SequentialBuilder

    raw = RawAgent(client=ScriptedChatClient(["raw draft"]), name="raw_writer", description="writes")
    return SequentialBuilder(participants=[raw, EchoAgent("echo", "echoed")]).build()


async def sequential_restarted_from_a_checkpoint() -> list[str]:
    """A Sequential run with checkpoints, then a new Workflow object restored from
    its second checkpoint (after the drafter's turn), as a restarted process would."""
    from agent_framework import InMemoryCheckpointStorage

    storage = InMemoryCheckpointStorage()
    await sequential(storage).run("write")
    checkpoints = sorted(await storage.list_checkpoints(workflow_name="Sequential"), key=lambda c: c.timestamp)
    await sequential(storage).run(checkpoint_id=checkpoints[1].checkpoint_id)
    return [c.checkpoint_id for c in checkpoints]
