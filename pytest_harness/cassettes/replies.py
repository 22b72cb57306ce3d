"""Reading the replies of the Responses, Anthropic Messages and Gemini APIs into ``ModelResponse``.

``traffic`` finds which API a recorded body speaks and hands it here: ``read_responses`` and
``read_responses_stream`` read OpenAI Responses (a final ``response.*`` event's response, or
what the deltas and finished items of a cut-off stream say), ``read_anthropic`` and
``read_anthropic_stream`` Anthropic Messages (the stream's events built up into one message),
``read_gemini`` Gemini generateContent, plain or its streamed partial responses added up.
OpenAI Chat Completions are ``pytest_harness.response``'s to read.

Each returns ``Found`` (api, response, the model its body names or ""), or None when the body
lacks the list its reply is made of. A value of the wrong type reads as empty (``as_str``,
``as_int``, ``as_dict``, ``as_dicts``, shared with ``traffic``); nothing raises. The response
is unpriced and untimed. Standard library, ``sse`` and ``pytest_harness.response`` only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeAlias

from pytest_harness.cassettes.sse import loads
from pytest_harness.response import ModelResponse, ToolCall, Usage

__all__ = [
    "Events",
    "Found",
    "as_dict",
    "as_dicts",
    "as_int",
    "as_str",
    "event_kind",
    "read_anthropic",
    "read_anthropic_stream",
    "read_gemini",
    "read_responses",
    "read_responses_stream",
]

# (api, response, the model its body names or "")
Found: TypeAlias = "tuple[str, ModelResponse, str]"
# A stream's events: (event name, its JSON object).
Events: TypeAlias = "list[tuple[str, dict[str, Any]]]"

_ANTHROPIC_DELTAS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "json"}
_RESPONSES_FINAL = {"response.completed", "response.incomplete", "response.failed"}
_RESPONSES_REASONING = {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}


# OpenAI Responses API.
def read_responses(data: dict[str, Any]) -> Found | None:
    """A Responses API response object: its output items, status and usage."""
    output = data.get("output")
    if not isinstance(output, list):
        return None
    items = as_dicts(output)
    parts = [p for i in items if i.get("type") == "message" for p in as_dicts(i.get("content"))]
    reasoning = [_reasoning_item(i) for i in items if i.get("type") == "reasoning"]
    calls = [i for i in items if i.get("type") == "function_call"]
    finish, interrupted = _responses_finish(data, bool(calls))
    usage = as_dict(data.get("usage"))
    response = ModelResponse(
        content="".join(as_str(p.get("text")) for p in parts if p.get("type") == "output_text"),
        reasoning="\n\n".join(text for text in reasoning if text),
        tool_calls=tuple(
            _tool_call(n, c.get("call_id") or c.get("id"), c.get("name"), c.get("arguments"))
            for n, c in enumerate(calls)
        ),
        finish_reason=finish,
        interrupted=interrupted,
        usage=_usage(*(usage.get(k) for k in ("input_tokens", "output_tokens", "total_tokens"))),
    )
    return "openai.responses", response, as_str(data.get("model"))


def _reasoning_item(item: dict[str, Any]) -> str:
    """The item's full reasoning text when it carries it, else its summary."""
    full = [as_str(p.get("text")) for p in as_dicts(item.get("content"))]
    summary = [as_str(p.get("text")) for p in as_dicts(item.get("summary"))]
    return "\n\n".join(text for text in (full if any(full) else summary) if text)


def _responses_finish(data: dict[str, Any], calls: bool) -> tuple[str | None, bool]:
    """(finish reason, interrupted) by the response's status."""
    status = as_str(data.get("status"))
    if status == "completed":
        return ("tool_calls" if calls else "stop"), False
    if status == "incomplete":
        return as_str(as_dict(data.get("incomplete_details")).get("reason")) or status, False
    return status or None, True


def read_responses_stream(events: Events) -> Found | None:
    """The final event's response; without one, what the deltas and finished items say."""
    for name, data in reversed(events):
        if event_kind(name, data) in _RESPONSES_FINAL and isinstance(data.get("response"), dict):
            return read_responses(data["response"])
    kinds = [(event_kind(name, data), data) for name, data in events]
    created = next((as_dict(d.get("response")) for k, d in kinds if k == "response.created"), {})
    done = [d.get("item") for k, d in kinds if k == "response.output_item.done"]
    found = read_responses({**created, "status": "", "output": done})
    if found is None:
        return None
    api, response, model = found
    content = "".join(as_str(d.get("delta")) for k, d in kinds if k == "response.output_text.delta")
    reasoning = "".join(as_str(d.get("delta")) for k, d in kinds if k in _RESPONSES_REASONING)
    return api, replace(response, content=content, reasoning=reasoning), model


