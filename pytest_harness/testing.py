"""A scripted model server on loopback, for tests: ``LoopbackServer`` and its ``Reply`` values.

It is a real HTTP server answering in the wire formats the harness reads (OpenAI Chat
Completions and Responses, Anthropic Messages, Gemini, AWS Bedrock, Ollama's own
API), so litellm, the official SDKs and the agent frameworks run against it unchanged,
through the cassettes and the checks:

    with LoopbackServer() as server:
        server.queue(Reply(content="Paris"))
        response = complete("Capital of France?", model=server.model, **server.params)
"""

from __future__ import annotations

import base64
import json
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any, TypeAlias
from urllib.parse import parse_qs, unquote

__all__ = ["LoopbackServer", "Reply", "ReplyHandler", "ToolCallSpec"]

# The access token the token route hands out, in Google's shape (``ya29.``): a test can
# check that no token reaches a cassette.
_LOOPBACK_TOKEN = "ya29.loopback-access-token-not-a-secret-0123456789"
CREATED = 1_700_000_000  # a fixed timestamp keeps bodies byte-identical between runs


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSpec:
    """One tool call in a scripted reply.

    Attributes:
        name: The tool's name.
        arguments: A mapping (sent as JSON), or raw text, which may be broken on purpose.
        id: The call's id (None: one is made up from the call's position).
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        args = self.arguments
        return args if isinstance(args, str) else json.dumps(args)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What the server answers to one request.

    Attributes:
        content: the assistant text (None for none).
        reasoning: sent as the message's ``reasoning_content`` (a Responses ``reasoning``
            item, an Anthropic ``thinking`` block, a Gemini ``thought`` part).
        tool_calls: tool calls to return.
        finish_reason: defaults to ``"tool_calls"`` with tool calls, else ``"stop"``;
            in a stream, None sends no finish reason at all (nor Chat Completions'
            ``data: [DONE]``, Responses' ``response.completed``, Anthropic's
            ``message_delta`` and ``message_stop``): a stream that never finished.
            Other formats get its counterpart: ``end_turn``/``tool_use``/``max_tokens``,
            Gemini's ``STOP``/``MAX_TOKENS``, Responses' ``incomplete`` for ``length``.
        status: HTTP status; 400 and above send an error body in the format's shape.
        error: the error message for an error status.
        delay: seconds to wait before answering.
        raw: a body sent verbatim instead of a completion (for malformed answers).
        cut_after: in a stream, drop the connection after this many chunks (events).
        headers: extra response headers.
    """

    content: str | None = "ok"
    reasoning: str | None = None
    tool_calls: Sequence[ToolCallSpec] = ()
    finish_reason: str | None = "auto"
    status: int = 200
    error: str = "scripted error"
    delay: float = 0.0
    raw: str | bytes | None = None
    cut_after: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def finish(self) -> str | None:
        if self.finish_reason != "auto":
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


ReplyHandler: TypeAlias = Callable[[dict[str, Any]], Reply]


def _usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    completion = len((reply.content or "").split()) + len((reply.reasoning or "").split())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _tool_call_json(index: int, call: ToolCallSpec) -> dict[str, Any]:
    return {
        "id": call.id or f"call_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_text()},
    }


