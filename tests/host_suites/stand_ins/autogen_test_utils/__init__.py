"""A stand-in for ``autogen_test_utils``, the helper package autogen-core's
tests import. It lives in the AutoGen repository's workspace and is not
published on PyPI, so the harness provides the agents, messages and components
that autogen-core's tests use, with the behaviour those tests expect: a
loopback agent counts the messages it receives and answers each with the
message itself; a cascading agent republishes until the last round; a
component that holds another dumps and loads with it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from autogen_core import (
    BaseAgent,
    Component,
    ComponentBase,
    ComponentModel,
    DefaultTopicId,
    MessageContext,
    RoutedAgent,
    default_subscription,
    message_handler,
)
from pydantic import BaseModel


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


class MyInnerConfig(BaseModel):
    inner_message: str


class MyInnerComponent(ComponentBase[MyInnerConfig], Component[MyInnerConfig]):
    """A component with one string setting."""

    component_config_schema = MyInnerConfig
    component_type = "custom"

    def __init__(self, inner_message: str) -> None:
        self.inner_message = inner_message

    def _to_config(self) -> MyInnerConfig:
        return MyInnerConfig(inner_message=self.inner_message)

    @classmethod
    def _from_config(cls, config: MyInnerConfig) -> MyInnerComponent:
        return cls(config.inner_message)


class MyOuterConfig(BaseModel):
    outer_message: str
    inner_class: ComponentModel


class MyOuterComponent(ComponentBase[MyOuterConfig], Component[MyOuterConfig]):
    """A component whose config embeds another component's."""

    component_config_schema = MyOuterConfig
    component_type = "custom"

    def __init__(self, outer_message: str, inner_class: MyInnerComponent) -> None:
        self.outer_message = outer_message
        self.inner_class = inner_class

    def _to_config(self) -> MyOuterConfig:
        return MyOuterConfig(outer_message=self.outer_message, inner_class=self.inner_class.dump_component())

    @classmethod
    def _from_config(cls, config: MyOuterConfig) -> MyOuterComponent:
        return cls(config.outer_message, MyInnerComponent.load_component(config.inner_class))
