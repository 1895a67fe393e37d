"""Replay of a LangGraph app: feed a recorded run's input again, and answer
its model and tool calls from the recording (``orch_otel._serving``).

Seams, patched only while a replay runs and undone after it:

- models: ``BaseChatModel._generate_with_cache`` / ``_agenerate_with_cache``,
  inside LangChain's callbacks, so the handler records the served reply as
  it records a real one;
- tools: each tool class's own ``_run`` / ``_arun``, patched the first time
  ``BaseTool.run`` / ``arun`` meets an instance of it, inside the tool's
  callbacks too;
- a fork at a routing function's decision: ``RunnableCallable.invoke`` /
  ``ainvoke`` of LangGraph (how a conditional edge calls its routing
  function, looked up at each call): the chosen call returns the forced
  label instead of calling the function, through a runnable of the same
  name, so the handler records the forced route as it records a real one.

The request of a call (its prompt, its arguments) is read from the span the
handler just started for it, so it is checked exactly as it was recorded.
"""

from __future__ import annotations

from typing import Any, cast

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, messages_from_dict
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import BaseTool
from langgraph.types import Command

from ..._serving import ACTIVE, ModelCall, Served, ToolCall
from ...vocabulary import Attr
from .._patch import Patches
from . import LangGraphInstrumentor
from ._graphs import branch_of
from ._routes import node_spec
from ._runs import NODE, is_router_tag

_MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "chat", "function"})


def accepts(app: Any) -> bool:
    return callable(getattr(app, "invoke", None)) and type(app).__module__.startswith("langgraph.")


def instrumentor() -> LangGraphInstrumentor:
    return LangGraphInstrumentor()


def install(patches: Patches) -> None:
    patches.wrap(BaseChatModel, "_generate_with_cache", _model_sync)
    patches.wrap(BaseChatModel, "_agenerate_with_cache", _model_async)
    tools = _ToolClasses(patches)
    patches.wrap(BaseTool, "run", tools.on_run)
    patches.wrap(BaseTool, "arun", tools.on_run)


async def run(app: Any, run_input: Any) -> Any:
    """Run ``app`` once on a recorded run input (``_extract.run_input_view``'s form)."""
    return await app.ainvoke(*_arguments(run_input))


def run_sync(app: Any, run_input: Any) -> Any:
    """:func:`run` through the graph's sync entry point (no event loop, no executor threads)."""
    return app.invoke(*_arguments(run_input))


def _arguments(run_input: Any) -> tuple[Any, dict[str, Any] | None]:
    if not isinstance(run_input, dict) or not ({"input", "command"} & run_input.keys()):
        raise ValueError("the recorded run input is not a LangGraph run input ({'input': ...} or {'command': ...})")
    config: dict[str, Any] = {}
    if run_input.get("thread_id") is not None:
        config["configurable"] = {"thread_id": run_input["thread_id"]}
    if "command" in run_input:
        command = run_input["command"]
        graph_input: Any = Command(resume=_revive(command.get("resume")), update=_revive(command.get("update")),
                                   goto=command.get("goto") or ())
    else:
        graph_input = _revive(run_input["input"])
    return graph_input, config or None


def _revive(value: Any) -> Any:
    """JSON back to what the app was given: LangChain messages where the
    recorded JSON is one (their ``model_dump``), the rest as it is."""
    if isinstance(value, list):
        return [_revive(v) for v in value]
    if isinstance(value, dict):
        if value.get("type") in _MESSAGE_TYPES and "content" in value:
            data = {k: v for k, v in value.items() if k != "type"}
            return messages_from_dict([{"type": value["type"], "data": data}])[0]
        return {k: _revive(v) for k, v in value.items()}
    return value


# -- models --------------------------------------------------------------------------------------

def _handler_run(run_id: Any) -> Any:
    handler = LangGraphInstrumentor()._handler
    runs = getattr(handler, "_runs", None)
    return runs.get(run_id) if runs is not None and run_id is not None else None


def _span_attr(run: Any, key: str) -> Any:
    inv = getattr(run, "inv", None)
    attributes = getattr(getattr(inv, "span", None), "attributes", None)
    return attributes.get(key) if attributes else None


def _served_model(run_manager: Any) -> Served | None:
    server = ACTIVE.get()
    if server is None:
        return None
    run = _handler_run(getattr(run_manager, "run_id", None))
    return server.model(ModelCall(request_ref=_span_attr(run, Attr.INPUT_REF), model=_span_attr(run, Attr.REQUEST_MODEL)))


