"""Ollama's own API (``/api/chat``, ``/api/generate``): its requests, replies and streams.

A reply is one JSON object: ``/api/chat``'s ``message`` (``content``, ``thinking``,
``tool_calls`` of ``{"function": {"name", "arguments": {...}}}``), ``/api/generate``'s
``response`` (and ``thinking``); ``done``, ``done_reason`` (``stop``, ``length``...),
``prompt_eval_count`` and ``eval_count`` (the tokens), ``model``. A stream (Ollama's default,
``"stream": false`` asks for a whole reply) is NDJSON (``_wire.ndjson``): one such object a
line, each a part of the reply, the last ``done: true`` with the counts; a stream cut before
it is unfinished. A reply that only loaded or unloaded the model (``done_reason`` ``load`` or
``unload``, an empty request) is no model reply. Ollama gives tool calls no ids: a ``tool``
message answers the call of its ``tool_name``, else the next call the assistant asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_harness._model.response import ModelResponse, ToolCall
from pytest_harness._wire import chat
from pytest_harness._wire._json import as_dict, as_dicts, as_str, json_text
from pytest_harness._wire._values import (
    Asked,
    Found,
    SentResult,
    Turn,
    names,
    reply_format,
    tool_call,
    usage,
)

CHAT = "ollama.chat"
GENERATE = "ollama.generate"
# The done reasons of a reply that only loaded or unloaded the model: no model reply.
_HOUSEKEEPING = frozenset({"load", "unload"})


def is_response(data: Any) -> bool:
    """An Ollama reply or stream part: ``done`` with a ``message`` or a ``response``."""
    return isinstance(data, dict) and "done" in data and ("message" in data or "response" in data)


def read_request(data: dict[str, Any]) -> Asked:
    """``/api/chat``'s ``messages`` (system turns included, tool calls as
    ``name(arguments)``) and ``tools``; ``/api/generate``'s ``system`` and ``prompt``;
    ``format`` (a JSON schema, or ``"json"``) for either."""
    wanted = data.get("format")
    kind = "json_schema" if isinstance(wanted, dict) else "json_object" if wanted else None
    if "messages" not in data:
        return Asked(
            instructions=as_str(data.get("system")),
            turns=(Turn(role="user", text=as_str(data.get("prompt"))),),
            **reply_format(kind, wanted),
        )
    messages = as_dicts(data.get("messages"))
    tools = [as_str(as_dict(t.get("function")).get("name")) for t in as_dicts(data.get("tools"))]
    return Asked(
        turns=tuple(map(chat.message_turn, messages)),  # Chat Completions' message shape
        tools=names(tools),
        results=_results(messages),
        **reply_format(kind, wanted),
    )


def _results(messages: list[dict[str, Any]]) -> tuple[SentResult, ...]:
    """The ``tool`` messages, each named by its ``tool_name``, else by the next call not
    answered yet of the assistant message before it (Ollama's calls have no ids)."""
    found: list[SentResult] = []
    waiting: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            calls = as_dicts(message.get("tool_calls"))
            waiting = [as_str(as_dict(c.get("function")).get("name")) for c in calls]
        elif role == "tool":
            name = as_str(message.get("tool_name"))
            if name in waiting:
                waiting.remove(name)
            elif waiting and not name:
                name = waiting.pop(0)
            call_id = as_str(message.get("tool_call_id")) or None
            text = json_text(message.get("content"))
            found.append(SentResult(call_id=call_id, name=name, text=text))
    return tuple(found)


def read_reply(data: Any) -> Found | None:
    """A whole reply (``"stream": false``)."""
    return _parts([data])


def read_lines(lines: Sequence[Any]) -> Found | None:
    """A stream's parts (its NDJSON lines' objects) added up; None when any line is not
    an Ollama part."""
    return _parts(lines)


def _parts(parts: Sequence[Any]) -> Found | None:
    """The reply the parts add up to; unfinished without a last ``done: true``."""
    if not parts or not all(map(is_response, parts)):
        return None
    last = parts[-1]
    done = last.get("done") is True
    reason = as_str(last.get("done_reason")) or ("stop" if done else "")
    if done and reason in _HOUSEKEEPING:
        return None
    messages = [as_dict(p.get("message")) for p in parts]
    said = [
        as_str(m.get("content")) or as_str(p.get("response"))
        for m, p in zip(messages, parts, strict=True)
    ]
    thought = [
        as_str(m.get("thinking") or p.get("thinking")) for m, p in zip(messages, parts, strict=True)
    ]
    calls = [c for m in messages for c in as_dicts(m.get("tool_calls"))]
    response = ModelResponse(
        content="".join(said) or None,
        reasoning="".join(thought) or None,
        tool_calls=tuple(_call(n, call) for n, call in enumerate(calls)),
        finish_reason=reason if done else None,
        interrupted=not done,
        usage=usage(last.get("prompt_eval_count"), last.get("eval_count"), None),
    )
    api = CHAT if any("message" in p for p in parts) else GENERATE
    return api, response, as_str(last.get("model"))


def _call(index: int, call: dict[str, Any]) -> ToolCall:
    """A tool call: ``function.name`` and ``function.arguments`` (an object); an id only
    when the reply gives one."""
    function = as_dict(call.get("function"))
    return tool_call(index, call.get("id"), function.get("name"), function.get("arguments"))
