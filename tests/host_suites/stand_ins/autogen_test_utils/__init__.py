"""A stand-in for ``autogen_test_utils``, the helper package autogen-core's
tests import. It lives in the AutoGen repository's workspace and is not
published on PyPI, so the harness provides the agents and messages that
autogen-core's ``tests/test_runtime.py`` uses, with the behaviour those tests
expect: a loopback agent counts the messages it receives and answers each with
the message itself; a cascading agent republishes until the last round.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from autogen_core import BaseAgent, DefaultTopicId, MessageContext, RoutedAgent, default_subscription, message_handler


@dataclass
class MessageType:
    """An empty message."""


@dataclass
class ContentMessage:
    content: str


@dataclass
class CascadingMessageType:
    round: int


class LoopbackAgent(RoutedAgent):
    """Answers every message with itself and counts the calls."""

    def __init__(self) -> None:
        super().__init__("Answers each message with the message itself.")
        self.num_calls = 0
        self.received_messages: list[Any] = []
        self.event = asyncio.Event()

    @message_handler
    async def on_new_message(self, message: MessageType | ContentMessage, ctx: MessageContext) -> MessageType | ContentMessage:
        self.num_calls += 1
        self.received_messages.append(message)
        self.event.set()
        return message


@default_subscription
class LoopbackAgentWithDefaultSubscription(LoopbackAgent):
    """A loopback agent subscribed to the default topic."""


@default_subscription
class CascadingAgent(RoutedAgent):
    """Publishes the next round of every message it gets, up to ``max_rounds``."""

    def __init__(self, max_rounds: int) -> None:
        super().__init__("Republishes each round until the last.")
        self.num_calls = 0
        self.max_rounds = max_rounds

    @message_handler
    async def on_new_message(self, message: CascadingMessageType, ctx: MessageContext) -> None:
        self.num_calls += 1
        if message.round < self.max_rounds:
            await self.publish_message(CascadingMessageType(round=message.round + 1), topic_id=DefaultTopicId())


class NoopAgent(BaseAgent):
    """Registered but never asked anything."""

    def __init__(self) -> None:
        super().__init__("Handles nothing.")

    async def on_message_impl(self, message: Any, ctx: MessageContext) -> Any:
        raise NotImplementedError
