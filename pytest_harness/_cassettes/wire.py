"""The messages a model request sent, as role and text, for the report and a cassette miss.

``request_messages`` reads a request of one of the APIs ``pytest_harness._wire`` recognises.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

from pytest_harness._wire import as_dict, as_dicts, as_str, decode, loads


# What was asked: the request's messages, in each API's shape, as (role, text) turns.
def request_messages(api: str, body: bytes | str | None) -> list[dict[str, str]]:
    """The messages a request of ``api`` sent (its system prompt first), each as ``role``
    and ``content`` text: a tool call is ``name(arguments)``, a tool result its text.

    ``api`` is ``Recognised.api``. Never raises: a body that is not JSON, or of another
    shape, gives what could be read (often nothing).
    """
    data = as_dict(loads(decode(body)))
    read = _REQUEST_READERS.get(api)
    turns = read(data) if read is not None else []
    return [{"role": role, "content": text} for role, text in turns if text]


Turns: TypeAlias = "list[tuple[str, str]]"


def _chat_request(data: dict[str, Any]) -> Turns:
    """OpenAI Chat Completions: ``messages`` (content text or parts, tool calls, tool results)."""
    turns = []
    for message in as_dicts(data.get("messages")):
        role = as_str(message.get("role")) or "?"
        calls = [as_dict(call.get("function")) for call in as_dicts(message.get("tool_calls"))]
        said = [_parts_text(message.get("content")), *map(_call_text, calls)]
        turns.append((role, "\n".join(text for text in said if text)))
    return turns


def _responses_request(data: dict[str, Any]) -> Turns:
    """OpenAI Responses: ``instructions``, then ``input`` (text, or messages and items)."""
    turns = [("system", as_str(data.get("instructions")))]
    given = data.get("input")
    if isinstance(given, str):
        return [*turns, ("user", given)]
    for item in as_dicts(given):
        kind = as_str(item.get("type"))
        if kind == "function_call":
            turns.append(("assistant", _call_text(item)))
        elif kind == "function_call_output":
            turns.append(("tool", _parts_text(item.get("output"))))
        elif "role" in item:
            turns.append((as_str(item.get("role")) or "?", _parts_text(item.get("content"))))
    return turns


def _anthropic_request(data: dict[str, Any]) -> Turns:
    """Anthropic Messages: ``system``, then ``messages`` (text, tool_use, tool_result blocks)."""
    turns = [("system", _parts_text(data.get("system")))]
    for message in as_dicts(data.get("messages")):
        role = as_str(message.get("role")) or "?"
        content = message.get("content")
        blocks = as_dicts(content) if isinstance(content, list) else []
        said = [as_str(content)]
        for block in blocks:
            kind = as_str(block.get("type"))
            if kind == "tool_use":
                call = {"name": block.get("name"), "arguments": block.get("input")}
                said.append(_call_text(call))
            elif kind == "tool_result":
                role = "tool"
                said.append(_parts_text(block.get("content")))
            else:
                said.append(as_str(block.get("text")))
        turns.append((role, "\n".join(text for text in said if text)))
    return turns


def _gemini_request(data: dict[str, Any]) -> Turns:
    """Gemini: ``systemInstruction``, then ``contents`` (text, functionCall, functionResponse)."""
    system = as_dict(data.get("systemInstruction") or data.get("system_instruction"))
    turns = [("system", _gemini_parts(system)[1])]
    for content in as_dicts(data.get("contents")):
        role, said = _gemini_parts(content)
        turns.append((role or as_str(content.get("role")) or "user", said))
    return turns


def _gemini_parts(content: dict[str, Any]) -> tuple[str, str]:
    """(role of a tool result or "", the text) of a Gemini content's parts."""
    said, role = [], ""
    for part in as_dicts(content.get("parts")):
        call = as_dict(part.get("functionCall") or part.get("function_call"))
        answer = as_dict(part.get("functionResponse") or part.get("function_response"))
        if call:
            said.append(_call_text({"name": call.get("name"), "arguments": call.get("args")}))
        elif answer:
            role = "tool"
            said.append(_json_text(answer.get("response")))
        elif part.get("thought") is not True:
            said.append(as_str(part.get("text")))
    return role, "\n".join(text for text in said if text)


def _parts_text(content: Any) -> str:
    """Text content, or the text of a list of parts (``text``, ``input_text``...)."""
    if isinstance(content, str):
        return content
    said = [as_str(part.get("text")) for part in as_dicts(content)]
    return "\n".join(text for text in said if text)


def _json_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)


def _call_text(call: dict[str, Any]) -> str:
    """A tool call as ``name(arguments)``."""
    arguments = call.get("arguments")
    shown = arguments if isinstance(arguments, str) else _json_text(arguments)
    return f"{as_str(call.get('name')) or '?'}({shown})"


_REQUEST_READERS = {
    "openai.chat": _chat_request,
    "openai.responses": _responses_request,
    "anthropic.messages": _anthropic_request,
    "gemini.generate": _gemini_request,
}
