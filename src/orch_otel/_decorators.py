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

from ._faults import guarded
from ._invocation import Invocation, LLMInvocation, current_agent
from ._renamed import renamed_keyword
from .recorder import NOT_RECORDING, get_recorder
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
        invocation = _begin(self._factory, None, (), {}) or NOT_RECORDING.agent("not recorded")
        self._active.set(self._active.get() + (invocation,))
        return invocation

    def __exit__(self, exc_type, exc, tb) -> None:
        *rest, invocation = self._active.get()
        self._active.set(tuple(rest))
        _finish(invocation, exc)

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
                invocation = _begin(factory, fn, args, kwargs)
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    _finish(invocation, exc)
                    raise
                _finish(invocation, None, result)
                return result

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            invocation = _begin(factory, fn, args, kwargs)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                _finish(invocation, exc)
                raise
            _finish(invocation, None, result)
            return result

        return wrapper  # type: ignore[return-value]


# The app's code runs whatever happens in these: a fault in orch-otel is logged
# once and leaves that call unrecorded (see faults.guarded).
@guarded
def _begin(factory: Callable[..., Invocation], fn: Callable[..., Any] | None, args: tuple, kwargs: dict,
           attach: bool = True) -> Invocation:
    return factory(fn, args, kwargs).start(attach=attach)


@guarded
def _finish(invocation: Invocation | None, exc: BaseException | None, result: Any = None) -> None:
    if invocation is None:
        return
    if exc is None and result is not None:
        set_result = getattr(invocation, "set_result", None)
        if set_result is not None:
            set_result(result)
    invocation.__exit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)


def _generator_wrapper(fn: Callable[..., Any], factory: Callable[..., Invocation]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        invocation = _begin(factory, fn, args, kwargs, attach=False)
        span_context = invocation.context if invocation is not None else None
        if invocation is None or span_context is None:  # (a started invocation always has its context)
            return (yield from fn(*args, **kwargs))
        gen = fn(*args, **kwargs)
        step: Callable[[], Any] = lambda: gen.send(None)  # noqa: E731
        try:
            while True:
                token = otel_context.attach(span_context)  # each step runs inside the span
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
            _finish(invocation, None)
            return stop.value
        except BaseException as exc:
            _finish(invocation, exc)
            raise
        finally:
            gen.close()
            _finish(invocation, None)

    return wrapper


def _async_generator_wrapper(fn: Callable[..., Any], factory: Callable[..., Invocation]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        invocation = _begin(factory, fn, args, kwargs, attach=False)
        span_context = invocation.context if invocation is not None else None
        if invocation is None or span_context is None:
            async for item in fn(*args, **kwargs):  # (asend/athrow of the consumer are not forwarded here)
                yield item
            return
        agen = fn(*args, **kwargs)
        step: Callable[[], Any] = lambda: agen.asend(None)  # noqa: E731
        try:
            while True:
                token = otel_context.attach(span_context)
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
            _finish(invocation, None)
        except BaseException as exc:
            _finish(invocation, exc)
            raise
        finally:
            await agen.aclose()
            _finish(invocation, None)

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
             tools: Any = None) -> LLMInvocation:
    """Trace your own LLM call: ``with llm_call("gpt-4o", input_messages=msgs, tools=schemas) as call:
    ...; call.set_response(text, input_tokens=..., output_tokens=...)``. ``tools``: the
    tool definitions offered to the model (content: recorded like the prompt)."""
    call = _llm_call(model, provider, input_messages, tools)
    return call if call is not None else NOT_RECORDING.llm("not recorded")


@guarded
def _llm_call(model: str, provider: str | None, input_messages: Any, tools: Any) -> LLMInvocation:
    return get_recorder().llm(model, provider=provider, input_messages=input_messages, tools=tools)


@guarded
def spawn(*targets: str | Iterable[str], options: Iterable[str] | None = None, content: Any = None) -> None:
    """Record the decision to spawn ``targets`` (one decision for a whole fan-out):
    names, or one list of names."""
    first = targets[0] if targets else ""
    names = list(first) if len(targets) == 1 and not isinstance(first, str) else [str(t) for t in targets]
    get_recorder().spawn(names, options=options, content=content)


@guarded
def delegate(target: str | Sequence[str], *, options: Iterable[str] | None = None, content: Any = None) -> None:
    """Record the decision to hand work to ``target``, chosen among ``options``."""
    get_recorder().delegate(target, options=options, content=content)


@guarded
def message(content: Any = None, *, recipients: str | Iterable[str] | None = None, sender: str | None = None,
            message_type: str | None = None, **renamed: Any) -> None:
    """Record a message from the current agent (or ``sender``) to ``recipients``
    (``to=`` is their deprecated name)."""
    recipients = renamed_keyword("orch_otel.message", renamed, "to", "recipients", recipients)
    if recipients is None:
        raise TypeError("orch_otel.message() needs recipients=")
    get_recorder().message(content, recipients=recipients, sender=sender, message_type=message_type)


@guarded
def aggregate(content: Any = None, *, sources: Iterable[str] | None = None) -> None:
    """Record the aggregation of sub-agents' results."""
    get_recorder().aggregate(content, sources=sources)


@guarded
def stop(reason: str = StopReason.END, *, content: Any = None, source: str | None = None, forced: bool = False) -> None:
    """Record the decision to stop the run, with its reason and, when known, the
    condition or component that decided it (``source``); ``forced`` when a
    limit (turns, tokens, time, recursion), not a choice, ended it."""
    get_recorder().stop(reason, content=content, source=source, forced=forced)


@guarded
def human_intervention(content: Any = None, *, resume_of: str | None = None) -> None:
    """Record a human's input into the run (``resume_of``: the interrupted trace it resumes)."""
    get_recorder().human_intervention(content, resume_of=resume_of)


@guarded
def reward(value: float, *, name: str = "reward", unit: str | None = None, target: str | None = None) -> None:
    """Record a reward: for the team (``unit`` None or ``"team"``), for one agent
    (``unit="agent"`` or ``"orchestrator"``, ``target`` = its name) or for a role
    (``unit="role"``, ``target`` = the role). See :meth:`Recorder.reward`."""
    get_recorder().reward(value, name=name, unit=unit, target=target)
