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
from ._serving import ACTIVE, ModelCall, Served, ToolCall
from ._task import root_task_id
from .recorder import NOT_RECORDING, get_recorder
from .vocabulary import Attr, StopReason

F = TypeVar("F", bound=Callable[..., Any])


Serve = Callable[[Invocation], "Served | None"]  # a replay's answer for the call an invocation records


class _Traced:
    """A decorator that is also a context manager; ``factory`` makes one Invocation per call.
    ``serve``: while a replay runs, the recorded result replaces the call (tools)."""

    def __init__(self, factory: Callable[[Callable[..., Any] | None, tuple, dict], Invocation], name: str | None,
                 serve: Serve | None = None):
        self._factory = factory
        self._name = name
        self._serve = serve
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
        factory, serve = self._factory, self._serve
        if inspect.isasyncgenfunction(fn):
            return _marked(functools.wraps(fn)(_async_generator_wrapper(fn, factory)))
        if inspect.isgeneratorfunction(fn):
            return _marked(functools.wraps(fn)(_generator_wrapper(fn, factory)))
        return _call_wrapper(fn, lambda args, kwargs: _begin(factory, fn, args, kwargs), serve,
                             lambda invocation, result, served: _finish(invocation, None, result))


def _call_wrapper(fn: F, begin: Callable[[tuple, dict], Any], serve: Serve | None,
                  done: Callable[[Any, Any, Served | None], None]) -> F:
    """``fn`` (sync or async) in one invocation per call: ``begin(args, kwargs)``
    starts it, a replay's answer (``serve``) replaces the call, ``done(invocation,
    result, served)`` records the result; an exception fails the invocation."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            invocation = begin(args, kwargs)
            try:
                served = _served(serve, invocation)
                result = await fn(*args, **kwargs) if served is None else served.output
            except BaseException as exc:
                _finish(invocation, exc)
                raise
            done(invocation, result, served)
            return result

        return _marked(async_wrapper)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        invocation = begin(args, kwargs)
        try:
            served = _served(serve, invocation)
            result = fn(*args, **kwargs) if served is None else served.output
        except BaseException as exc:
            _finish(invocation, exc)
            raise
        done(invocation, result, served)
        return result

    return _marked(wrapper)


TRACED = "__orch_otel_traced__"  # set on every function these decorators wrap: replay knows them by it


def _marked(wrapper: Callable[..., Any]) -> Any:
    setattr(wrapper, TRACED, True)
    return wrapper


def _served(serve: Serve | None, invocation: Invocation | None) -> Served | None:
    """A replay's recorded answer, when one is active and this call is served.
    Not guarded: a call the recording cannot answer must fail the replayed run."""
    if serve is None or invocation is None or ACTIVE.get() is None:
        return None
    return serve(invocation)


def _span_attribute(invocation: Invocation, key: str) -> Any:
    attributes = getattr(invocation.span, "attributes", None)
    return attributes.get(key) if attributes else None


def _serve_tool(invocation: Invocation) -> Served | None:
    server = ACTIVE.get()
    if server is None:
        return None
    return server.tool(ToolCall(name=str(_span_attribute(invocation, Attr.TOOL_NAME)),
                                call_id=_span_attribute(invocation, Attr.TOOL_CALL_ID),
                                args_ref=_span_attribute(invocation, Attr.INPUT_REF)))


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
    provider: str | None = None,
    task_id: str | None = None,
    system: str | None = None,
    topology: str | None = None,
) -> Any:
    """Trace an agent: ``@agent``, ``@agent("planner", role="planner")`` or
    ``with agent("planner"):``. ``provider``: the ``gen_ai.provider.name`` of
    the agent's model (``openai``, ``anthropic``, ...), when it has one.

    ``spawned`` defaults to True when the agent starts inside another agent:
    calling a sub-agent from an agent spawns it.
    """
    fn, name = _split(name_or_fn)

    def factory(target: Callable[..., Any] | None, args: tuple, kwargs: dict) -> Invocation:
        agent_name = name or (target.__name__ if target else "agent")
        recorder = get_recorder()
        inside = current_agent() is not None
        return recorder.agent(
            agent_name,
            agent_id=agent_id,
            role=role,
            description=description,
            spawned=inside if spawned is None else spawned,
            provider=provider,
            task_id=task_id if inside else root_task_id(task_id),
            system=system or "custom",
            topology=topology,
            input=None if inside else _call_input(recorder, target, args, kwargs),
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
        recorder = get_recorder()
        return recorder.workflow(
            name or (target.__name__ if target else "workflow"),
            task_id=root_task_id(task_id),
            system=system or "custom",
            topology=topology,
            input=_call_input(recorder, target, args, kwargs),
        )

    traced = _Traced(factory, name)
    return traced(fn) if fn is not None else traced


def _call_input(recorder: Any, target: Callable[..., Any] | None, args: tuple, kwargs: dict) -> Any:
    """A decorated run's arguments, as a replay calls it again (content: only while captured)."""
    if target is None or not (args or kwargs) or not recorder.content.capture:
        return None
    return {"args": list(args), "kwargs": kwargs}


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

    traced = _Traced(factory, name, serve=_serve_tool)
    return traced(fn) if fn is not None else traced