def _model_sync(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    served = _served_model(_run_manager(args, kwargs))
    return wrapped(*args, **kwargs) if served is None else _chat_result(served)


async def _model_async(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    served = _served_model(_run_manager(args, kwargs))
    return await wrapped(*args, **kwargs) if served is None else _chat_result(served)


def _run_manager(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return kwargs.get("run_manager", args[2] if len(args) > 2 else None)


def _chat_result(served: Served) -> ChatResult:
    """A recorded reply (``_extract.message_view``'s form) as the model's result."""
    view = served.output if isinstance(served.output, dict) else {"content": served.output}
    calls = [{"name": c.get("name"), "args": c.get("args") or {}, "id": c.get("id"), "type": "tool_call"}
             for c in view.get("tool_calls") or ()]
    message = AIMessage(content=view.get("content") or "", tool_calls=calls)
    if served.input_tokens is not None or served.output_tokens is not None:
        tokens_in, tokens_out = served.input_tokens or 0, served.output_tokens or 0
        usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}
        message.usage_metadata = cast(UsageMetadata, usage)
    if served.model:
        message.response_metadata = {"model_name": served.model}
    return ChatResult(generations=[ChatGeneration(message=message)])


# -- forks at a routing function -----------------------------------------------------------------

def force_route(patches: Patches, route: Any) -> None:
    """Force one call of one routing function (``_fork.ForcedRoute``): its
    ``call``-th call in the replayed run returns the label the conditional
    edge's path map gives the target (the target itself when it declares no
    map). The handler counts the same calls (``Run.count_router``). A target
    the map does not declare is not forced: the fork then reports that it
    did not take."""
    try:
        from langgraph._internal._runnable import RunnableCallable
    except ImportError as exc:  # a LangGraph that moved it: say so rather than fork something else
        raise ValueError("this LangGraph version has no langgraph._internal._runnable.RunnableCallable: "
                         "a routing function's decision cannot be forced") from exc

    counted: dict[str, Any] = {"server": None, "calls": 0}

    def forced_label(path: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        server = ACTIVE.get()
        config = (args[1] if len(args) > 1 else kwargs.get("config")) or {}
        if server is None or (config.get("run_name") or path.get_name()) != route.router:
            return None
        callbacks = config.get("callbacks")  # a router run, as the handler counts them (Run.count_router)
        node = _handler_run(getattr(callbacks, "parent_run_id", None))
        if not path.trace or not is_router_tag(getattr(callbacks, "tags", None)) or node is None or node.kind != NODE:
            return None
        if counted["server"] is not server:
            counted["server"], counted["calls"] = server, 0
        counted["calls"] += 1
        if counted["calls"] != route.call:
            return None
        branch = _branch_of(route.router, config)
        label = _label(branch.ends, route.target) if branch is not None else None
        if label is not None:
            server.fork()  # from here on, calls go to the app's own models and tools (or to `then`)
        return label

    def forced(wrapped: Any, path: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        label = forced_label(path, args, kwargs)
        if label is None:
            return wrapped(*args, **kwargs)
        return RunnableLambda(lambda _state: label, name=path.get_name()).invoke(*args, **kwargs)

    async def aforced(wrapped: Any, path: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        label = forced_label(path, args, kwargs)
        if label is None:
            return await wrapped(*args, **kwargs)
        return await RunnableLambda(lambda _state: label, name=path.get_name()).ainvoke(*args, **kwargs)

    patches.wrap(RunnableCallable, "invoke", forced)
    patches.wrap(RunnableCallable, "ainvoke", aforced)


def _label(ends: Any, target: str) -> Any:
    if not ends:
        return target
    return next((label for label, node in ends.items() if node == target), None)


def _branch_of(router: str, config: Any) -> Any:
    """The conditional edge (``BranchSpec``) whose routing function runs now
    (with ``config``), from the compiled graph of the node it runs in (the
    handler's run of that node), or None when that is not known."""
    run = _handler_run(getattr((config or {}).get("callbacks"), "parent_run_id", None))
    while run is not None and run.kind != NODE:
        run = run.parent
    spec = node_spec(run)
    return branch_of(spec, router) if spec is not None else None


# -- tools ---------------------------------------------------------------------------------------

class _ToolClasses:
    """Patches each tool class's ``_run`` / ``_arun`` the first time a replay runs one."""

    def __init__(self, patches: Patches) -> None:
        self._patches = patches
        self._seen: set[type] = set()

    def on_run(self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        cls = type(instance)
        if cls not in self._seen and ACTIVE.get() is not None:
            self._seen.add(cls)
            for method, wrapper in (("_run", _tool_sync), ("_arun", _tool_async)):
                owner = next((c for c in cls.__mro__ if method in vars(c)), None)
                if owner is not None and owner is not BaseTool and not self._patches.is_wrapped(owner, method):
                    self._patches.wrap(owner, method, wrapper)
        return wrapped(*args, **kwargs)


def _served_tool(instance: Any) -> Served | None:
    server = ACTIVE.get()
    if server is None:
        return None
    config = var_child_runnable_config.get() or {}
    run = _handler_run(getattr(config.get("callbacks"), "parent_run_id", None))  # the tool's own run
    call_id = _span_attr(run, Attr.TOOL_CALL_ID)
    return server.tool(ToolCall(name=str(getattr(instance, "name", "tool")), call_id=call_id,
                                args_ref=_span_attr(run, Attr.INPUT_REF)))


def _tool_sync(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    served = _served_tool(instance)
    return wrapped(*args, **kwargs) if served is None else served.output


async def _tool_async(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    served = _served_tool(instance)
    return await wrapped(*args, **kwargs) if served is None else served.output
