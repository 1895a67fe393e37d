"""Offline test helpers for LangGraph apps: a scripted, tool-calling fake chat model.

    from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call

    model = FakeToolCallingModel(model_name="planner-llm", responses=[
        ai(tool_calls=[tool_call("search", {"q": "otel"}, "call_1")]),
        ai("done"),
    ])
    agent = create_agent(model, [search], name="researcher")

The model replays ``responses`` in order (cycling), accepts ``bind_tools``
(so prebuilt agents, langgraph-supervisor and langgraph-swarm can use it), and
reports token usage and its model name like a real provider. With
``by_turn=True`` it picks the response from the number of its own earlier
replies in the prompt (AI messages carrying its ``model_name``) instead of a
shared counter, so one model instance gives every run, concurrent or not, the
same script; give each agent's model its own ``model_name`` then.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

__all__ = ["FakeToolCallingModel", "ai", "tool_call"]

_ids = itertools.count(1)


def tool_call(name: str, args: dict[str, Any] | None = None, call_id: str | None = None) -> dict[str, Any]:
    """A tool call as a model returns it (``call_id`` defaults to a fresh id)."""
    return {"name": name, "args": dict(args or {}), "id": call_id or f"call_{next(_ids)}", "type": "tool_call"}


def ai(content: str = "", tool_calls: Sequence[dict[str, Any]] = ()) -> AIMessage:
    """An assistant message, optionally with tool calls."""
    return AIMessage(content=content, tool_calls=list(tool_calls))


class FakeToolCallingModel(FakeMessagesListChatModel):
    """A deterministic chat model that can call tools; no network, no keys."""

    model_name: str = "fake-tool-model"
    """Reported as the request and response model."""
    by_turn: bool = False
    """Pick the response by the number of this model's own replies in the prompt (safe under concurrency)."""
    input_tokens: int | None = None
    """Fixed prompt token count; default: the number of words in the prompt."""
    output_tokens: int | None = None
    """Fixed completion token count; default: words in the reply plus 8 per tool call."""
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "fake-tool-calling-chat-model"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "fake"
        params["ls_model_name"] = self.model_name
        return params

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Runnable[Any, Any]:
        """Binds the tools' OpenAI-format schemas, as real chat models do (they
        reach callbacks in ``invocation_params["tools"]``); the scripted
        responses already name the tools, so the replies do not change."""
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _pick(self, messages: list[BaseMessage]) -> BaseMessage:
        if self.by_turn:
            turn = sum(
                1 for m in messages
                if isinstance(m, AIMessage) and m.response_metadata.get("model_name") == self.model_name
            )
            return self.responses[min(turn, len(self.responses) - 1)]
        with self._lock:
            response = self.responses[self.i]
            self.i = self.i + 1 if self.i < len(self.responses) - 1 else 0
        return response

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        response = self._pick(messages)
        text = response.content if isinstance(response.content, str) else str(response.content)
        calls = getattr(response, "tool_calls", None) or []
        tokens_in = self.input_tokens
        if tokens_in is None:
            tokens_in = sum(len(str(m.content).split()) for m in messages) or 1
        tokens_out = self.output_tokens
        if tokens_out is None:
            tokens_out = len(text.split()) + 8 * len(calls)
        message = response.model_copy(update={
            "usage_metadata": {"input_tokens": tokens_in, "output_tokens": tokens_out,
                               "total_tokens": tokens_in + tokens_out},
            "response_metadata": {"model_name": self.model_name},
        })
        return ChatResult(generations=[ChatGeneration(message=message)])
