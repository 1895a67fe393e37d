"""Helpers for offline AutoGen tests and examples: a function-calling
``ModelInfo`` and small script builders for ``ReplayChatCompletionClient``.

    from orch_otel.integrations.autogen.testing import replay, tool_call, handoff
    client = replay(tool_call("get_weather", {"city": "Paris"}, "call_1"), "It is sunny")
    agent = AssistantAgent("a", model_client=client, tools=[get_weather])

With AutoGen's default replay ``ModelInfo`` (``function_calling=False``),
agents with tools or handoffs refuse to start; :data:`MODEL_INFO` enables it.
"""

from __future__ import annotations

import json
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

__all__ = ["MODEL_INFO", "replay", "tool_call", "tool_calls", "handoff", "text", "ledger"]

MODEL_INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
)
"""Function calling on, structured output declared (off), family unknown."""


def _arguments(arguments: str | dict[str, Any] | None) -> str:
    if arguments is None:
        return "{}"
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def tool_calls(*calls: tuple[str, str | dict[str, Any] | None, str], prompt_tokens: int = 0,
               completion_tokens: int = 5) -> CreateResult:
    """One model turn that requests several calls: ``(name, arguments, call_id)`` each."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name=name, arguments=_arguments(args)) for name, args, call_id in calls],
        usage=RequestUsage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
        cached=False,
    )


def tool_call(name: str, arguments: str | dict[str, Any] | None, call_id: str, *, prompt_tokens: int = 0,
              completion_tokens: int = 5) -> CreateResult:
    """One model turn that requests one tool call."""
    return tool_calls((name, arguments, call_id), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def handoff(target: str, call_id: str, **usage: int) -> CreateResult:
    """One model turn that hands off to ``target`` (AutoGen's ``transfer_to_<target>`` tool)."""
    return tool_call(f"transfer_to_{target}".lower(), None, call_id, **usage)


def text(content: str, *, prompt_tokens: int = 0, completion_tokens: int = 1) -> CreateResult:
    """A text answer with exact token usage (a plain ``str`` gets word counts)."""
    return CreateResult(finish_reason="stop", content=content, cached=False,
                        usage=RequestUsage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens))


def ledger(done: bool, next_speaker: str, instruction: str, reason: str = "r") -> str:
    """A MagenticOne progress-ledger answer (``reason`` becomes the stop reason when ``done``)."""

    def answer(value: Any) -> dict[str, Any]:
        return {"reason": reason, "answer": value}

    return json.dumps({
        "is_request_satisfied": answer(done),
        "is_in_loop": answer(False),
        "is_progress_being_made": answer(True),
        "next_speaker": answer(next_speaker),
        "instruction_or_question": answer(instruction),
    })


def replay(*outputs: str | CreateResult, model_info: ModelInfo | None = None) -> ReplayChatCompletionClient:
    """A ``ReplayChatCompletionClient`` answering ``outputs`` in order, with function calling on."""
    return ReplayChatCompletionClient(list(outputs), model_info=model_info or MODEL_INFO)


def get_weather(city: str) -> str:
    """Weather of a city (a sync tool: AutoGen runs it in a worker thread)."""
    return f"sunny in {city}"


def weather_round_robin() -> Any:
    """A small offline team for smoke tests and benchmarks: ``a`` calls
    ``get_weather(Paris)`` as ``call_1`` (3+5 tokens) and reflects "It is sunny"
    (2+3); ``b`` says "Thanks TERMINATE", so the run stops with
    "Text 'TERMINATE' mentioned"."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    a = AssistantAgent(
        "a", description="weather agent", tools=[get_weather], reflect_on_tool_use=True,
        model_client=replay(tool_call("get_weather", {"city": "Paris"}, "call_1", prompt_tokens=3),
                            text("It is sunny", prompt_tokens=2, completion_tokens=3)),
    )
    b = AssistantAgent("b", model_client=replay(text("Thanks TERMINATE")))
    return RoundRobinGroupChat(
        [a, b], termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(10),
        name="weather_team",
    )
