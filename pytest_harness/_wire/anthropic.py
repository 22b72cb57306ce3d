"""Anthropic Messages (``/v1/messages``): its requests, replies and streams."""

from __future__ import annotations

from typing import Any

from pytest_harness._model.response import ModelResponse
from pytest_harness._wire._json import as_dict, as_dicts, as_int, as_str
from pytest_harness._wire._values import (
    Asked,
    Events,
    Found,
    SentResult,
    Turn,
    call_text,
    event_kind,
    joined,
    names,
    parts_text,
    refused,
    reply_format,
    tool_call,
    usage,
)

_API = "anthropic.messages"

# The events only an Anthropic stream sends (by them a stream is told to be one).
EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta", "message_delta"})
# Each delta's type, and the block field its text adds to (tool input JSON under ``json``).
_DELTAS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "json"}
_REFUSED = frozenset({"refusal"})  # the stop_reason of a call the model refused
_PROMPT = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def read_request(data: dict[str, Any]) -> Asked:
    """``system``, then ``messages`` (text, tool_use and tool_result blocks; thinking blocks
    carry no text), and ``tools``."""
    messages = as_dicts(data.get("messages"))
    # Structured outputs: ``output_config.format`` (``output_format`` in the beta).
    wanted = as_dict(as_dict(data.get("output_config")).get("format") or data.get("output_format"))
    return Asked(
        instructions=parts_text(data.get("system")),
        turns=tuple(map(_turn, messages)),
        tools=names([as_str(t.get("name")) for t in as_dicts(data.get("tools"))]),
        results=_results(messages),
        **reply_format(wanted.get("type"), wanted.get("schema")),
    )


def _turn(message: dict[str, Any]) -> Turn:
    """A message; one that sends tool results back is a ``tool`` turn."""
    role = as_str(message.get("role")) or "?"
    content = message.get("content")
    said = [as_str(content)]
    for block in as_dicts(content):
        kind = as_str(block.get("type"))
        if kind == "tool_use":
            said.append(call_text(block.get("name"), block.get("input")))
        elif kind == "tool_result":
            role = "tool"
            said.append(parts_text(block.get("content")))
        else:
            said.append(as_str(block.get("text")))
    return Turn(role=role, text=joined(said))


def _results(messages: list[dict[str, Any]]) -> tuple[SentResult, ...]:
    """``tool_result`` blocks, named by the ``tool_use`` block of their ``tool_use_id``."""
    blocks = [b for m in messages for b in as_dicts(m.get("content"))]
    called = {
        as_str(b.get("id")): as_str(b.get("name")) for b in blocks if b.get("type") == "tool_use"
    }
    return tuple(
        SentResult(
            call_id=as_str(b.get("tool_use_id")) or None,
            name=called.get(as_str(b.get("tool_use_id")), ""),
            text=parts_text(b.get("content")),
            error=b.get("is_error") is True,
        )
        for b in blocks
        if b.get("type") == "tool_result"
    )


def read_reply(data: Any) -> Found | None:
    """A message, as a reply sends it whole: its stop reason says it finished."""
    return _message(as_dict(data), stopped=True)


def read_events(events: Events) -> Found | None:
    """The message the events build up; without ``message_stop`` it was interrupted."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    counted: dict[str, Any] = {}
    for name, data in events:
        kind, delta = event_kind(name, data), as_dict(data.get("delta"))
        if kind == "message_start":
            message = as_dict(data.get("message"))
            counted.update(as_dict(message.get("usage")))
        elif kind == "content_block_start":
            blocks[as_int(data.get("index"))] = dict(as_dict(data.get("content_block")))
        elif kind == "content_block_delta":
            _add_delta(blocks.setdefault(as_int(data.get("index")), {}), delta)
        elif kind == "message_delta":
            message = {**message, "stop_reason": delta.get("stop_reason")}
            counted.update(as_dict(data.get("usage")))
    stopped = any(event_kind(name, data) == "message_stop" for name, data in events)
    content = [blocks[i] for i in sorted(blocks)]
    return _message({**message, "content": content, "usage": counted}, stopped=stopped)


def _message(data: dict[str, Any], *, stopped: bool) -> Found | None:
    """A message's content blocks; interrupted unless ``stopped`` with a reason."""
    blocks = data.get("content")
    if not isinstance(blocks, list):
        return None
    blocks = as_dicts(blocks)
    thinking = [as_str(b.get("thinking")) for b in blocks if b.get("type") == "thinking"]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    stop = as_str(data.get("stop_reason")) or None
    counted = as_dict(data.get("usage"))
    response = ModelResponse(
        content="".join(as_str(b.get("text")) for b in blocks if b.get("type") == "text") or None,
        reasoning="\n\n".join(text for text in thinking if text) or None,
        tool_calls=tuple(
            tool_call(n, c.get("id"), c.get("name"), c["json"] if "json" in c else c.get("input"))
            for n, c in enumerate(calls)
        ),
        finish_reason=stop,
        interrupted=not stopped or stop is None,
        usage=usage(
            sum(as_int(counted.get(k)) for k in _PROMPT),
            counted.get("output_tokens"),
            None,
            counted.get("cache_read_input_tokens"),
            counted.get("cache_creation_input_tokens"),
        ),
        refusal=refused("stop_reason", stop, _REFUSED),
    )
    return _API, response, as_str(data.get("model"))


def _add_delta(block: dict[str, Any], delta: dict[str, Any]) -> None:
    """Append a content_block_delta to its block (tool input JSON gathers under ``json``)."""
    field = _DELTAS.get(as_str(delta.get("type")))
    if field:
        source = "partial_json" if field == "json" else field
        block[field] = as_str(block.get(field)) + as_str(delta.get(source))
