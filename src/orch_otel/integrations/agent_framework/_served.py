"""The replay seam inside the Agent Framework wrappers: while a replay is
active (``orch_otel._serving``), a model or tool call is answered from the
recording, inside the span the wrapper records for it, in the framework's
own types (a ``ChatResponse``, a ``ResponseStream`` of updates, a function
result)."""

from __future__ import annotations

from typing import Any

from agent_framework import ChatResponse, ChatResponseUpdate, Content, Message, ResponseStream

from ..._serving import Served


def _contents(served: Served) -> list[Content]:
    """A recorded reply (``_messages.response_view``'s form) as message contents."""
    view = served.output if isinstance(served.output, dict) else {"content": served.output}
    contents: list[Content] = []
    if view.get("content"):
        contents.append(Content.from_text(str(view["content"])))
    for call in view.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        arguments = fn.get("arguments")
        contents.append(Content.from_function_call(call_id=str(call.get("id")), name=str(fn.get("name")),
                                                   arguments=arguments if isinstance(arguments, str) else "{}"))
    return contents


def _usage(served: Served) -> dict[str, int]:
    return {"input_token_count": served.input_tokens or 0, "output_token_count": served.output_tokens or 0}


def chat_response(served: Served) -> ChatResponse:
    return ChatResponse(messages=[Message(role="assistant", contents=_contents(served))], model=served.model,
                        usage_details=_usage(served))  # type: ignore[arg-type]


def chat_stream(served: Served) -> ResponseStream:
    """The recorded reply as the whole stream: one update with its contents, one with its usage."""

    async def updates() -> Any:
        yield ChatResponseUpdate(role="assistant", contents=_contents(served), model=served.model)
        yield ChatResponseUpdate(role="assistant", contents=[Content.from_usage(_usage(served))])  # type: ignore[arg-type]

    return ResponseStream(updates(), finalizer=ChatResponse.from_updates)


def tool_result(call_id: Any, served: Served) -> tuple[list[Content], bool]:
    """What ``_execute_single_function_call`` returns: the result, and no termination."""
    return [Content.from_function_result(call_id=str(call_id), result=served.output)], False