def completion_body(body: Mapping[str, Any], reply: Reply, number: int) -> dict[str, Any]:
    """The JSON of a non-streamed chat completion answering ``body`` with ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [_tool_call_json(i, c) for i, c in enumerate(reply.tool_calls)]
    return {
        "id": f"chatcmpl-loopback-{number}",
        "object": "chat.completion",
        "created": CREATED,
        "model": body.get("model", "loopback"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish}],
        "usage": _usage(body, reply),
    }


def stream_chunks(body: Mapping[str, Any], reply: Reply, number: int) -> Iterator[dict[str, Any]]:
    """The chunks of a streamed chat completion, in order (without the final ``[DONE]``)."""
    base = {
        "id": f"chatcmpl-loopback-{number}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": body.get("model", "loopback"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for word in _pieces(reply.reasoning):
        yield chunk({"reasoning_content": word})
    for word in _pieces(reply.content):
        yield chunk({"content": word})
    for i, call in enumerate(reply.tool_calls):
        head = _tool_call_json(i, call)
        head["function"]["arguments"] = ""
        yield chunk({"tool_calls": [{"index": i, **head}]})
        for part in _pieces(call.arguments_text(), size=8):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
    if reply.finish is not None:
        yield chunk({}, reply.finish)
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(body, reply)}


def _pieces(text: str | None, size: int | None = None) -> list[str]:
    if not text:
        return []
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)]
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


def _prompt_words(body: Mapping[str, Any]) -> int:
    """The words of a request's messages (input, contents, Ollama's prompt): its prompt
    tokens, roughly."""
    asked = (
        body.get("messages") or body.get("input") or body.get("contents") or body.get("prompt")
    ) or []
    return len(" ".join(_strings(asked)).split())


def _strings(value: Any, key: str = "content") -> Iterator[str]:
    """The texts in messages: strings under ``content``, ``text`` or ``output``, at any depth."""
    if isinstance(value, str) and key in ("content", "text", "output"):
        yield value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)


def _completion_words(reply: Reply) -> int:
    return len((reply.content or "").split()) + len((reply.reasoning or "").split())


def _parsed_arguments(call: ToolCallSpec) -> Any:
    """The arguments as JSON values; text that is no JSON stays text (a broken call)."""
    if not isinstance(call.arguments, str):
        return dict(call.arguments)
    try:
        return json.loads(call.arguments)
    except json.JSONDecodeError:
        return call.arguments


# OpenAI Responses: a response object of output items; streamed, typed events.
_RESPONSES_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def _responses_items(reply: Reply, number: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        summary = [{"type": "summary_text", "text": reply.reasoning}]
        items.append({"id": f"rs_loopback_{number}", "type": "reasoning", "summary": summary})
    if reply.content is not None:
        text = {"type": "output_text", "text": reply.content, "annotations": [], "logprobs": []}
        message = {"id": f"msg_loopback_{number}", "type": "message", "role": "assistant"}
        items.append({**message, "status": "completed", "content": [text]})
    for i, call in enumerate(reply.tool_calls):
        items.append(
            {
                "id": f"fc_loopback_{number}_{i}",
                "type": "function_call",
                "call_id": call.id or f"call_{number}_{i}",
                "name": call.name,
                "arguments": call.arguments_text(),
                "status": "completed",
            }
        )
    return items


def _responses_object(
    body: Mapping[str, Any], reply: Reply, number: int, output: list[dict[str, Any]]
) -> dict[str, Any]:
    prompt, completion = _prompt_words(body), _completion_words(reply)
    incomplete = _RESPONSES_INCOMPLETE.get(reply.finish or "")
    return {
        "id": f"resp_loopback_{number}",
        "object": "response",
        "created_at": CREATED,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "error": None,
        "model": body.get("model", "loopback"),
        "instructions": body.get("instructions"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": len((reply.reasoning or "").split())},
            "total_tokens": prompt + completion,
        },
    }


def responses_body(body: Mapping[str, Any], reply: Reply, number: int) -> dict[str, Any]:
    """The JSON of a non-streamed OpenAI Responses reply answering ``body`` with ``reply``."""
    return _responses_object(body, reply, number, _responses_items(reply, number))


def responses_events(
    body: Mapping[str, Any], reply: Reply, number: int
) -> Iterator[dict[str, Any]]:
    """The typed events of a streamed OpenAI Responses reply, in order."""
    sequence = count()

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, **fields, "sequence_number": next(sequence)}

    started = {**_responses_object(body, reply, number, []), "status": "in_progress"}
    yield event("response.created", response={**started, "usage": None})
    items = _responses_items(reply, number)
    for index, item in enumerate(items):
        yield event("response.output_item.added", output_index=index, item=_item_started(item))
        for fields in _item_deltas(item):
            yield event(**fields, item_id=item["id"], output_index=index)
        yield event("response.output_item.done", output_index=index, item=item)
    if reply.finish is not None:
        final = responses_body(body, reply, number)
        yield event(f"response.{final['status']}", response=final)


def _item_started(item: dict[str, Any]) -> dict[str, Any]:
    emptied: dict[str, dict[str, Any]] = {"reasoning": {"summary": []}, "message": {"content": []}}
    started = {**item, **emptied.get(item["type"], {"arguments": ""})}
    return started if item["type"] == "reasoning" else {**started, "status": "in_progress"}


def _item_deltas(item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """An output item's events between its ``added`` and its ``done``, without ids."""
    if item["type"] == "reasoning":
        (part,) = item["summary"]
        at = {"summary_index": 0}
        yield {"kind": "response.reasoning_summary_part.added", **at, "part": {**part, "text": ""}}
        for piece in _pieces(part["text"]):
            yield {"kind": "response.reasoning_summary_text.delta", **at, "delta": piece}
        yield {"kind": "response.reasoning_summary_text.done", **at, "text": part["text"]}
        yield {"kind": "response.reasoning_summary_part.done", **at, "part": part}
    elif item["type"] == "message":
        (part,) = item["content"]
        at = {"content_index": 0}
        yield {"kind": "response.content_part.added", **at, "part": {**part, "text": ""}}
        for piece in _pieces(part["text"]):
            delta = {"delta": piece, "logprobs": []}
            yield {"kind": "response.output_text.delta", **at, **delta}
        done = {"text": part["text"], "logprobs": []}
        yield {"kind": "response.output_text.done", **at, **done}
        yield {"kind": "response.content_part.done", **at, "part": part}
    else:
        for piece in _pieces(item["arguments"], size=8):
            yield {"kind": "response.function_call_arguments.delta", "delta": piece}
        arguments = {"name": item["name"], "arguments": item["arguments"]}
        yield {"kind": "response.function_call_arguments.done", **arguments}


