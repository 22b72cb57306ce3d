"""Model responses in recorded HTTP traffic: which interaction is a chat reply, and what it says.

``recognise`` reads one interaction (request URL and body, response status, headers, body)
and, when it holds a successful reply of a known chat API, plain or streamed, returns the API,
the provider and model (for price look-ups) and its ``ModelResponse``. Known: OpenAI Chat
Completions (via ``read_completion`` / ``read_stream``) and Responses, Anthropic Messages,
Gemini generateContent. It goes by the body's shape; the URL only names a Gemini model.

A cut-off stream is recognised as ``interrupted``, an empty reply as empty (the caller judges
both). Anything else is None: an error status or body, embeddings, a model list, malformed
JSON or SSE, a field of the wrong type. It never raises, never prices (``cost`` None), never
times (``latency_s`` 0). It imports the standard library, ``sse`` and ``pytest_harness.response``
only (no vcrpy, litellm or httpx): it runs on every recorded or replayed interaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from pytest_harness.cassettes.sse import decode, is_event_stream, json_events, loads
from pytest_harness.response import ModelResponse, ToolCall, Usage, read_completion, read_stream

__all__ = ["Recognised", "recognise"]

# (api, response, the model its body names or "")
_Found: TypeAlias = "tuple[str, ModelResponse, str]"
_Events: TypeAlias = "list[tuple[str, dict[str, Any]]]"

# Each field read_completion / read_stream read, wherever it sits, and its type when present.
_CHAT_FIELDS: dict[str, type] = {
    **dict.fromkeys(("choices", "tool_calls"), list),
    **dict.fromkeys(("usage", "function"), dict),
    **dict.fromkeys(
        ("content", "reasoning_content", "finish_reason", "id", "name", "arguments"), str
    ),
    **dict.fromkeys(("index", "prompt_tokens", "completion_tokens", "total_tokens"), int),
}
_ANTHROPIC_EVENTS = {"message_start", "content_block_start", "content_block_delta", "message_delta"}
_ANTHROPIC_DELTAS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "json"}
_RESPONSES_FINAL = {"response.completed", "response.incomplete", "response.failed"}
_RESPONSES_REASONING = {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}


@dataclass(frozen=True, slots=True)
class Recognised:
    """A model response found in one HTTP interaction.

    Attributes:
        api: ``openai.chat``, ``openai.responses``, ``anthropic.messages`` or ``gemini.generate``.
        provider: ``openai``, ``anthropic`` or ``gemini``.
        model: named by the response body, else the request body, else (Gemini) the URL; or "".
        response: the reply, with that model (``cost`` None, ``latency_s`` 0).
        streamed: whether it came as a stream (SSE, or Gemini's JSON array).
    """

    api: str
    provider: str
    model: str
    response: ModelResponse
    streamed: bool


def recognise(
    uri: str,
    request_body: bytes | str | None,
    status: int,
    headers: Mapping[str, Any],
    body: bytes | str | None,
) -> Recognised | None:
    """The model response in one interaction, or None when it holds none; never raises.

    ``headers`` are the response's (name -> list of values, or a value; any case); ``body``
    is the response body, already decompressed.
    """
    text = decode(body)
    if not isinstance(status, int) or not 200 <= status < 300 or text is None:
        return None
    if is_event_stream(headers, text):
        found, streamed = _from_events(json_events(text)), True
    else:
        data = loads(text)
        found, streamed = _from_json(data), isinstance(data, list)
    if found is None:
        return None
    api, response, model = found
    model = model or _str(_dict(loads(decode(request_body))).get("model"))
    model = model or (_gemini_model(uri) if api == "gemini.generate" else "")
    response = replace(
        response,
        content=response.content or None,
        reasoning=response.reasoning or None,
        finish_reason=response.finish_reason or None,
        model=model,
        latency_s=0.0,
    )
    return Recognised(api, api.partition(".")[0], model, response, streamed)


def _from_json(data: Any) -> _Found | None:
    if isinstance(data, list):
        gemini = any(isinstance(c, dict) and "candidates" in c for c in data)
        return _gemini(data, streamed=True) if gemini else None
    if not isinstance(data, dict):
        return None
    if "candidates" in data:
        return _gemini([data], streamed=False)
    if data.get("type") == "message":
        return _anthropic(data, stopped=True)
    if data.get("object") == "response":
        return _responses(data)
    if data.get("object") == "chat.completion" or "choices" in data:
        return _chat(data)
    return None


def _from_events(found: list[tuple[str, Any]]) -> _Found | None:
    events: _Events = [(name, data) for name, data in found if isinstance(data, dict)]
    if not events or len(events) < len(found):
        return None
    kinds = {_kind(name, data) for name, data in events}
    if any(kind.startswith("response.") for kind in kinds):
        return _responses_stream(events)
    if kinds & _ANTHROPIC_EVENTS:
        return _anthropic_stream(events)
    chunks = [data for _, data in events]
    if any("choices" in chunk for chunk in chunks):
        return _chat_stream(chunks)
    return _gemini(chunks, streamed=True) if any("candidates" in c for c in chunks) else None


# OpenAI Chat Completions, once read_completion / read_stream can trust the types.
def _chat(data: dict[str, Any]) -> _Found | None:
    if not data.get("choices") or not _chat_ok(data, "message"):
        return None
    response = read_completion(data, model="", cost=lambda _: None, started=0.0)
    return "openai.chat", response, _str(data.get("model"))


def _chat_stream(chunks: list[dict[str, Any]]) -> _Found | None:
    if not all(_chat_ok(chunk, "delta") for chunk in chunks):
        return None
    finish = None
    for chunk in chunks:
        finish = (chunk.get("choices") or [{}])[0].get("finish_reason") or finish
    response = read_stream(chunks, finish_reason=finish, model="", cost=lambda _: None, started=0)
    model = next((m for c in reversed(chunks) if (m := _str(c.get("model")))), "")
    return "openai.chat", response, model


def _chat_ok(data: dict[str, Any], key: str) -> bool:
    """Whether a completion (key "message") or chunk ("delta") has its fields' types."""
    nodes: list[Any] = [data, data.get("usage") or {}]
    for choice in (data.get("choices") or []) if _chat_typed(data) else [None]:
        message = _dict(choice).get(key) or ({} if key == "delta" else None)
        calls = (_dict(message).get("tool_calls") or []) if _chat_typed(message) else [None]
        nodes += [choice, message, *calls, *(_dict(c).get("function") or {} for c in calls)]
    return all(_chat_typed(node) for node in nodes)


def _chat_typed(node: Any) -> bool:
    return isinstance(node, dict) and all(
        node.get(field) is None or isinstance(node[field], kind)
        for field, kind in _CHAT_FIELDS.items()
    )


# OpenAI Responses API.
def _responses(data: dict[str, Any]) -> _Found | None:
    output = data.get("output")
    if not isinstance(output, list):
        return None
    items = _dicts(output)
    parts = [p for i in items if i.get("type") == "message" for p in _dicts(i.get("content"))]
    reasoning = [_reasoning_item(i) for i in items if i.get("type") == "reasoning"]
    calls = [i for i in items if i.get("type") == "function_call"]
    finish, interrupted = _responses_finish(data, bool(calls))
    usage = _dict(data.get("usage"))
    response = ModelResponse(
        content="".join(_str(p.get("text")) for p in parts if p.get("type") == "output_text"),
        reasoning="\n\n".join(text for text in reasoning if text),
        tool_calls=tuple(
            _tool_call(n, c.get("call_id") or c.get("id"), c.get("name"), c.get("arguments"))
            for n, c in enumerate(calls)
        ),
        finish_reason=finish,
        interrupted=interrupted,
        usage=_usage(*(usage.get(k) for k in ("input_tokens", "output_tokens", "total_tokens"))),
    )
    return "openai.responses", response, _str(data.get("model"))


def _reasoning_item(item: dict[str, Any]) -> str:
    """The item's full reasoning text when it carries it, else its summary."""
    full = [_str(p.get("text")) for p in _dicts(item.get("content"))]
    summary = [_str(p.get("text")) for p in _dicts(item.get("summary"))]
    return "\n\n".join(text for text in (full if any(full) else summary) if text)


def _responses_finish(data: dict[str, Any], calls: bool) -> tuple[str | None, bool]:
    """(finish reason, interrupted) by the response's status."""
    status = _str(data.get("status"))
    if status == "completed":
        return ("tool_calls" if calls else "stop"), False
    if status == "incomplete":
        return _str(_dict(data.get("incomplete_details")).get("reason")) or status, False
    return status or None, True


def _responses_stream(events: _Events) -> _Found | None:
    """The final event's response; without one, what the deltas and finished items say."""
    for name, data in reversed(events):
        if _kind(name, data) in _RESPONSES_FINAL and isinstance(data.get("response"), dict):
            return _responses(data["response"])
    kinds = [(_kind(name, data), data) for name, data in events]
    created = next((_dict(d.get("response")) for k, d in kinds if k == "response.created"), {})
    done = [d.get("item") for k, d in kinds if k == "response.output_item.done"]
    found = _responses({**created, "status": "", "output": done})
    if found is None:
        return None
    api, response, model = found
    content = "".join(_str(d.get("delta")) for k, d in kinds if k == "response.output_text.delta")
    reasoning = "".join(_str(d.get("delta")) for k, d in kinds if k in _RESPONSES_REASONING)
    return api, replace(response, content=content, reasoning=reasoning), model


# Anthropic Messages.
def _anthropic(data: dict[str, Any], *, stopped: bool) -> _Found | None:
    blocks = data.get("content")
    if not isinstance(blocks, list):
        return None
    blocks = _dicts(blocks)
    thinking = [_str(b.get("thinking")) for b in blocks if b.get("type") == "thinking"]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    stop = _str(data.get("stop_reason")) or None
    usage = _dict(data.get("usage"))
    prompt = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    response = ModelResponse(
        content="".join(_str(b.get("text")) for b in blocks if b.get("type") == "text"),
        reasoning="\n\n".join(text for text in thinking if text),
        tool_calls=tuple(
            _tool_call(n, c.get("id"), c.get("name"), c["json"] if "json" in c else c.get("input"))
            for n, c in enumerate(calls)
        ),
        finish_reason=stop,
        interrupted=not stopped or stop is None,
        usage=_usage(sum(_int(usage.get(k)) for k in prompt), usage.get("output_tokens"), None),
    )
    return "anthropic.messages", response, _str(data.get("model"))


def _anthropic_stream(events: _Events) -> _Found | None:
    """The message the events build up; without ``message_stop`` it was interrupted."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    for name, data in events:
        kind, delta = _kind(name, data), _dict(data.get("delta"))
        if kind == "message_start":
            message = _dict(data.get("message"))
            usage.update(_dict(message.get("usage")))
        elif kind == "content_block_start":
            blocks[_int(data.get("index"))] = dict(_dict(data.get("content_block")))
        elif kind == "content_block_delta":
            _add_delta(blocks.setdefault(_int(data.get("index")), {}), delta)
        elif kind == "message_delta":
            message = {**message, "stop_reason": delta.get("stop_reason")}
            usage.update(_dict(data.get("usage")))
    stopped = any(_kind(name, data) == "message_stop" for name, data in events)
    content = [blocks[i] for i in sorted(blocks)]
    return _anthropic({**message, "content": content, "usage": usage}, stopped=stopped)


def _add_delta(block: dict[str, Any], delta: dict[str, Any]) -> None:
    """Append a content_block_delta to its block (tool input JSON gathers under ``json``)."""
    field = _ANTHROPIC_DELTAS.get(_str(delta.get("type")))
    if field:
        source = "partial_json" if field == "json" else field
        block[field] = _str(block.get(field)) + _str(delta.get(source))


# Gemini generateContent / streamGenerateContent.
def _gemini(chunks: Sequence[Any], *, streamed: bool) -> _Found | None:
    """One response, or the partial responses of a stream added up."""
    parts: list[dict[str, Any]] = []
    finish = ""
    for chunk in chunks:
        read = _gemini_chunk(chunk)
        if read is None:
            return None
        parts, finish = parts + read[0], read[1] or finish
    usage = next((u for c in reversed(chunks) if (u := _dict(c.get("usageMetadata")))), {})
    text = [p for p in parts if isinstance(p.get("text"), str)]
    calls = [c for p in parts if (c := _dict(p.get("functionCall")))]
    completion = sum(_int(usage.get(k)) for k in ("candidatesTokenCount", "thoughtsTokenCount"))
    response = ModelResponse(
        content="".join(p["text"] for p in text if p.get("thought") is not True),
        reasoning="".join(p["text"] for p in text if p.get("thought") is True),
        tool_calls=tuple(
            _tool_call(n, c.get("id"), c.get("name"), c.get("args")) for n, c in enumerate(calls)
        ),
        finish_reason=finish or None,
        interrupted=streamed and not finish,
        usage=_usage(usage.get("promptTokenCount"), completion, usage.get("totalTokenCount")),
    )
    model = next((m for c in reversed(chunks) if (m := _str(c.get("modelVersion")))), "")
    return "gemini.generate", response, model


def _gemini_chunk(chunk: Any) -> tuple[list[dict[str, Any]], str] | None:
    """(parts, finish reason) of a response's first candidate; None when mistyped."""
    candidates = (chunk.get("candidates") or [{}]) if isinstance(chunk, dict) else None
    if not isinstance(candidates, list) or not isinstance(candidates[0], dict):
        return None
    content = candidates[0].get("content") or {}
    parts = (content.get("parts") or []) if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return None
    return _dicts(parts), _str(candidates[0].get("finishReason"))


def _gemini_model(uri: str) -> str:
    """The model a Gemini URL names: ``…/models/<model>:generateContent``."""
    path = uri.partition("?")[0] if isinstance(uri, str) else ""
    _, found, rest = path.partition("/models/")
    return rest.partition(":")[0].partition("/")[0] if found else ""


# Plain helpers: a value is read only when it has the expected type.
def _tool_call(index: int, call_id: Any, name: Any, raw: Any) -> ToolCall:
    text = raw if isinstance(raw, str) else "" if raw is None else json.dumps(raw)
    parsed = loads(text) if text.strip() else {}
    return ToolCall(
        id=_str(call_id) or f"call_{index}",
        name=_str(name),
        arguments=parsed if isinstance(parsed, dict) else None,
        raw_arguments=text,
    )


def _usage(prompt: Any, completion: Any, total: Any) -> Usage:
    p, c = _int(prompt), _int(completion)
    return Usage(prompt_tokens=p, completion_tokens=c, total_tokens=_int(total) or p + c)


def _kind(name: str, data: dict[str, Any]) -> str:
    return _str(data.get("type")) or name


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