# Anthropic Messages.
def read_anthropic(data: dict[str, Any], *, stopped: bool) -> Found | None:
    """A Messages reply: its content blocks; interrupted unless ``stopped`` with a reason."""
    blocks = data.get("content")
    if not isinstance(blocks, list):
        return None
    blocks = as_dicts(blocks)
    thinking = [as_str(b.get("thinking")) for b in blocks if b.get("type") == "thinking"]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    stop = as_str(data.get("stop_reason")) or None
    usage = as_dict(data.get("usage"))
    prompt = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    response = ModelResponse(
        content="".join(as_str(b.get("text")) for b in blocks if b.get("type") == "text"),
        reasoning="\n\n".join(text for text in thinking if text),
        tool_calls=tuple(
            _tool_call(n, c.get("id"), c.get("name"), c["json"] if "json" in c else c.get("input"))
            for n, c in enumerate(calls)
        ),
        finish_reason=stop,
        interrupted=not stopped or stop is None,
        usage=_usage(sum(as_int(usage.get(k)) for k in prompt), usage.get("output_tokens"), None),
    )
    return "anthropic.messages", response, as_str(data.get("model"))


def read_anthropic_stream(events: Events) -> Found | None:
    """The message the events build up; without ``message_stop`` it was interrupted."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    for name, data in events:
        kind, delta = event_kind(name, data), as_dict(data.get("delta"))
        if kind == "message_start":
            message = as_dict(data.get("message"))
            usage.update(as_dict(message.get("usage")))
        elif kind == "content_block_start":
            blocks[as_int(data.get("index"))] = dict(as_dict(data.get("content_block")))
        elif kind == "content_block_delta":
            _add_delta(blocks.setdefault(as_int(data.get("index")), {}), delta)
        elif kind == "message_delta":
            message = {**message, "stop_reason": delta.get("stop_reason")}
            usage.update(as_dict(data.get("usage")))
    stopped = any(event_kind(name, data) == "message_stop" for name, data in events)
    content = [blocks[i] for i in sorted(blocks)]
    return read_anthropic({**message, "content": content, "usage": usage}, stopped=stopped)


def _add_delta(block: dict[str, Any], delta: dict[str, Any]) -> None:
    """Append a content_block_delta to its block (tool input JSON gathers under ``json``)."""
    field = _ANTHROPIC_DELTAS.get(as_str(delta.get("type")))
    if field:
        source = "partial_json" if field == "json" else field
        block[field] = as_str(block.get(field)) + as_str(delta.get(source))


# Gemini generateContent / streamGenerateContent.
def read_gemini(chunks: Sequence[Any], *, streamed: bool) -> Found | None:
    """One response, or the partial responses of a stream added up."""
    parts: list[dict[str, Any]] = []
    finish = ""
    for chunk in chunks:
        read = _gemini_chunk(chunk)
        if read is None:
            return None
        parts, finish = parts + read[0], read[1] or finish
    usage = next((u for c in reversed(chunks) if (u := as_dict(c.get("usageMetadata")))), {})
    text = [p for p in parts if isinstance(p.get("text"), str)]
    calls = [c for p in parts if (c := as_dict(p.get("functionCall")))]
    completion = sum(as_int(usage.get(k)) for k in ("candidatesTokenCount", "thoughtsTokenCount"))
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
    model = next((m for c in reversed(chunks) if (m := as_str(c.get("modelVersion")))), "")
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
    return as_dicts(parts), as_str(candidates[0].get("finishReason"))


# A reply's parts, as ``pytest_harness.response`` holds them.
def _tool_call(index: int, call_id: Any, name: Any, raw: Any) -> ToolCall:
    """A tool call whose arguments come as JSON text or as an object."""
    text = raw if isinstance(raw, str) else "" if raw is None else json.dumps(raw)
    parsed = loads(text) if text.strip() else {}
    return ToolCall(
        id=as_str(call_id) or f"call_{index}",
        name=as_str(name),
        arguments=parsed if isinstance(parsed, dict) else None,
        raw_arguments=text,
    )


def _usage(prompt: Any, completion: Any, total: Any) -> Usage:
    p, c = as_int(prompt), as_int(completion)
    return Usage(prompt_tokens=p, completion_tokens=c, total_tokens=as_int(total) or p + c)


# Typed reads, shared with ``traffic``: a value is read only when it has the expected type.
def event_kind(name: str, data: dict[str, Any]) -> str:
    """An event's kind: its JSON ``type``, else its SSE event name."""
    return as_str(data.get("type")) or name


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