# Anthropic Messages: content blocks; streamed, message and content-block events.
_ANTHROPIC_STOPS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _anthropic_blocks(reply: Reply, number: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": reply.reasoning, "signature": "loopback"})
    if reply.content is not None:
        blocks.append({"type": "text", "text": reply.content})
    for i, call in enumerate(reply.tool_calls):
        use = {"type": "tool_use", "id": call.id or f"toolu_loopback_{number}_{i}"}
        blocks.append({**use, "name": call.name, "input": _parsed_arguments(call)})
    return blocks


def _anthropic_stop(reply: Reply) -> str | None:
    return None if reply.finish is None else _ANTHROPIC_STOPS.get(reply.finish, reply.finish)


def anthropic_body(body: Mapping[str, Any], reply: Reply, number: int) -> dict[str, Any]:
    """The JSON of a non-streamed Anthropic Messages reply answering ``body`` with ``reply``."""
    return {
        "id": f"msg_loopback_{number}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "loopback"),
        "content": _anthropic_blocks(reply, number),
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": {"input_tokens": _prompt_words(body), "output_tokens": _completion_words(reply)},
    }


def anthropic_events(
    body: Mapping[str, Any], reply: Reply, number: int
) -> Iterator[dict[str, Any]]:
    """The events of a streamed Anthropic Messages reply, in order."""
    message = anthropic_body(body, reply, number)
    usage = message["usage"]
    opening: dict[str, Any] = {
        "content": [],
        "stop_reason": None,
        "usage": {**usage, "output_tokens": 1},
    }
    yield {"type": "message_start", "message": {**message, **opening}}
    for index, block in enumerate(message["content"]):
        started = _block_started(block)
        yield {"type": "content_block_start", "index": index, "content_block": started}
        for delta in _block_deltas(block):
            yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}
    if message["stop_reason"] is not None:
        delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        yield {"type": "message_delta", "delta": delta, "usage": usage}
        yield {"type": "message_stop"}


def _block_started(block: dict[str, Any]) -> dict[str, Any]:
    emptied = {"thinking": {"thinking": "", "signature": ""}, "text": {"text": ""}}
    return {**block, **emptied.get(block["type"], {"input": {}})}


def _block_deltas(block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if block["type"] == "thinking":
        for piece in _pieces(block["thinking"]):
            yield {"type": "thinking_delta", "thinking": piece}
        yield {"type": "signature_delta", "signature": block["signature"]}
    elif block["type"] == "text":
        for piece in _pieces(block["text"]):
            yield {"type": "text_delta", "text": piece}
    else:
        given = block["input"]
        text = given if isinstance(given, str) else json.dumps(given)
        for piece in _pieces(text, size=8):
            yield {"type": "input_json_delta", "partial_json": piece}


# Gemini generateContent: candidates of parts; streamed, partial responses as SSE.
_GEMINI_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}
_GOOGLE_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _gemini_parts(reply: Reply) -> list[list[dict[str, Any]]]:
    """The reply's parts, in the groups a stream sends them in (a call is never split)."""
    groups = [[{"text": piece, "thought": True}] for piece in _pieces(reply.reasoning)]
    groups += [[{"text": piece}] for piece in _pieces(reply.content)]
    calls = []
    for call in reply.tool_calls:
        asked = {"name": call.name, "args": _parsed_arguments(call)}
        calls.append({"functionCall": {**asked, "id": call.id} if call.id else asked})
    return [*groups, calls] if calls else groups