def llm_call(model: str, *, provider: str | None = None, input_messages: Any = None,
             tools: Any = None) -> _LLMCall:
    """Trace your own LLM call: ``with llm_call("gpt-4o", input_messages=msgs, tools=schemas) as call:
    ...; call.set_response(text, input_tokens=..., output_tokens=...)``. ``tools``: the
    tool definitions offered to the model (content: recorded like the prompt).

    Also a decorator, ``@llm_call("gpt-4o")`` on a function whose first argument
    is the prompt and whose return value is the reply: each call is one LLM call,
    and a replay answers it from the recording instead of calling the function."""
    return _LLMCall(model, provider, input_messages, tools)


class _LLMCall:
    """What ``llm_call()`` returns: its invocation (made on first use, for
    ``with`` and the invocation's methods), or a decorator."""

    __slots__ = ("_args", "_invocation")

    def __init__(self, model: str, provider: str | None, input_messages: Any, tools: Any) -> None:
        self._args = (model, provider, input_messages, tools)
        self._invocation: LLMInvocation | None = None

    def _call(self) -> LLMInvocation:
        if self._invocation is None:
            self._invocation = _llm_call(*self._args) or NOT_RECORDING.llm("not recorded")
        return self._invocation

    def __enter__(self) -> LLMInvocation:
        return self._call().__enter__()

    def __exit__(self, exc_type, exc, tb) -> None:
        self._call().__exit__(exc_type, exc, tb)

    def __getattr__(self, name: str) -> Any:  # start(), set_response(), span, ... of the invocation
        return getattr(self._call(), name)

    def __call__(self, fn: F) -> F:
        model, provider, _, tools = self._args

        def begin(args: tuple, kwargs: dict) -> LLMInvocation | None:
            prompt = args[0] if args else next(iter(kwargs.values()), None)
            invocation = _llm_call(model, provider, prompt, tools)
            if invocation is None or _begin(lambda *_: invocation, fn, args, kwargs) is None:
                return None
            return invocation

        return _call_wrapper(fn, begin, _serve_model, _reply)


def _serve_model(invocation: Invocation) -> Served | None:
    server = ACTIVE.get()
    if server is None:
        return None
    return server.model(ModelCall(request_ref=_span_attribute(invocation, Attr.INPUT_REF),
                                  model=_span_attribute(invocation, Attr.REQUEST_MODEL)))


@guarded
def _reply(invocation: LLMInvocation | None, reply: Any, served: Served | None) -> None:
    if invocation is None:
        return
    if served is not None:
        invocation.set_response(reply, input_tokens=served.input_tokens, output_tokens=served.output_tokens)
    else:
        invocation.set_response(reply)
    invocation.end()


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
def human_intervention(content: Any = None, *, resume_of: str | None = None,
                       recipients: str | Iterable[str] | None = None, approved: Iterable[str] | None = None,
                       rejected: Iterable[str] | None = None) -> None:
    """Record a human's input into the run (``resume_of``: the interrupted trace it
    resumes; ``recipients``: the agents it reaches, default the current one;
    ``approved`` / ``rejected``: the tool call ids the human approved or rejected)."""
    get_recorder().human_intervention(content, resume_of=resume_of, recipients=recipients,
                                      approved=approved, rejected=rejected)


@guarded
def reward(value: float, *, name: str = "reward", unit: str | None = None, target: str | None = None) -> None:
    """Record a reward: for the team (``unit`` None or ``"team"``), for one agent
    (``unit="agent"`` or ``"orchestrator"``, ``target`` = its name) or for a role
    (``unit="role"``, ``target`` = the role). See :meth:`Recorder.reward`."""
    get_recorder().reward(value, name=name, unit=unit, target=target)
