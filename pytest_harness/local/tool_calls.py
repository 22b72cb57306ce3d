"""Tool calls from the embedded model, which has no tool-calling of its own.

Gemma 3 270M is a base model behind llama.cpp's ``gemma`` chat format: it never emits tool
calls, and the format drops tool messages. So a call for the embedded model that offers
tools is rewritten (``offer``): the tools are described in the prompt, and the reply is
constrained by llama.cpp's grammar to one JSON object, either ``{"tool": <name>,
"arguments": {...}}`` (the arguments fitting that tool's schema) or ``{"answer": <text>}``,
as the call's ``tool_choice`` allows (OpenAI's meaning: ``"auto"`` either, ``"required"`` a
tool call, ``{"type": "function", "function": {"name": ...}}`` that tool, ``"none"`` the
answer). Earlier tool calls and results in the conversation become plain turns. The reply is
read back (``receive``) into a ``ModelResponse`` with real ``tool_calls``, or with the answer as
its text. The cassette holds the raw JSON reply, so replay reads it back the same way.

Only the standard library: the seam calls ``receive`` on every response of such a call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_harness.errors import ConfigError
from pytest_harness.response import ModelResponse, ToolCall

MARK = "_harness_local_tools"  # kwargs key the seam reads (and never sends)


def offer(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's kwargs with its tools turned into a prompt and a grammar."""
    tools = [t["function"] for t in kwargs.pop("tools", None) or [] if "function" in t]
    choice = kwargs.pop("tool_choice", None)
    if not tools:
        return kwargs
    callable_, answer = _choice(tools, choice)
    kwargs["response_format"] = {"type": "json_object", "schema": _schema(callable_, answer)}
    kwargs["messages"] = _plain(kwargs.get("messages") or [], _guide(callable_, answer))
    kwargs[MARK] = True
    return kwargs


def receive(response: ModelResponse) -> ModelResponse:
    """The reply read back: a tool call, or the answer as the text."""
    try:
        data = json.loads(response.content or "")
    except ValueError:
        return _cut_off(response)
    if not isinstance(data, dict):
        return response
    if isinstance(data.get("tool"), str):
        arguments = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        called = _called(response, data["tool"], arguments, json.dumps(arguments))
        return replace(called, finish_reason="tool_calls")
    if isinstance(data.get("answer"), str):
        return replace(response, content=data["answer"])
    return response


_TOOL_START = re.compile(r'\s*\{\s*"tool"\s*:\s*"(?P<name>[^"\\]+)"\s*,\s*"arguments"\s*:\s*')
_ANSWER_START = re.compile(r'\s*\{\s*"answer"\s*:\s*"')


def _cut_off(response: ModelResponse) -> ModelResponse:
    """A reply the token limit cut short, read as OpenAI would send it: a tool call whose
    arguments do not parse (the loop tells the model so), or the answer's text so far.
    Anything else is left as it is for the response check to judge."""
    text = response.content or ""
    if (tool := _TOOL_START.match(text)) is not None:
        return _called(response, tool["name"], None, text[tool.end() :])
    if (answer := _ANSWER_START.match(text)) is not None:
        partial = text[answer.end() :]
        try:
            content = json.loads(f'"{partial.rstrip(chr(92))}"')
        except ValueError:
            content = partial
        return replace(response, content=content)
    return response


def _called(
    response: ModelResponse, name: str, arguments: dict[str, Any] | None, raw: str
) -> ModelResponse:
    call = ToolCall(id="call_local_0", name=name, arguments=arguments, raw_arguments=raw)
    return replace(response, content=None, tool_calls=(call,))  # a cut-off call keeps "length"


def _choice(tools: list[Mapping[str, Any]], choice: Any) -> tuple[list[Mapping[str, Any]], bool]:
    """The tools the reply may call, and whether it may answer, under ``tool_choice``."""
    if choice == "none":
        return [], True
    if choice == "required":
        return tools, False
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        named = [tool for tool in tools if tool["name"] == name]
        if not named:
            raise ConfigError(
                f"tool_choice names the tool {name!r}, which is not among the tools offered "
                f"({', '.join(tool['name'] for tool in tools)}): name one of them"
            )
        return named, False
    return tools, True


def _schema(tools: Sequence[Mapping[str, Any]], answer: bool) -> dict[str, Any]:
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
    if answer:
        choices.append(
            {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        )
    return choices[0] if len(choices) == 1 else {"anyOf": choices}


def _guide(tools: Sequence[Mapping[str, Any]], answer: bool) -> str:
    lines = ["You can call these tools:"] if tools else []
    for tool in tools:
        parameters = json.dumps((tool.get("parameters") or {}).get("properties") or {})
        lines.append(f"- {tool['name']}: {tool.get('description') or ''} Arguments: {parameters}")
    forms = ['{"tool": <name>, "arguments": {...}} to call a tool'] if tools else []
    forms += ['{"answer": <text>} to answer'] if answer else []
    lines.append(f"Reply with one JSON object: {', or '.join(forms)}.")
    return "\n".join(lines)


def _plain(messages: Sequence[Mapping[str, Any]], guide: str) -> list[dict[str, Any]]:
    """Tool turns as plain turns (the gemma format keeps user and assistant text only).

    The results of one batch become one user turn that restates the user's last question
    beside what each tool returned: a 270M model answers from its results far more often
    when the question sits next to them.
    """
    plain: list[dict[str, Any]] = [{"role": "system", "content": guide}]
    names: dict[str, str] = {}  # tool call id -> tool name
    question = ""
    for message in messages:
        role = message.get("role")
        if role == "tool":
            name = names.get(str(message.get("tool_call_id")), "the tool")
            line = f"The tool {name} returned: {message.get('content') or ''}"
            if plain[-1].get("tool_results"):
                plain[-1]["content"] += "\n" + line
            else:
                plain.append({"role": "user", "content": f"{question}{line}", "tool_results": 1})
        elif role == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[str(call.get("id"))] = str(function.get("name"))
                arguments = function.get("arguments") or "{}"
                text = f'{{"tool": {json.dumps(function.get("name"))}, "arguments": {arguments}}}'
                plain.append({"role": "assistant", "content": text})
        else:
            if role == "user":
                question = f"The user asked: {message.get('content') or ''}\n"
            plain.append(dict(message))
    for message in plain:
        if message.pop("tool_results", None):
            message["content"] += "\nWrite the reply to the user."
    return plain