def _gemini_chunk(
    parts: list[dict[str, Any]], reply: Reply, number: int, model: str, *, last: bool
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    chunk: dict[str, Any] = {"candidates": [candidate]}
    if last and reply.finish is not None:
        candidate["finishReason"] = _GEMINI_FINISH.get(reply.finish, reply.finish.upper())
    return {**chunk, "modelVersion": model, "responseId": f"loopback-{number}"}


def _gemini_usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    prompt, completion = _prompt_words(body), len((reply.content or "").split())
    thoughts = len((reply.reasoning or "").split())
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": prompt + completion + thoughts,
    }


def gemini_body(body: Mapping[str, Any], reply: Reply, number: int, model: str) -> dict[str, Any]:
    """The JSON of a Gemini generateContent reply answering ``body`` with ``reply``."""
    parts = [part for group in _gemini_parts(reply) for part in group]
    chunk = _gemini_chunk(_joined_text(parts), reply, number, model, last=True)
    return {**chunk, "usageMetadata": _gemini_usage(body, reply)}


def gemini_chunks(
    body: Mapping[str, Any], reply: Reply, number: int, model: str
) -> Iterator[dict[str, Any]]:
    """The partial responses of a Gemini streamGenerateContent reply; usage on the last."""
    groups = _gemini_parts(reply) or [[]]
    for i, parts in enumerate(groups):
        last = i == len(groups) - 1
        chunk = _gemini_chunk(parts, reply, number, model, last=last)
        yield {**chunk, "usageMetadata": _gemini_usage(body, reply)} if last else chunk


def _joined_text(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent text parts of one kind (thought or not) joined, as a whole reply has them."""
    joined: list[dict[str, Any]] = []
    for part in parts:
        before = joined[-1] if joined else {}
        if "text" in part and "text" in before and before.get("thought") == part.get("thought"):
            joined[-1] = {**before, "text": before["text"] + part["text"]}
        else:
            joined.append(part)
    return joined


# Ollama's own API: one JSON object, or (its default) NDJSON parts, the last ``done: true``.
_OLLAMA_DONE = {"tool_calls": "stop"}  # Ollama says ``stop`` after tool calls too
_OLLAMA_CREATED = "2023-11-14T22:13:20Z"  # CREATED, as Ollama writes its times


def _ollama_part(body: Mapping[str, Any], api: str, said: dict[str, Any]) -> dict[str, Any]:
    """One part (``done: false``) saying ``said``: a chat message's fields, or generate's."""
    head = {"model": body.get("model", "loopback"), "created_at": _OLLAMA_CREATED}
    if api == "ollama_chat":
        return {**head, "message": {"role": "assistant", "content": "", **said}, "done": False}
    return {**head, "response": "", **said, "done": False}


def _ollama_said(reply: Reply) -> list[dict[str, Any]]:
    """What a streamed reply's parts say, in order: thinking, text, then its tool calls."""
    said: list[dict[str, Any]] = [{"thinking": piece} for piece in _pieces(reply.reasoning)]
    said += [{"content": piece} for piece in _pieces(reply.content)]
    calls = [{"name": c.name, "arguments": _parsed_arguments(c)} for c in reply.tool_calls]
    return [*said, {"tool_calls": [{"function": call} for call in calls]}] if calls else said


def _ollama_done(body: Mapping[str, Any], api: str, reply: Reply) -> dict[str, Any]:
    """The last part: ``done: true``, its reason and the counts (durations fixed at 0)."""
    finish = reply.finish or "stop"
    return {
        **_ollama_part(body, api, {}),
        "done": True,
        "done_reason": _OLLAMA_DONE.get(finish, finish),
        "total_duration": 0,
        "load_duration": 0,
        "prompt_eval_count": _prompt_words(body),
        "prompt_eval_duration": 0,
        "eval_count": _completion_words(reply),
        "eval_duration": 0,
    }


def ollama_parts(body: Mapping[str, Any], api: str, reply: Reply) -> Iterator[dict[str, Any]]:
    """The NDJSON parts of a streamed Ollama reply (``api``: ``ollama_chat`` or
    ``ollama_generate``); no ``done: true`` part when the reply never finished."""
    field = {"content": "content"} if api == "ollama_chat" else {"content": "response"}
    for said in _ollama_said(reply):
        yield _ollama_part(body, api, {field.get(k, k): v for k, v in said.items()})
    if reply.finish is not None:
        yield _ollama_done(body, api, reply)


def ollama_body(body: Mapping[str, Any], api: str, reply: Reply) -> dict[str, Any]:
    """The JSON of a whole Ollama reply (``"stream": false``): every part's fields in one."""
    said: dict[str, Any] = {}
    for part in _ollama_said(reply):
        for name, value in part.items():
            said[name] = said.get(name, "") + value if isinstance(value, str) else value
    if api != "ollama_chat":
        said = {"response" if k == "content" else k: v for k, v in said.items()}
    done = _ollama_done(body, api, reply)
    if api == "ollama_chat":
        return {**done, "message": {**done["message"], **said}}
    return {**done, **said}


# AWS Bedrock: Converse replies and ConverseStream events; InvokeModel with Anthropic bodies.
_BEDROCK_PATH = re.compile(
    r"/model/([^/]+)/(converse|converse-stream|invoke|invoke-with-response-stream)$"
)
_BEDROCK_STOPS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}
# Bedrock's error types by status (sent in ``x-amzn-ErrorType``; boto3 raises them by name).
_BEDROCK_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    503: "ServiceUnavailableException",
}


