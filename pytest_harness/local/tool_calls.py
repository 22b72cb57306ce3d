"""Tool calls from the embedded model, which has no tool-calling of its own.

Gemma 3 270M is a base model behind llama.cpp's ``gemma`` chat format: it never emits tool
calls, and the format drops tool messages. So a call for the embedded model that offers
tools is rewritten (``offer``): the tools are described in the prompt, and the reply is
constrained by llama.cpp's grammar to one JSON object, either ``{"tool": <name>,
"arguments": {...}}`` (the arguments fitting that tool's schema) or ``{"answer": <text>}``.
Earlier tool calls and results in the conversation become plain turns. The reply is read
back (``receive``) into a ``ModelResponse`` with real ``tool_calls``, or with the answer as
its text. The cassette holds the raw JSON reply, so replay reads it back the same way.

Only the standard library: the seam calls ``receive`` on every response of such a call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_harness.response import ModelResponse, ToolCall

MARK = "_harness_local_tools"  # kwargs key the seam reads (and never sends)


def offer(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's kwargs with its tools turned into a prompt and a grammar."""
    tools = [t["function"] for t in kwargs.pop("tools", None) or [] if "function" in t]
    kwargs.pop("tool_choice", None)
    if not tools:
        return kwargs
    kwargs["response_format"] = {"type": "json_object", "schema": _schema(tools)}
    kwargs["messages"] = _plain(kwargs.get("messages") or [], _guide(tools))
    kwargs[MARK] = True
    return kwargs


def receive(response: ModelResponse) -> ModelResponse:
    """The reply read back: a tool call, or the answer as the text."""
    try:
        data = json.loads(response.content or "")
    except ValueError:
        return response  # cut off or not JSON: the response check judges it as it is
    if not isinstance(data, dict):
        return response
    if isinstance(data.get("tool"), str):
        arguments = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        call = ToolCall(
            id="call_local_0",
            name=data["tool"],
            arguments=arguments,
            raw_arguments=json.dumps(arguments),
        )
        return replace(response, content=None, tool_calls=(call,), finish_reason="tool_calls")
    if isinstance(data.get("answer"), str):
        return replace(response, content=data["answer"])
    return response


def _schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    choices: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": [tool["name"]]},
                "arguments": tool.get("parameters") or {"type": "object"},
            },
            "required": ["tool", "arguments"],
        }
        for tool in tools
    ]
    choices.append(
        {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    )
    return {"anyOf": choices}


def _guide(tools: Sequence[Mapping[str, Any]]) -> str:
    lines = ["You can call these tools:"]
    for tool in tools:
        parameters = json.dumps((tool.get("parameters") or {}).get("properties") or {})
        lines.append(f"- {tool['name']}: {tool.get('description') or ''} Arguments: {parameters}")
    lines.append(
        'Reply with one JSON object: {"tool": <name>, "arguments": {...}} to call a tool, '
        'or {"answer": <text>} to answer.'
    )
    return "\n".join(lines)


def _plain(messages: Sequence[Mapping[str, Any]], guide: str) -> list[dict[str, Any]]:
    """Tool turns as plain turns (the gemma format keeps user and assistant text only)."""
    plain: list[dict[str, Any]] = [{"role": "system", "content": guide}]
    for message in messages:
        role = message.get("role")
        if role == "tool":
            result = message.get("content") or ""
            plain.append({"role": "user", "content": f"Tool result: {result}"})
        elif role == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                arguments = function.get("arguments") or "{}"
                text = f'{{"tool": {json.dumps(function.get("name"))}, "arguments": {arguments}}}'
                plain.append({"role": "assistant", "content": text})
        else:
            plain.append(dict(message))
    return plain
