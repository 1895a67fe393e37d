"""AutoGen teams for tests and benchmarks, all offline (ReplayChatCompletionClient
with a function-calling ModelInfo). Every builder returns a fresh team: replay
clients are consumed as they answer. Each builder's docstring says what the
team does, so tests can assert exactly that."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from autogen_agentchat.agents import AssistantAgent, SocietyOfMindAgent, UserProxyAgent
from autogen_agentchat.conditions import (
    HandoffTermination,
    MaxMessageTermination,
    TextMentionTermination,
    TimeoutTermination,
    TokenUsageTermination,
)
from autogen_agentchat.messages import HandoffMessage
from autogen_agentchat.teams import (
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from autogen_core.tools import (
    FunctionTool,
    StaticWorkbench,
    TextResultContent,
    ToolOverride,
    ToolResult,
    ToolSchema,
    Workbench,
)
from autogen_ext.models.replay import ReplayChatCompletionClient

from orch_otel.integrations.autogen.testing import (  # noqa: F401 (re-exported for the tests)
    MODEL_INFO,
    get_weather,
    handoff,
    ledger,
    replay,
    text,
    tool_call,
    tool_calls,
    weather_round_robin,
)


async def lookup(q: str) -> str:
    """Look something up (an async tool)."""
    return f"found {q}"


def boom(x: int) -> int:
    """A tool that always fails."""
    raise ValueError("tool exploded")


def two_agent_round_robin(max_messages: int = 3, runtime: Any = None) -> RoundRobinGroupChat:
    """a and b alternate plain text; the task counts as a message, so with the
    default 3 the run is: a, b, then "Maximum number of messages 3 reached, current message count: 3".
    ``runtime``: an AutoGen runtime the app started (default: the team's own)."""
    a = AssistantAgent("a", model_client=replay(*[f"a says {i}" for i in range(max_messages)]))
    b = AssistantAgent("b", model_client=replay(*[f"b says {i}" for i in range(max_messages)]))
    return RoundRobinGroupChat([a, b], termination_condition=MaxMessageTermination(max_messages), runtime=runtime)


def failing_tool_team() -> RoundRobinGroupChat:
    """a calls boom(x=1) as call_9, which raises; the agent summarizes the error and
    the run stops normally after 1 turn ("Maximum number of turns 1 reached.")."""
    a = AssistantAgent("a", tools=[boom], model_client=replay(tool_call("boom", {"x": 1}, "call_9")))
    return RoundRobinGroupChat([a], max_turns=1)


def selector_team() -> SelectorGroupChat:
    """The selector model picks planner, then coder (planner is no longer a candidate);
    coder says TERMINATE -> "Text 'TERMINATE' mentioned"."""
    planner = AssistantAgent("planner", description="plans", model_client=replay("Plan: write code"))
    coder = AssistantAgent("coder", description="codes", model_client=replay("print(1) TERMINATE"))
    reviewer = AssistantAgent("reviewer", description="reviews", model_client=replay("LGTM"))
    return SelectorGroupChat(
        [planner, coder, reviewer], model_client=replay(text("planner"), text("coder")),
        termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(6),
    )


def swarm_team() -> Swarm:
    """alice calls lookup(q=x) as t1 and transfer_to_bob as h1 in one turn, so her
    HandoffMessage to bob carries 2 context messages; bob hands off to user (h2)
    -> "Handoff to user from bob detected."."""
    alice = AssistantAgent(
        "alice", tools=[lookup], handoffs=["bob"],
        model_client=replay(tool_calls(("lookup", {"q": "x"}, "t1"), ("transfer_to_bob", None, "h1"))),
    )
    bob = AssistantAgent("bob", handoffs=["user"], model_client=replay(handoff("user", "h2")))
    return Swarm([alice, bob], termination_condition=HandoffTermination(target="user") | MaxMessageTermination(10))


def graph_flow() -> GraphFlow:
    """A fans out to B and C (in parallel), which fan in to D -> "Digraph execution is complete"."""
    nodes = {n: AssistantAgent(n, model_client=replay(f"{n} out")) for n in "ABCD"}
    builder = DiGraphBuilder()
    for node in nodes.values():
        builder.add_node(node)
    builder.add_edge(nodes["A"], nodes["B"]).add_edge(nodes["A"], nodes["C"])
    builder.add_edge(nodes["B"], nodes["D"]).add_edge(nodes["C"], nodes["D"])
    return GraphFlow(participants=builder.get_participants(), graph=builder.build())


def society_of_mind_team() -> RoundRobinGroupChat:
    """outer_team: som runs inner_team (w1, w2; "Maximum number of turns 2 reached.") and
    summarizes it ("SUMMARY of inner"); then critic speaks -> "Maximum number of turns 2 reached."."""
    w1 = AssistantAgent("w1", model_client=replay("w1 draft"))
    w2 = AssistantAgent("w2", model_client=replay("w2 edit"))
    inner = RoundRobinGroupChat([w1, w2], max_turns=2, name="inner_team")
    som = SocietyOfMindAgent("som", team=inner, model_client=replay("SUMMARY of inner"))
    critic = AssistantAgent("critic", model_client=replay("looks good"))
    return RoundRobinGroupChat([som, critic], max_turns=2, name="outer_team")


def team_as_participant() -> RoundRobinGroupChat:
    """outer: sub_team (x, y; "Maximum number of turns 2 reached.") as a participant, then z;
    outer stops at "Maximum number of turns 2 reached."."""
    x = AssistantAgent("x", model_client=replay("x1"))
    y = AssistantAgent("y", model_client=replay("y1"))
    sub = RoundRobinGroupChat([x, y], max_turns=2, name="sub_team", description="a sub team")
    z = AssistantAgent("z", model_client=replay("z1"))
    return RoundRobinGroupChat([sub, z], max_turns=2, name="outer")


def magentic_one() -> MagenticOneGroupChat:
    """The orchestrator gathers facts, plans, asks coder to "write code", coder answers,
    the ledger says the request is satisfied (reason "task done") and the final answer
    is given -> stop "task done"."""
    coder = AssistantAgent("coder", description="writes code", model_client=replay("def f(): return 1"))
    orchestrator = replay("FACTS...", "PLAN...", ledger(False, "coder", "write code", reason="go on"),
                          ledger(True, "coder", "n/a", reason="task done"), "FINAL ANSWER: 1")
    return MagenticOneGroupChat([coder], model_client=orchestrator)


class SlowReplay(ReplayChatCompletionClient):
    """A replay client whose every call takes ``delay`` seconds."""

    def __init__(self, outputs: list, delay: float) -> None:
        super().__init__(outputs, model_info=MODEL_INFO)
        self.delay = delay

    async def create(self, messages, **kwargs):  # type: ignore[override]
        await asyncio.sleep(self.delay)
        return await super().create(messages, **kwargs)


def slow_round_robin(delay: float = 0.5) -> RoundRobinGroupChat:
    """a and b answer after ``delay`` each; up to 3 turns (cancel it midway)."""
    a = AssistantAgent("a", model_client=SlowReplay(["a1", "a2"], delay))
    b = AssistantAgent("b", model_client=SlowReplay(["b1", "b2"], delay))
    return RoundRobinGroupChat([a, b], max_turns=3)


def tool_round_robin_max_messages() -> RoundRobinGroupChat:
    """a calls get_weather(city=Rome) as w1 (its turn ends with the tool's summary), b says
    "noted"; the task and the two answers are 3 messages ->
    "Maximum number of messages 3 reached, current message count: 3" (a limit: forced)."""
    a = AssistantAgent("a", tools=[get_weather], model_client=replay(tool_call("get_weather", {"city": "Rome"}, "w1")))
    b = AssistantAgent("b", model_client=replay("noted"))
    return RoundRobinGroupChat([a, b], termination_condition=MaxMessageTermination(3), name="tool_team")


def token_budget_round_robin() -> RoundRobinGroupChat:
    """a answers with 4+3 tokens, b with 2+2: the budget of 10 tokens is passed after b
    (7, then 11) -> "Token usage limit reached, total token count: 11, prompt token count: 6,
    completion token count: 5." (forced)."""
    a = AssistantAgent("a", model_client=replay(text("a1", prompt_tokens=4, completion_tokens=3)))
    b = AssistantAgent("b", model_client=replay(text("b1", prompt_tokens=2, completion_tokens=2)))
    return RoundRobinGroupChat([a, b], termination_condition=TokenUsageTermination(max_total_token=10),
                               name="budget_team")


async def slow_lookup(q: str) -> str:
    """A lookup that takes 0.2 s (longer than the timeout of ``timed_round_robin``)."""
    await asyncio.sleep(0.2)
    return f"found {q}"


def timed_round_robin() -> RoundRobinGroupChat:
    """Run with no task (so the condition is first checked after a's turn): a calls
    slow_lookup(q=x) as s1, which takes 0.2 s, past the 0.05 s timeout ->
    "Timeout of 0.05 seconds reached" (forced); b never speaks."""
    a = AssistantAgent("a", tools=[slow_lookup], model_client=replay(tool_call("slow_lookup", {"q": "x"}, "s1")))
    b = AssistantAgent("b", model_client=replay("b1"))
    return RoundRobinGroupChat([a, b], termination_condition=TimeoutTermination(0.05), name="timed_team")


def approval_round_robin() -> RoundRobinGroupChat:
    """writer says "draft v1, APPROVE?" (not counted: only critic's mentions count), critic
    says "APPROVE" -> "Text 'APPROVE' mentioned", the voluntary side of
    ``TextMention | MaxMessage(6)``, fired by critic."""
    writer = AssistantAgent("writer", model_client=replay("draft v1, APPROVE?"))
    critic = AssistantAgent("critic", model_client=replay("APPROVE"))
    return RoundRobinGroupChat(
        [writer, critic],
        termination_condition=TextMentionTermination("APPROVE", sources=["critic"]) | MaxMessageTermination(6),
        name="review_team",
    )


def nested_text_mention() -> RoundRobinGroupChat:
    """outer: sub_team (x "x draft", y "y DONE"; "Maximum number of turns 2 reached.") as a
    participant; outer's ``TextMention("DONE") | MaxMessage(10)`` fires on y's message in
    sub_team's result -> outer stops with "Text 'DONE' mentioned" (y's choice); z never speaks."""
    x = AssistantAgent("x", model_client=replay("x draft"))
    y = AssistantAgent("y", model_client=replay("y DONE"))
    sub = RoundRobinGroupChat([x, y], max_turns=2, name="sub_team")
    z = AssistantAgent("z", model_client=replay("z1"))
    return RoundRobinGroupChat(
        [sub, z], termination_condition=TextMentionTermination("DONE") | MaxMessageTermination(10), name="outer",
    )


def selector_with_candidates() -> SelectorGroupChat:
    """``selector_func`` picks planner for the task (its own choice, among all four);
    after that it returns None and ``candidate_func`` leaves only coder, twice: each
    time the one candidate is the pick (the second time coder was also the previous
    speaker). The task and three answers -> "Maximum number of messages 4 reached,
    current message count: 4" (forced)."""
    names = ("planner", "coder", "reviewer", "tester")
    agents = [AssistantAgent(n, description=n, model_client=replay(f"{n} 1", f"{n} 2")) for n in names]

    def selector_func(thread: Any) -> str | None:
        return "planner" if thread[-1].source == "user" else None

    def candidate_func(thread: Any) -> list[str]:
        return ["coder"]

    return SelectorGroupChat(
        agents, model_client=replay(), selector_func=selector_func, candidate_func=candidate_func,
        termination_condition=MaxMessageTermination(4), allow_repeated_speaker=True,
    )


def graph_loop() -> GraphFlow:
    """A -> B ("initial" group), B -> C, C -> B when C says "loop" ("feedback" group),
    C -> E when C says "exit": A, B, C ("loop please"), B again (activated by C alone),
    C ("exit now"), E -> "Digraph execution is complete". No node waits for two parents."""
    replies = {"A": ["a out"], "B": ["b draft", "b final"], "C": ["loop please", "exit now"], "E": ["e done"]}
    nodes = {n: AssistantAgent(n, model_client=replay(*out)) for n, out in replies.items()}
    builder = DiGraphBuilder()
    for node in nodes.values():
        builder.add_node(node)
    builder.add_edge(nodes["A"], nodes["B"], activation_group="initial")
    builder.add_edge(nodes["B"], nodes["C"])
    builder.add_edge(nodes["C"], nodes["B"], condition=lambda m: "loop" in m.to_model_text(), activation_group="feedback")
    builder.add_edge(nodes["C"], nodes["E"], condition=lambda m: "exit" in m.to_model_text())
    return GraphFlow(participants=builder.get_participants(), graph=builder.build(),
                     termination_condition=MaxMessageTermination(20))  # AutoGen asks a cycle for a limit


def graph_fan_in_loop() -> GraphFlow:
    """planner (the entry point) fans out to x and y, which fan in to join; join says
    "again" the first time (back to planner) and "finish" the second (to done): the
    fan-in runs twice, each time joining that round's x and y."""
    replies = {"planner": ["p1", "p2"], "x": ["x1", "x2"], "y": ["y1", "y2"], "join": ["again", "finish"],
               "done": ["bye"]}
    nodes = {n: AssistantAgent(n, model_client=replay(*out)) for n, out in replies.items()}
    builder = DiGraphBuilder()
    for node in nodes.values():
        builder.add_node(node)
    builder.add_edge(nodes["planner"], nodes["x"]).add_edge(nodes["planner"], nodes["y"])
    builder.add_edge(nodes["x"], nodes["join"]).add_edge(nodes["y"], nodes["join"])
    builder.add_edge(nodes["join"], nodes["planner"], condition=lambda m: "again" in m.to_model_text())
    builder.add_edge(nodes["join"], nodes["done"], condition=lambda m: "finish" in m.to_model_text())
    builder.set_entry_point(nodes["planner"])
    return GraphFlow(participants=builder.get_participants(), graph=builder.build(),
                     termination_condition=MaxMessageTermination(20))


def human(*answers: str) -> Any:
    """An ``input_func`` for a ``UserProxyAgent``: a person who types ``answers`` in order."""
    typed = iter(answers)
    return lambda prompt: next(typed)


def human_review_round_robin() -> RoundRobinGroupChat:
    """writer drafts ("draft v1"), the human (user_proxy's input_func) asks "shorter
    please", writer redrafts ("draft v2"), the human types "APPROVE" ->
    "Text 'APPROVE' mentioned": the human ended the run, not an agent."""
    writer = AssistantAgent("writer", model_client=replay("draft v1", "draft v2"))
    user_proxy = UserProxyAgent("user_proxy", input_func=human("shorter please", "APPROVE"))
    return RoundRobinGroupChat(
        [writer, user_proxy], termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(10),
        name="review_with_human",
    )


def swarm_asking_user() -> Swarm:
    """alice hands off to user (u1) -> "Handoff to user from alice detected."; the app
    asks the person and runs the same team again with their ``HandoffMessage`` (see
    :func:`resume_swarm`): alice answers "order 42 refunded TERMINATE" ->
    "Text 'TERMINATE' mentioned" (alice's stop)."""
    alice = AssistantAgent("alice", handoffs=["user"],
                           model_client=replay(handoff("user", "u1"), "order 42 refunded TERMINATE"))
    return Swarm([alice], termination_condition=HandoffTermination(target="user") | TextMentionTermination("TERMINATE"),
                 name="support_swarm")


async def resume_swarm(team: Swarm, answer: str = "my order is 42") -> Any:
    """The app's second run of a swarm stopped by a handoff to user: the person's answer,
    handed back to the agent that asked."""
    last = team._participant_names[0]
    return await team.run(task=HandoffMessage(source="user", target=last, content=answer))


class NotesWorkbench(Workbench):
    """An app's own workbench (no ``BaseTool`` behind it): ``add_note(text)`` keeps a
    note, ``count_notes()`` says how many; an unknown tool is an error result."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    async def list_tools(self) -> list[ToolSchema]:
        return [ToolSchema(name="add_note", description="Keep a note.",
                           parameters={"type": "object", "properties": {"text": {"type": "string"}},
                                       "required": ["text"]}),
                ToolSchema(name="count_notes", description="How many notes there are.",
                           parameters={"type": "object", "properties": {}})]

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None,
                        cancellation_token: Any = None, call_id: str | None = None) -> ToolResult:
        if name == "add_note":
            self.notes.append(str((arguments or {}).get("text")))
            out, error = "noted", False
        elif name == "count_notes":
            out, error = str(len(self.notes)), False
        else:
            out, error = f"no tool {name}", True
        return ToolResult(name=name, result=[TextResultContent(content=out)], is_error=error)

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def reset(self) -> None:
        self.notes.clear()

    async def save_state(self) -> Mapping[str, Any]:
        return {"notes": list(self.notes)}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        self.notes = list(state.get("notes", []))


def workbench_team() -> RoundRobinGroupChat:
    """keeper's tools come from two workbenches: ``NotesWorkbench`` (the app's own) and a
    ``StaticWorkbench`` that offers get_weather under the name "weather" (a tool override).
    One model turn calls add_note(text=milk) as n1, count_notes as n2 and weather(city=Oslo)
    as n3; the turn ends with the tools' summary; max_turns=1 -> "Maximum number of turns 1 reached."."""
    weather = StaticWorkbench([FunctionTool(get_weather, description="Weather of a city.")],
                              tool_overrides={"get_weather": ToolOverride(name="weather")})
    keeper = AssistantAgent(
        "keeper", workbench=[NotesWorkbench(), weather],
        model_client=replay(tool_calls(("add_note", {"text": "milk"}, "n1"), ("count_notes", None, "n2"),
                                       ("weather", {"city": "Oslo"}, "n3"))),
    )
    return RoundRobinGroupChat([keeper], max_turns=1, name="workbench_team")


def openai_weather_team(base_url: str, *, stream: bool = False, include_usage: bool = False) -> RoundRobinGroupChat:
    """a uses autogen-ext's real ``OpenAIChatCompletionClient`` (model "gpt-4o") against the
    OpenAI-compatible server at ``base_url`` (tests/openai_server.py, which answers as
    "gpt-4o-2024-08-06"): with the server's script [get_weather(city=Paris) as call_1,
    "It is sunny"], a calls the tool and reflects; max_turns=1. ``stream``: the agent
    streams its model calls; ``include_usage``: the client asks the stream for usage."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if include_usage else {}
    client = OpenAIChatCompletionClient(model="gpt-4o", base_url=base_url, api_key="test-key", **extra)
    a = AssistantAgent("a", tools=[get_weather], reflect_on_tool_use=True, model_client=client,
                       model_client_stream=stream)
    return RoundRobinGroupChat([a], max_turns=1, name="openai_team")
