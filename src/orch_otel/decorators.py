"""Decorators and helpers for hand-written agent code, on top of the recorder.

``@agent``, ``@tool`` and ``@workflow`` wrap sync and async functions, generators
and async generators; each also works as a context manager
(``with orch_otel.agent("planner"):``). Parenting follows the OpenTelemetry
context, so threads and asyncio tasks that carry the context nest correctly.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from opentelemetry import context as otel_context

from .recorder import Invocation, current_agent, get_recorder
from .vocabulary import StopReason

F = TypeVar("F", bound=Callable[..., Any])


class _Traced:
    """A decorator that is also a context manager; ``factory`` makes one Invocation per call."""

    def __init__(self, factory: Callable[[Callable[..., Any] | None, tuple, dict], Invocation], name: str | None):
        self._factory = factory
        self._name = name
        # one stack per thread / asyncio task, so a shared object can be entered concurrently
        self._active: contextvars.ContextVar[tuple[Invocation, ...]] = contextvars.ContextVar("orch_otel_active", default=())

    # -- as a context manager --
    def __enter__(self) -> Invocation:
        invocation = self._factory(None, (), {}).start()
        self._active.set(self._active.get() + (invocation,))
        return invocation

    def __exit__(self, exc_type, exc, tb) -> None:
        *rest, invocation = self._active.get()
        self._active.set(tuple(rest))
        invocation.__exit__(exc_type, exc, tb)

    # -- as a decorator --
    def __call__(self, fn: F) -> F:
        factory = self._factory
        if inspect.isasyncgenfunction(fn):
            return functools.wraps(fn)(_async_generator_wrapper(fn, factory))  # type: ignore[return-value]
        if inspect.isgeneratorfunction(fn):
            return functools.wraps(fn)(_generator_wrapper(fn, factory))  # type: ignore[return-value]
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with factory(fn, args, kwargs) as invocation:
                    result = await fn(*args, **kwargs)
                    _set_result(invocation, result)
                    return result

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with factory(fn, args, kwargs) as invocation:
                result = fn(*args, **kwargs)
                _set_result(invocation, result)
                return result

        return wrapper  # type: ignore[return-value]


def _set_result(invocation: Invocation, result: Any) -> None:
    set_result = getattr(invocation, "set_result", None)
    if set_result is not None:
        set_result(result)


def _generator_wrapper(fn: Callable[..., Any], factory: Callable[..., Invocation]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        invocation = factory(fn, args, kwargs).start(attach=False)
        gen = fn(*args, **kwargs)
        step: Callable[[], Any] = lambda: gen.send(None)  # noqa: E731
        try:
            while True:
                token = otel_context.attach(invocation.context)  # each step runs inside the span
                try:
                    item = step()
                finally:
                    otel_context.detach(token)
                try:
                    sent = yield item
                except GeneratorExit:
                    raise
                except BaseException as thrown:  # gen.throw() from the consumer reaches the wrapped generator
                    step = functools.partial(gen.throw, thrown)
                else:
                    step = functools.partial(gen.send, sent)
        except StopIteration as stop:
            invocation.end()
            return stop.value
        except BaseException as exc:
            invocation.fail(exc)
            raise
        finally:
            gen.close()
            invocation.end()

    return wrapper


def _async_generator_wrapper(fn: Callable[..., Any], factory: Callable[..., Invocation]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        invocation = factory(fn, args, kwargs).start(attach=False)
        agen = fn(*args, **kwargs)
        step: Callable[[], Any] = lambda: agen.asend(None)  # noqa: E731
        try:
            while True:
                token = otel_context.attach(invocation.context)
                try:
                    item = await step()
                finally:
                    otel_context.detach(token)
                try:
                    sent = yield item
                except GeneratorExit:
                    raise
                except BaseException as thrown:
                    step = functools.partial(agen.athrow, thrown)
                else:
                    step = functools.partial(agen.asend, sent)
        except StopAsyncIteration:
            invocation.end()
        except BaseException as exc:
            invocation.fail(exc)
            raise
        finally:
            await agen.aclose()
            invocation.end()

    return wrapper


def _split(name_or_fn: Any) -> tuple[Callable[..., Any] | None, str | None]:
    if callable(name_or_fn) and not isinstance(name_or_fn, str):
        return name_or_fn, None
    return None, name_or_fn


def agent(
    name_or_fn: str | Callable[..., Any] | None = None,
    *,
    role: str | None = None,
    agent_id: str | None = None,
    description: str | None = None,
    spawned: bool | None = None,
    task_id: str | None = None,
    system: str | None = None,
    topology: str | None = None,
) -> Any:
    """Trace an agent: ``@agent``, ``@agent("planner", role="planner")`` or
    ``with agent("planner"):``.

    ``spawned`` defaults to True when the agent starts inside another agent:
    calling a sub-agent from an agent spawns it.
    """
    fn, name = _split(name_or_fn)

    def factory(target: Callable[..., Any] | None, args: tuple, kwargs: dict) -> Invocation:
        agent_name = name or (target.__name__ if target else "agent")
        return get_recorder().agent(
            agent_name,
            agent_id=agent_id,
            role=role,
            description=description,
            spawned=(current_agent() is not None) if spawned is None else spawned,
            task_id=task_id,
            system=system or "custom",
            topology=topology,
        )

    traced = _Traced(factory, name)
    return traced(fn) if fn is not None else traced


def workflow(
    name_or_fn: str | Callable[..., Any] | None = None,
    *,
    task_id: str | None = None,
    system: str | None = None,
    topology: str | None = None,
) -> Any:
    """Trace a whole run: ``@workflow`` or ``with workflow("research", task_id=...):``."""
    fn, name = _split(name_or_fn)

    def factory(target: Callable[..., Any] | None, args: tuple, kwargs: dict) -> Invocation:
        return get_recorder().workflow(
            name or (target.__name__ if target else "workflow"),
            task_id=task_id,
            system=system or "custom",
            topology=topology,
        )

    traced = _Traced(factory, name)
    return traced(fn) if fn is not None else traced


def tool(name_or_fn: str | Callable[..., Any] | None = None, *, tool_type: str = "function") -> Any:
    """Trace a tool: ``@tool`` or ``@tool("search")``. Arguments and result are
    content: only their refs are kept unless capture is on."""
    fn, name = _split(name_or_fn)

    def factory(target: Callable[..., Any] | None, args: tuple, kwargs: dict) -> Invocation:
        arguments = {"args": list(args), "kwargs": kwargs} if (args or kwargs) else None
        return get_recorder().tool(
            name or (target.__name__ if target else "tool"),
            call_id="call_" + os.urandom(6).hex(),
            arguments=arguments,
            tool_type=tool_type,
        )

    traced = _Traced(factory, name)
    return traced(fn) if fn is not None else traced


def llm_call(model: str, *, provider: str | None = None, input_messages: Any = None,
             tools: Any = None) -> Invocation:
    """Trace your own LLM call: ``with llm_call("gpt-4o", input_messages=msgs, tools=schemas) as call:
    ...; call.set_response(text, input_tokens=..., output_tokens=...)``. ``tools``: the
    tool definitions offered to the model (content: recorded like the prompt)."""
    return get_recorder().llm(model, provider=provider, input_messages=input_messages, tool_definitions=tools)


def spawn(*targets: str, options: Iterable[str] | None = None, content: Any = None) -> None:
    """Record the decision to spawn ``targets`` (one decision for a whole fan-out)."""
    names: Sequence[str] = targets[0] if len(targets) == 1 and not isinstance(targets[0], str) else targets
    get_recorder().spawn(list(names), options=options, content=content)


def delegate(target: str | Sequence[str], *, options: Iterable[str] | None = None, content: Any = None) -> None:
    """Record the decision to hand work to ``target``, chosen among ``options``."""
    get_recorder().delegate(target, options=options, content=content)


def message(content: Any = None, *, to: str | Iterable[str], sender: str | None = None,
            message_type: str | None = None) -> None:
    """Record a message from the current agent (or ``sender``) to ``to``."""
    get_recorder().message(content, recipients=to, sender=sender, message_type=message_type)


def aggregate(content: Any = None, *, sources: Iterable[str] | None = None) -> None:
    """Record the aggregation of sub-agents' results."""
    get_recorder().aggregate(content, sources=sources)


def stop(reason: str = StopReason.END, *, content: Any = None, forced: bool = False) -> None:
    """Record the decision to stop the run, with its reason; ``forced`` when a
    limit (turns, tokens, time, recursion), not a choice, ended it."""
    get_recorder().stop(reason, content=content, forced=forced)


def human_intervention(content: Any = None) -> None:
    """Record a human's input into the run."""
    get_recorder().human_intervention(content)


def reward(value: float, *, name: str = "reward", unit: str | None = None, target: str | None = None) -> None:
    """Record a reward: for the team (``unit`` None or ``"team"``), for one agent
    (``unit="agent"`` or ``"orchestrator"``, ``target`` = its name) or for a role
    (``unit="role"``, ``target`` = the role). See :meth:`Recorder.reward`."""
    get_recorder().reward(value, name=name, unit=unit, target=target)
