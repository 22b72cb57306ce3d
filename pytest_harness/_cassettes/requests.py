"""What a model request asks, in each of the four wire formats the cassette recognises.

``read_request(api, body)`` reads one request body: the tools it offers (by name), its
system prompt, how many messages it sends, and the tool results it sends back (each with the
call id it answers, and the tool's name when the request says it). ``api`` is
``wire.Recognised.api``:

- ``openai.chat``: ``tools[].function.name``; ``system``/``developer`` messages; results are
  ``role: tool`` messages with ``tool_call_id`` (the legacy ``role: function`` by name).
- ``openai.responses``: ``tools[].name``; ``instructions``; results are
  ``function_call_output`` items with ``call_id``.
- ``anthropic.messages``: ``tools[].name``; ``system``; results are ``tool_result`` content
  blocks with ``tool_use_id`` (``is_error`` marks a failed call).
- ``gemini.generate``: ``tools[].functionDeclarations[].name``; ``systemInstruction``;
  results are ``functionResponse`` parts, by name (and by ``id`` when it has one: Gemini's
  function calls often have none).

The name of a result that carries only an id is taken from the call of the same id earlier in
the request, when the request repeats it. Like ``wire``, it never raises: a body that is not
JSON, or of another shape, reads as a request that asks nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_harness._wire import as_dict, as_dicts, as_str, decode, loads


@dataclass(frozen=True, slots=True, kw_only=True)
class SentResult:
    """A tool result a request sends back to the model.

    Attributes:
        call_id: the id of the call it answers, or None (Gemini without ids).
        name: the tool's name, or "" when the request does not say it.
        text: the result as text (JSON text when it was structured).
        error: the request marks it as a failed call (Anthropic's ``is_error``).
    """

    call_id: str | None
    name: str
    text: str
    error: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """What one model request asks.

    Attributes:
        tools: the names of the tools it offers, in its order.
        system: its system prompt (or instructions) as text, "" when it has none.
        messages: how many messages (or input items, or contents) it sends.
        results: the tool results it sends back, in its order.
    """

    tools: tuple[str, ...] = ()
    system: str = ""
    messages: int = 0
    results: tuple[SentResult, ...] = ()


def read_request(api: str, body: bytes | str | None) -> Asked:
    """What a request of ``api`` (``Recognised.api``) asks; never raises."""
    data = as_dict(loads(decode(body)))
    read = _READERS.get(api)
    return read(data) if read is not None and data else Asked()


def _chat(data: dict[str, Any]) -> Asked:
    messages = as_dicts(data.get("messages"))
    names = {
        as_str(call.get("id")): as_str(as_dict(call.get("function")).get("name"))
        for message in messages
        for call in as_dicts(message.get("tool_calls"))
    }
    results = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = as_str(message.get("tool_call_id")) or None
            name = as_str(message.get("name")) or names.get(call_id or "", "")
            results.append(SentResult(call_id=call_id, name=name, text=_text(message)))
        elif role == "function":
            name = as_str(message.get("name"))
            results.append(SentResult(call_id=None, name=name, text=_text(message)))
    tools = [as_str(as_dict(t.get("function")).get("name")) for t in as_dicts(data.get("tools"))]
    tools += [as_str(f.get("name")) for f in as_dicts(data.get("functions"))]
    system = [_text(m) for m in messages if m.get("role") in ("system", "developer")]
    return Asked(
        tools=_names(tools),
        system=_joined(system),
        messages=len(messages),
        results=tuple(results),
    )


def _responses(data: dict[str, Any]) -> Asked:
    given = data.get("input")
    items = as_dicts(given)
    names = {
        as_str(item.get("call_id")): as_str(item.get("name"))
        for item in items
        if item.get("type") == "function_call"
    }
    results = tuple(
        SentResult(
            call_id=as_str(item.get("call_id")) or None,
            name=names.get(as_str(item.get("call_id")), ""),
            text=_parts_text(item.get("output")),
        )
        for item in items
        if item.get("type") == "function_call_output"
    )
    tools = [as_str(t.get("name")) or as_str(t.get("type")) for t in as_dicts(data.get("tools"))]
    system = [as_str(data.get("instructions"))]
    system += [_text(i) for i in items if i.get("role") in ("system", "developer")]
    count = 1 if isinstance(given, str) else len(items)
    return Asked(tools=_names(tools), system=_joined(system), messages=count, results=results)


def _anthropic(data: dict[str, Any]) -> Asked:
    messages = as_dicts(data.get("messages"))
    blocks = [b for m in messages for b in as_dicts(m.get("content"))]
    uses = [b for b in blocks if b.get("type") == "tool_use"]
    names = {as_str(b.get("id")): as_str(b.get("name")) for b in uses}
    results = tuple(
        SentResult(
            call_id=as_str(b.get("tool_use_id")) or None,
            name=names.get(as_str(b.get("tool_use_id")), ""),
            text=_parts_text(b.get("content")),
            error=b.get("is_error") is True,
        )
        for b in blocks
        if b.get("type") == "tool_result"
    )
    tools = [as_str(t.get("name")) for t in as_dicts(data.get("tools"))]
    system = _parts_text(data.get("system"))
    return Asked(tools=_names(tools), system=system, messages=len(messages), results=results)


def _gemini(data: dict[str, Any]) -> Asked:
    contents = as_dicts(data.get("contents"))
    parts = [p for c in contents for p in as_dicts(c.get("parts"))]
    answers = [as_dict(p.get("functionResponse") or p.get("function_response")) for p in parts]
    results = tuple(
        SentResult(
            call_id=as_str(answer.get("id")) or None,
            name=as_str(answer.get("name")),
            text=_json_text(answer.get("response")),
        )
        for answer in answers
        if answer
    )
    declared = [
        d
        for t in as_dicts(data.get("tools"))
        for d in as_dicts(t.get("functionDeclarations") or t.get("function_declarations"))
    ]
    system = as_dict(data.get("systemInstruction") or data.get("system_instruction"))
    texts = [as_str(p.get("text")) for p in as_dicts(system.get("parts"))]
    return Asked(
        tools=_names([as_str(d.get("name")) for d in declared]),
        system=_joined(texts),
        messages=len(contents),
        results=results,
    )


_READERS: dict[str, Callable[[dict[str, Any]], Asked]] = {
    "openai.chat": _chat,
    "openai.responses": _responses,
    "anthropic.messages": _anthropic,
    "gemini.generate": _gemini,
}


def _text(message: dict[str, Any]) -> str:
    return _parts_text(message.get("content"))


def _parts_text(content: Any) -> str:
    """Text, the text of a list of parts (``text``, ``input_text``...), or other JSON as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _joined([as_str(part.get("text")) for part in as_dicts(content)])
    return _json_text(content)


def _json_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)


def _joined(texts: list[str]) -> str:
    return "\n".join(text for text in texts if text)


def _names(names: list[str]) -> tuple[str, ...]:
    return tuple(name for name in names if name)
