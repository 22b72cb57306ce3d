"""AWS Bedrock's runtime API (``/model/{modelId}/{operation}``): Converse and ConverseStream
read as ``bedrock.converse``; InvokeModel and InvokeModelWithResponseStream carry the model's
own body (Anthropic Messages: read as ``anthropic.messages``; Amazon Nova: Converse's shape).

What is read:

- a Converse reply: ``output.message.content`` (``text``, ``toolUse`` {toolUseId, name,
  input} as tool calls, ``reasoningContent.reasoningText.text`` as reasoning), ``stopReason``
  (``guardrail_intervened`` and ``content_filtered`` are refusals), ``usage`` (inputTokens,
  outputTokens, totalTokens, cacheReadInputTokens, cacheWriteInputTokens);
- a ConverseStream: its event-stream frames (``eventstream``), named by ``:event-type``
  (messageStart, contentBlockStart, contentBlockDelta, contentBlockStop, messageStop,
  metadata), which add up to the same reply; without ``messageStop`` it was interrupted;
- an InvokeModelWithResponseStream: its ``chunk`` frames, each ``{"bytes": base64(event)}``,
  the model's own stream events (Anthropic's);
- a Converse request: ``system`` [{text}], ``messages`` (text, toolUse and toolResult
  blocks: a ``toolResult`` {toolUseId, content [{text}|{json}], status} is a tool result),
  ``toolConfig.tools[].toolSpec.name``, ``outputConfig.textFormat`` (a JSON schema);
- the model: the URL's ``{modelId}``, URL-decoded; of an ARN, what follows its last ``/``
  (a foundation model's or an inference profile's id, as litellm's price map names them).

A stream holding an exception frame (``:message-type`` ``exception``), or damaged, holds no
reply.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from pytest_harness._model.response import ModelResponse
from pytest_harness._wire import eventstream
from pytest_harness._wire._json import as_dict, as_dicts, as_int, as_str, decode, json_text, loads
from pytest_harness._wire._values import (
    Asked,
    Events,
    Found,
    SentResult,
    Turn,
    call_text,
    joined,
    names,
    parts_text,
    refused,
    reply_format,
    tool_call,
    usage,
)

API = "bedrock.converse"

_PATH = re.compile(r"/model/([^/]+)/(converse|converse-stream|invoke|invoke-with-response-stream)$")
# The operations that answer in Converse's shape, whatever the model.
_CONVERSE = frozenset({"converse", "converse-stream"})
# The event types only a ConverseStream sends (by them a stream is told to be one).
CONVERSE_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"}
)
_REFUSED = frozenset({"guardrail_intervened", "content_filtered"})
# The prompt's tokens: ``inputTokens`` counts those neither read from nor written to the cache.
_PROMPT = ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")


def operation(uri: str) -> tuple[str, str] | None:
    """The model id (URL-decoded) and the operation (``converse``, ``converse-stream``,
    ``invoke``, ``invoke-with-response-stream``) of a Bedrock runtime URL, or None."""
    path = urlsplit(uri).path if isinstance(uri, str) else ""
    found = _PATH.search(path)
    return None if found is None else (unquote(found[1]), found[2])


def model_in_url(uri: str) -> str:
    """The model a Bedrock URL names (an ARN's resource id), or ""."""
    found = operation(uri)
    if found is None:
        return ""
    model = found[0]
    return model.rpartition("/")[2] if model.startswith("arn:") else model


def request_api(uri: str, data: dict[str, Any]) -> str | None:
    """The API of a request to a Bedrock URL: ``bedrock.converse`` for Converse (and an
    invoke body in Converse's shape, Nova's), ``anthropic.messages`` for an invoke body with
    ``anthropic_version``; None for another URL or body."""
    found = operation(uri)
    if found is None:
        return None
    if found[1] in _CONVERSE or ("messages" in data and "anthropic_version" not in data):
        return API
    return "anthropic.messages" if "anthropic_version" in data else None


def is_reply(data: dict[str, Any]) -> bool:
    """Whether a JSON object is a Converse reply (or Nova's invoke reply, of its shape)."""
    return isinstance(data.get("output"), dict) and "stopReason" in data


def read_request(data: dict[str, Any]) -> Asked:
    """``system``, then ``messages`` (text, toolUse and toolResult blocks), the tools'
    names, and the JSON schema ``outputConfig.textFormat`` asks the reply to fit."""
    messages = as_dicts(data.get("messages"))
    tools = as_dicts(as_dict(data.get("toolConfig")).get("tools"))
    wanted = as_dict(as_dict(data.get("outputConfig")).get("textFormat"))
    schema = as_dict(as_dict(wanted.get("structure")).get("jsonSchema")).get("schema")
    return Asked(
        instructions=parts_text(data.get("system")),
        turns=tuple(map(_turn, messages)),
        tools=names([as_str(as_dict(t.get("toolSpec")).get("name")) for t in tools]),
        results=_results(messages),
        **reply_format(wanted.get("type"), loads(schema) if isinstance(schema, str) else schema),
    )


def _turn(message: dict[str, Any]) -> Turn:
    """A message; one that sends tool results back is a ``tool`` turn."""
    role = as_str(message.get("role")) or "?"
    said = []
    for block in as_dicts(message.get("content")):
        used, result = as_dict(block.get("toolUse")), block.get("toolResult")
        if used:
            said.append(call_text(used.get("name"), used.get("input")))
        elif isinstance(result, dict):
            role = "tool"
            said.append(_result_text(result))
        else:
            said.append(as_str(block.get("text")))
    return Turn(role=role, text=joined(said))


def _result_text(result: dict[str, Any]) -> str:
    """A toolResult's content: its text parts, its JSON parts written out."""
    parts = as_dicts(result.get("content"))
    return joined(
        [as_str(p.get("text")) if "text" in p else json_text(p.get("json")) for p in parts]
    )


def _results(messages: list[dict[str, Any]]) -> tuple[SentResult, ...]:
    """``toolResult`` blocks, named by the ``toolUse`` block of their ``toolUseId``."""
    blocks = [b for m in messages for b in as_dicts(m.get("content"))]
    used = [as_dict(b.get("toolUse")) for b in blocks]
    called = {as_str(u.get("toolUseId")): as_str(u.get("name")) for u in used if u}
    results = [r for r in (b.get("toolResult") for b in blocks) if isinstance(r, dict)]
    return tuple(
        SentResult(
            call_id=as_str(r.get("toolUseId")) or None,
            name=called.get(as_str(r.get("toolUseId")), ""),
            text=_result_text(r),
            error=r.get("status") == "error",
        )
        for r in results
    )


def read_reply(data: dict[str, Any]) -> Found | None:
    """A Converse reply, whole: its stop reason says it finished."""
    message = as_dict(as_dict(data.get("output")).get("message"))
    return _reply(message.get("content"), data.get("stopReason"), data.get("usage"), stopped=True)


def read_events(events: Events) -> Found | None:
    """The reply a ConverseStream's events build up (name: ``:event-type``)."""
    blocks: dict[int, dict[str, Any]] = {}
    stop: Any = None
    counted: Any = None
    for name, data in events:
        index = as_int(data.get("contentBlockIndex"))
        if name == "contentBlockStart":
            blocks[index] = _started(as_dict(data.get("start")))
        elif name == "contentBlockDelta":
            _add_delta(blocks.setdefault(index, {}), as_dict(data.get("delta")))
        elif name == "messageStop":
            stop = data.get("stopReason")
        elif name == "metadata":
            counted = data.get("usage")
    stopped = any(name == "messageStop" for name, _ in events)
    content = [blocks[i] for i in sorted(blocks)]
    return _reply(content, stop, counted, stopped=stopped)


def _started(start: dict[str, Any]) -> dict[str, Any]:
    """A block as contentBlockStart opens it: a toolUse with its id and name."""
    used = as_dict(start.get("toolUse"))
    return {"toolUse": {**used, "input": ""}} if used else {}


def _add_delta(block: dict[str, Any], delta: dict[str, Any]) -> None:
    """Append a contentBlockDelta to its block: text, tool input JSON text, reasoning."""
    if "text" in delta:
        block["text"] = as_str(block.get("text")) + as_str(delta.get("text"))
    used = as_dict(delta.get("toolUse"))
    if used:
        tool = block.setdefault("toolUse", {"input": ""})
        tool["input"] = as_str(tool.get("input")) + as_str(used.get("input"))
    thought = as_dict(delta.get("reasoningContent"))
    if "text" in thought:
        reasoning = block.setdefault("reasoningContent", {"reasoningText": {"text": ""}})
        text = as_dict(reasoning.get("reasoningText"))
        reasoning["reasoningText"] = {"text": as_str(text.get("text")) + as_str(thought["text"])}


def _reply(blocks: Any, stop: Any, counted: Any, *, stopped: bool) -> Found | None:
    """A reply's content blocks; interrupted unless ``stopped`` with a reason."""
    if not isinstance(blocks, list):
        return None
    blocks = as_dicts(blocks)
    calls = [as_dict(b.get("toolUse")) for b in blocks if isinstance(b.get("toolUse"), dict)]
    thoughts = [as_dict(as_dict(b.get("reasoningContent")).get("reasoningText")) for b in blocks]
    reason, tokens = as_str(stop) or None, as_dict(counted)
    response = ModelResponse(
        content="".join(as_str(b.get("text")) for b in blocks) or None,
        reasoning="\n\n".join(t for t in (as_str(r.get("text")) for r in thoughts) if t) or None,
        tool_calls=tuple(
            tool_call(n, c.get("toolUseId"), c.get("name"), c.get("input"))
            for n, c in enumerate(calls)
        ),
        finish_reason=reason,
        interrupted=not stopped or reason is None,
        usage=usage(
            sum(as_int(tokens.get(k)) for k in _PROMPT),
            tokens.get("outputTokens"),
            tokens.get("totalTokens"),
            tokens.get("cacheReadInputTokens"),
            tokens.get("cacheWriteInputTokens"),
        ),
        refusal=refused("stopReason", reason, _REFUSED),
    )
    return API, response, ""


def frame_events(frames: list[eventstream.Frame]) -> list[tuple[str, Any]] | None:
    """A Bedrock stream's events as (name, JSON data): a ConverseStream's by their
    ``:event-type``, an invoke stream's ``chunk`` frames as the model's own events (its
    ``bytes`` decoded; named by their ``type``). None when a frame is an exception or error,
    or a payload is not what its frame says."""
    events: list[tuple[str, Any]] = []
    for frame in frames:
        if frame.header(":message-type") != "event":
            return None
        name, data = frame.header(":event-type") or "", loads(decode(frame.payload))
        if name == "chunk":
            name, data = _chunk(as_dict(data))
        if not isinstance(data, dict):
            return None
        events.append((name, data))
    return events


def _chunk(data: dict[str, Any]) -> tuple[str, Any]:
    """An invoke stream's chunk: the model's event its ``bytes`` hold, base64."""
    try:
        raw = base64.b64decode(as_str(data.get("bytes")), validate=True)
    except (binascii.Error, ValueError):
        return "", None
    event = loads(decode(raw))
    return as_str(as_dict(event).get("type")), event