def _converse_blocks(reply: Reply, number: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        thought = {"text": reply.reasoning, "signature": "loopback"}
        blocks.append({"reasoningContent": {"reasoningText": thought}})
    if reply.content is not None:
        blocks.append({"text": reply.content})
    for i, call in enumerate(reply.tool_calls):
        use = {"toolUseId": call.id or f"tooluse_loopback_{number}_{i}", "name": call.name}
        blocks.append({"toolUse": {**use, "input": _parsed_arguments(call)}})
    return blocks


def _converse_usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    prompt = _prompt_words(body) + len(" ".join(_strings(body.get("system") or [])).split())
    completion = _completion_words(reply)
    return {"inputTokens": prompt, "outputTokens": completion, "totalTokens": prompt + completion}


def converse_body(body: Mapping[str, Any], reply: Reply, number: int) -> dict[str, Any]:
    """The JSON of a Bedrock Converse reply answering ``body`` with ``reply``."""
    return {
        "output": {"message": {"role": "assistant", "content": _converse_blocks(reply, number)}},
        "stopReason": _BEDROCK_STOPS.get(reply.finish or "stop", reply.finish),
        "usage": _converse_usage(body, reply),
        "metrics": {"latencyMs": 0},
    }


def converse_events(
    body: Mapping[str, Any], reply: Reply, number: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events of a Bedrock ConverseStream reply, as (``:event-type``, payload), in order."""
    yield "messageStart", {"role": "assistant"}
    for index, block in enumerate(_converse_blocks(reply, number)):
        at = {"contentBlockIndex": index}
        if "toolUse" in block:
            named = {k: block["toolUse"][k] for k in ("toolUseId", "name")}
            yield "contentBlockStart", {"start": {"toolUse": named}, **at}
        for delta in _converse_deltas(block):
            yield "contentBlockDelta", {"delta": delta, **at}
        yield "contentBlockStop", at
    if reply.finish is not None:
        yield "messageStop", {"stopReason": _BEDROCK_STOPS.get(reply.finish, reply.finish)}
        usage = _converse_usage(body, reply)
        yield "metadata", {"usage": usage, "metrics": {"latencyMs": 0}}


def _converse_deltas(block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "text" in block:
        yield from ({"text": piece} for piece in _pieces(block["text"]))
    elif "reasoningContent" in block:
        thought = block["reasoningContent"]["reasoningText"]
        yield from ({"reasoningContent": {"text": p}} for p in _pieces(thought["text"]))
        yield {"reasoningContent": {"signature": thought["signature"]}}
    else:
        given = block["toolUse"]["input"]
        text = given if isinstance(given, str) else json.dumps(given)
        yield from ({"toolUse": {"input": piece}} for piece in _pieces(text, size=8))


def _bedrock_frame(kind: str, payload: bytes, message: str = "event") -> bytes:
    """One event-stream frame as Bedrock frames its events."""
    from pytest_harness._wire import eventstream

    headers = (
        eventstream.Header(":event-type", 7, kind),
        eventstream.Header(":content-type", 7, "application/json"),
        eventstream.Header(":message-type", 7, message),
    )
    return eventstream.encode([eventstream.Frame(headers, payload)])


def bedrock_frames(path: str, body: Mapping[str, Any], reply: Reply, number: int) -> list[bytes]:
    """The frames of a Bedrock stream: ConverseStream's events, or (an invoke stream) the
    Anthropic events, each in a ``chunk`` frame as ``{"bytes": base64(event)}``."""
    if path.endswith("/converse-stream"):
        events = converse_events(body, reply, number)
        return [_bedrock_frame(kind, json.dumps(data).encode()) for kind, data in events]
    chunks = anthropic_events({**body, "model": _bedrock_model(path)}, reply, number)
    return [
        _bedrock_frame("chunk", json.dumps({"bytes": _base64(json.dumps(e))}).encode())
        for e in chunks
    ]


def _base64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


def _bedrock_model(path: str) -> str:
    found = _BEDROCK_PATH.search(path.partition("?")[0])
    return unquote(found[1]) if found else "loopback"


def _bedrock_error(reply: Reply) -> tuple[dict[str, Any], dict[str, str]]:
    """Bedrock's error body and its ``x-amzn-ErrorType`` header."""
    kind = _BEDROCK_ERRORS.get(reply.status, "InternalServerException")
    return {"message": reply.error}, {"x-amzn-ErrorType": kind, **reply.headers}


def _gemini_model(path: str) -> str:
    """The model a Gemini path names: ``…/models/<model>:generateContent``."""
    return path.partition("/models/")[2].partition(":")[0] or "loopback"


def _api(path: str) -> str:
    """Which wire format a request's path asks for."""
    route = path.partition("?")[0]
    if _BEDROCK_PATH.search(route):
        return "bedrock"
    if route.endswith("/responses"):
        return "responses"
    if route.endswith("/messages"):
        return "anthropic"
    if ":generateContent" in route or ":streamGenerateContent" in route:
        return "gemini"
    if route.endswith(("/api/chat", "/api/generate")):
        return "ollama_" + route.rpartition("/")[2]
    return "chat"


def _error_body(api: str, reply: Reply) -> dict[str, Any]:
    """An error body in the shape the format's SDK reads."""
    if api == "anthropic":
        kind = _ANTHROPIC_ERRORS.get(reply.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": reply.error}}
    if api == "gemini":
        status = _GOOGLE_STATUSES.get(reply.status, "UNKNOWN")
        return {"error": {"code": reply.status, "message": reply.error, "status": status}}
    if api.startswith("ollama"):
        return {"error": reply.error}
    return {"error": {"message": reply.error, "type": "scripted_error", "code": reply.status}}


class LoopbackServer:
    """A threaded model server on 127.0.0.1 and a free port, in the wire formats below.

    Script it with ``Reply`` values (plain, streamed, tool calls, think-only, empty, delayed,
    an error status, a malformed body, a stream cut off), queued in order (``queue``) or
    chosen by a handler that reads each request. The same replies answer in the format the
    request's path asks for:

    - ``POST …/chat/completions``: OpenAI Chat Completions (litellm, ``openai.OpenAI``,
      pydantic-ai's ``OpenAIChatModel``); base URL ``url``.
    - ``POST …/responses``: OpenAI Responses (``client.responses``, openai-agents' default
      model); base URL ``url``.
    - ``POST …/v1/messages``: Anthropic Messages (``anthropic.Anthropic(base_url=root)``).
    - ``POST …/models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``:
      Gemini (``google.genai.Client(http_options={"base_url": root})``), and Vertex AI's
      ``/v1beta1/projects/{p}/locations/{l}/publishers/google/models/{model}:…``
      (``vertexai=True``, the same ``base_url``).
    - ``POST /api/chat`` and ``/api/generate``: Ollama's own API, NDJSON-streamed unless the
      request says ``"stream": false`` (``ollama.Client(host=root)``); ``GET /api/tags``
      and ``/api/version`` answer too.
    - Azure OpenAI's routes, as OpenAI's formats: ``/openai/deployments/{d}/chat/completions
      ?api-version=…``, ``/openai/responses``, ``/openai/v1/…``
      (``openai.AzureOpenAI(azure_endpoint=root)``).
    - ``POST …/token`` with a form body: an OAuth 2 token endpoint answering an access token,
      for credentials whose ``token_uri`` is ``root + "/token"`` (google-auth's
      ``Credentials(refresh_token=…, token_uri=…)``, a ``service_account`` key file; an
      ``authorized_user`` file's is ignored by google-auth). Not a model request: not in
      ``requests``; its grant types are in ``grants``.
    - ``POST /model/{modelId}/converse``, ``/converse-stream``, ``/invoke`` and
      ``/invoke-with-response-stream``: AWS Bedrock (``boto3.client("bedrock-runtime",
      endpoint_url=root)``): Converse replies, ConverseStream events and (invoke) Anthropic
      Messages bodies, the streams in AWS event-stream frames; an error status is Bedrock's
      ``{"message": ...}`` with ``x-amzn-ErrorType`` (429: ``ThrottlingException``).

    A reply is streamed when the request says ``"stream": true`` (Gemini: when its path says
    ``:streamGenerateContent``; Bedrock: its ``-stream`` operations; Ollama: unless it says
    ``"stream": false``). Ids and timestamps are fixed: the same requests get the same
    bytes, run after run.

    Attributes:
        requests: Every request body received, in arrival order.
        paths: The path (and query) of each of those requests, in the same order.
        handler: Chooses the reply; by default the next queued reply, else ``Reply()``.
        grants: The ``grant_type`` of each token request (``POST …/token``), in order.
    """

    def __init__(self, handler: ReplyHandler | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.grants: list[str] = []
        self.handler: ReplyHandler = handler or self._next_queued
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The OpenAI base URL, ending in ``/v1`` (Chat Completions and Responses)."""
        return f"{self.root}/v1"

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT``: the base URL the Anthropic and Gemini SDKs take."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def model(self) -> str:
        """A litellm model name that routes to this server (with ``params``)."""
        return "openai/loopback"

    @property
    def params(self) -> dict[str, Any]:
        """Keyword arguments that point a litellm call at this server."""
        return {"api_base": self.url, "api_key": "loopback-not-a-secret"}

    def queue(self, *replies: Reply) -> LoopbackServer:
        """Answer the next requests with these replies, in order."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def reset(self) -> list[Reply]:
        """Forget the requests seen and the queued replies; return the replies never used."""
        with self._lock:
            unused = list(self._queue)
            self._queue.clear()
            self.requests.clear()
            self.paths.clear()
            self.grants.clear()
        return unused

    def _next_queued(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            return self._queue.popleft() if self._queue else Reply()

    def _receive(self, body: dict[str, Any], path: str) -> int:
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
            return len(self.requests)

    def start(self) -> LoopbackServer:
        # A short poll interval: stop() waits for the serving loop to notice, 0.5 s by default.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 drops the rest of a burst of new connections (a panel
    # of 16 judges on a fresh event loop), and their clients retry a second later.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when the client hung up first (it timed out, or its call was cancelled)."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _reply_body(api: str, body: dict[str, Any], reply: Reply, number: int) -> dict[str, Any]:
    """A whole reply in the format of ``api`` (not Gemini's: its model is in the path)."""
    make = {"responses": responses_body, "anthropic": anthropic_body}.get(api, completion_body)
    return make(body, reply, number)


def _stream_events(api: str, body: dict[str, Any], reply: Reply, number: int) -> list[bytes]:
    """A streamed reply's server-sent events; typed formats name each event."""
    if api == "responses":
        return [_event(e, named=True) for e in responses_events(body, reply, number)]
    if api == "anthropic":
        return [_event(e, named=True) for e in anthropic_events(body, reply, number)]
    end = [b"data: [DONE]\n\n"] if reply.finish is not None else []  # [DONE]: it finished
    return [*(_event(c) for c in stream_chunks(body, reply, number)), *end]


def _event(data: dict[str, Any], *, named: bool = False) -> bytes:
    name = f"event: {data['type']}\n" if named else ""
    return f"{name}data: {json.dumps(data)}\n\n".encode()


def _make_handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    owner: LoopbackServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    disable_nagle_algorithm = True  # else every kept-alive request stalls ~40 ms

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""

    def do_GET(self) -> None:
        route = self.path.partition("?")[0]
        if route.endswith("/api/tags"):  # Ollama's models
            self._send(200, {"models": [{"name": "loopback", "model": "loopback"}]})
        elif route.endswith("/api/version"):
            self._send(200, {"version": "0.12.0"})
        else:
            self._send(200, {"object": "list", "data": [{"id": "loopback", "object": "model"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = "form-urlencoded" in (self.headers.get("Content-Type") or "")
        if form and self.path.partition("?")[0].endswith("/token"):
            self._token(self.rfile.read(length))
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request body is not JSON"}})
            return
        number = self.owner._receive(body, self.path)
        reply = self.owner.handler(body)
        if reply.delay:
            threading.Event().wait(reply.delay)
        api = _api(self.path)
        if api == "bedrock":
            self._bedrock(body, reply, number)
        elif reply.status >= 400:
            self._send(reply.status, _error_body(api, reply), reply.headers)
        elif reply.raw is not None:
            raw = reply.raw.encode() if isinstance(reply.raw, str) else reply.raw
            self._send_bytes(200, raw, "application/json", reply.headers)
        elif api == "gemini" and ":streamGenerateContent" in self.path:
            chunks = gemini_chunks(body, reply, number, _gemini_model(self.path))
            self._stream([_event(chunk) for chunk in chunks], reply)
        elif api == "gemini":
            model = _gemini_model(self.path)
            self._send(200, gemini_body(body, reply, number, model), reply.headers)
        elif api.startswith("ollama"):
            self._ollama(api, body, reply)
        elif body.get("stream"):
            self._stream(_stream_events(api, body, reply, number), reply)
        else:
            self._send(200, _reply_body(api, body, reply, number), reply.headers)

    def _ollama(self, api: str, body: dict[str, Any], reply: Reply) -> None:
        """An Ollama reply: NDJSON parts unless the request says ``"stream": false``."""
        if body.get("stream", True) is False:
            self._send(200, ollama_body(body, api, reply), reply.headers)
            return
        lines = [(json.dumps(part) + "\n").encode() for part in ollama_parts(body, api, reply)]
        self._stream(lines, reply, "application/x-ndjson")

    def _token(self, form: bytes) -> None:
        """An OAuth 2 token request (RFC 6749, section 4): a fixed token, one hour long."""
        grant = parse_qs(form.decode("utf-8", "replace")).get("grant_type", [""])[0]
        if not grant:
            self._send(400, {"error": "invalid_request", "error_description": "no grant_type"})
            return
        self.owner.grants.append(grant)
        token = {"access_token": _LOOPBACK_TOKEN, "token_type": "Bearer", "expires_in": 3600}
        self._send(200, token)

    def _bedrock(self, body: dict[str, Any], reply: Reply, number: int) -> None:
        """Answer a Bedrock runtime request: its four operations, by the path."""
        path = self.path.partition("?")[0]
        if reply.status >= 400:
            error, headers = _bedrock_error(reply)
            self._send(reply.status, error, headers)
        elif reply.raw is not None:
            raw = reply.raw.encode() if isinstance(reply.raw, str) else reply.raw
            self._send_bytes(200, raw, "application/json", reply.headers)
        elif path.endswith(("/converse-stream", "/invoke-with-response-stream")):
            frames = bedrock_frames(path, body, reply, number)
            self._stream(frames, reply, "application/vnd.amazon.eventstream")
        elif path.endswith("/converse"):
            self._send(200, converse_body(body, reply, number), reply.headers)
        else:
            asked = {**body, "model": _bedrock_model(path)}
            self._send(200, anthropic_body(asked, reply, number), reply.headers)

    def _stream(self, events: list[bytes], reply: Reply, ctype: str = "text/event-stream") -> None:
        payload = b"".join(events)
        if reply.cut_after is None:
            self._send_bytes(200, payload, ctype, reply.headers)
            return
        # Promise the whole body, send part of it, then drop the connection.
        self._headers(200, len(payload), ctype, reply.headers)
        self.wfile.write(b"".join(events[: reply.cut_after]))
        self.wfile.flush()
        self.close_connection = True

    def _send(self, status: int, data: Any, headers: Mapping[str, str] = {}) -> None:
        self._send_bytes(status, json.dumps(data).encode(), "application/json", headers)

    def _send_bytes(
        self, status: int, payload: bytes, ctype: str, headers: Mapping[str, str]
    ) -> None:
        self._headers(status, len(payload), ctype, headers)
        self.wfile.write(payload)

    def _headers(self, status: int, length: int, ctype: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
