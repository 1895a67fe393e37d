"""LLM calls: ``create`` / ``create_stream`` of every concrete
``ChatCompletionClient`` class (``ReplayChatCompletionClient`` included).

Client classes are patched where they define the method, once per class:
those already imported when AutoGen is patched (``instrument()``, or the
first import of ``autogen_agentchat`` after it), and any other class the
first time a run meets one of its instances (so clients imported later are
covered too). A client that wraps another (for example
``ChatCompletionCache``) gives one chat span, not two.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from ..._serving import served_model
from ...recorder import Recorder
from ...vocabulary import function_tool
from .._calls import arg
from .._patch import Patches
from .._providers import endpoint_provider
from . import _openai
from ._firstsight import ClassPatcher
from ._served import create_result, replaying
from ._state import LLM_KEY, ModelCall, telemetry_failed

_PROVIDERS = (  # (fragment of "module.Class", gen_ai.provider.name)
    ("AzureOpenAI", "azure.ai.openai"),
    ("AnthropicBedrock", "aws.bedrock"),
    (".openai.", "openai"),
    (".anthropic.", "anthropic"),
    (".azure.", "azure.ai.inference"),
    (".ollama.", "ollama"),
    (".llama_cpp.", "llama_cpp"),
)


def model_name(client: Any) -> str:
    """The model a client calls: its configured model, else its model family, else its class."""
    for attr in ("_create_args", "_raw_config"):
        config = getattr(client, attr, None)
        if isinstance(config, dict) and config.get("model"):
            return str(config["model"])
    try:
        family = client.model_info.get("family")
    except Exception:
        family = None
    if family and family != "unknown":
        return str(family)
    return type(client).__name__


def provider_name(client: Any) -> str | None:
    """By client class; an OpenAI client by its endpoint when that is a listed
    provider's (autogen-ext points ``gemini-*`` and ``claude-*`` models at theirs)."""
    cls = type(client)
    where = f"{cls.__module__}.{cls.__name__}"
    for fragment, provider in _PROVIDERS:
        if fragment in where:
            if provider == "openai":
                return endpoint_provider(getattr(getattr(client, "_client", None), "base_url", None)) or provider
            return provider
    return None


def agent_provider(agent: Any) -> str | None:
    """The provider of an agent's own model client (``AssistantAgent``); None for agents without one."""
    client = getattr(agent, "_model_client", None)
    return None if client is None else provider_name(client)


def _in_run() -> bool:
    """Record only inside a traced run, and only the outermost client of a chain."""
    ctx = otel_context.get_current()
    return otel_context.get_value(LLM_KEY, ctx) is None and trace.get_current_span(ctx).is_recording()


def _start(recorder: Recorder, client: Any, args: Any, kwargs: Any):
    messages = tools = None
    if recorder.content.capture:
        messages = messages_view(arg(args, kwargs, 0, "messages"))
        tools = _tool_definitions(kwargs.get("tools"))
    inv = recorder.llm(model_name(client), provider=provider_name(client), input_messages=messages,
                       tools=tools)
    inv.start(attach=False)
    call = ModelCall()
    return inv, call, otel_context.set_value(LLM_KEY, call, inv.context)


def _tool_definitions(tools: Any) -> list[dict[str, Any]] | None:
    """The tools offered to the model (``Tool`` objects or ``ToolSchema`` dicts),
    in the OpenAI function format that chat datasets use."""
    if not tools:
        return None
    out = []
    for tool in tools:
        schema = tool if isinstance(tool, dict) else getattr(tool, "schema", None)
        if isinstance(schema, dict) and schema.get("name"):
            out.append(function_tool(schema["name"], schema.get("description", ""), schema.get("parameters")))
    return out or None


def _calls_view(calls: list[Any]) -> list[dict[str, Any]]:
    # arguments stay the JSON text the model wrote
    return [{"id": getattr(c, "id", None), "name": getattr(c, "name", None), "arguments": getattr(c, "arguments", None)}
            for c in calls]


def _content_view(content: Any) -> Any:
    if isinstance(content, list):  # a user message's text and images
        return [part if isinstance(part, str) else {"type": "image"} for part in content]
    return content


def _message_view(message: Any) -> list[dict[str, Any]]:
    """One AutoGen ``LLMMessage`` as chat messages in the form the LangGraph
    integration records (``{role, content[, name][, tool_calls][, tool_call_id]}``):
    an ``AssistantMessage`` of ``FunctionCall``s gets ``tool_calls``, and a
    ``FunctionExecutionResultMessage`` becomes one ``tool`` message per result,
    each with the ``tool_call_id`` it answers."""
    kind = getattr(message, "type", None)
    if kind == "FunctionExecutionResultMessage":
        return [{"role": "tool", "content": r.content, "tool_call_id": r.call_id, "name": r.name}
                for r in message.content]
    if kind == "AssistantMessage":
        view: dict[str, Any] = {"role": "assistant", "name": message.source}
        if isinstance(message.content, list):
            view["content"] = message.thought or ""
            view["tool_calls"] = _calls_view(message.content)
        else:
            view["content"] = message.content
        return [view]
    if kind == "UserMessage":
        return [{"role": "user", "content": _content_view(message.content), "name": message.source}]
    if kind == "SystemMessage":
        return [{"role": "system", "content": message.content}]
    return [message]  # an unknown message type: recorded as it is


def messages_view(messages: Any) -> Any:
    """The prompt of a ``create`` call as chat messages (see :func:`_message_view`)."""
    if not isinstance(messages, (list, tuple)):
        return messages
    out: list[Any] = []
    for message in messages:
        try:
            out.extend(_message_view(message))
        except Exception:  # a message of an unexpected shape: recorded as it is
            telemetry_failed("model message view")
            out.append(message)
    return out


def output_view(result: Any) -> Any:
    """A ``CreateResult`` as one assistant message: text, or ``tool_calls`` for a
    list of ``FunctionCall``s (its ``thought``, if any, as the text)."""
    content = getattr(result, "content", None)
    if content is None:
        return None
    if isinstance(content, list):
        return {"role": "assistant", "content": getattr(result, "thought", None) or "", "tool_calls": _calls_view(content)}
    return {"role": "assistant", "content": content}


def _respond(inv: Any, call: ModelCall, result: Any) -> None:
    """The reply, its model id and token counts. A server that reported no usage
    (a stream without ``include_usage``) gets a ``CreateResult`` with 0 and 0 from
    the client: those are unknown, not zero, and recorded as unknown."""
    try:
        usage = None if call.usage_reported is False else getattr(result, "usage", None)
        inv.set_response(
            output_view(result),
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
            response_model=call.response_model,
        )
    except Exception:
        telemetry_failed("model response")


def create_wrapper(recorder: Recorder) -> Callable[..., Any]:
    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not _in_run():
            return await wrapped(*args, **kwargs)
        try:
            inv, call, ctx = _start(recorder, instance, args, kwargs)
        except Exception:
            telemetry_failed("model call start")
            return await wrapped(*args, **kwargs)
        token = otel_context.attach(ctx)
        try:
            served = served_model(inv.span)
            result = await wrapped(*args, **kwargs) if served is None else create_result(served)
        except BaseException as exc:
            inv.fail(exc)
            raise
        finally:
            otel_context.detach(token)
        _respond(inv, call, result)
        inv.end()
        return result

    return wrapper


def create_stream_wrapper(recorder: Recorder, result_type: type) -> Callable[..., Any]:
    async def traced(agen: Any, client: Any, args: Any, kwargs: Any) -> AsyncIterator[Any]:
        try:  # at the first step: a stream never iterated leaves no span
            inv, call, ctx = _start(recorder, client, args, kwargs)
        except Exception:
            telemetry_failed("model stream start")
            async for item in agen:
                yield item
            return
        if replaying():
            try:
                served = served_model(inv.span)
            except BaseException as exc:  # a replay that cannot answer: the stream fails as the call would
                inv.fail(exc)
                await agen.aclose()
                raise
            if served is not None:  # the recorded reply is the whole stream
                await agen.aclose()
                agen = _one(create_result(served))
        try:
            while True:
                token = otel_context.attach(ctx)
                try:
                    item = await agen.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    otel_context.detach(token)
                if isinstance(item, result_type):
                    _respond(inv, call, item)
                yield item
        except BaseException as exc:
            inv.fail(exc)
            await agen.aclose()
            raise
        inv.end()

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not _in_run():
            return wrapped(*args, **kwargs)
        return traced(wrapped(*args, **kwargs), instance, args, kwargs)

    return wrapper


async def _one(result: Any) -> AsyncIterator[Any]:
    yield result


class ClientPatcher(ClassPatcher):
    """Patches model client classes on first sight."""

    def __init__(self, recorder: Recorder, patches: Patches, base: type, result_type: type) -> None:
        super().__init__(patches, base, {"create": create_wrapper(recorder),
                                         "create_stream": create_stream_wrapper(recorder, result_type)},
                         on_patch=_openai.patcher(patches))

    def discover(self, client: Any) -> None:
        super().discover(client)
        super().discover(getattr(client, "client", None))  # ChatCompletionCache and similar wrappers

    def discover_agent(self, agent: Any) -> None:
        self.discover(getattr(agent, "_model_client", None))
