"""What the format readers read into (``Found``, ``Asked``), and the small builders they share."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeAlias

from pytest_harness._model.response import ModelResponse, ToolCall, Usage
from pytest_harness._wire._json import as_dicts, as_int, as_str, json_text, loads

# (api, response, the model its body names or "")
Found: TypeAlias = "tuple[str, ModelResponse, str]"
# A stream's events: (event name, its JSON object); a chat stream's ``data: [DONE]`` last, as
# ``(sse.DONE, {})`` (``sse.stream_events``).
Events: TypeAlias = "list[tuple[str, dict[str, Any]]]"

# The roles whose turns are the system prompt (Chat Completions, Responses input items).
SYSTEM_ROLES = frozenset({"system", "developer"})
# How the report and a cassette miss show a turn that sent no text (an image, a reasoning
# item, an empty message): it is still a message the request sent, counted as one.
NO_TEXT = "(no text)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One message (input item, content) a request sends.

    Attributes:
        role: its role (``user``, ``assistant``, ``system``, ``developer``, Gemini's
            ``model``), ``tool`` for a tool result, a Responses item's type when it has no
            role (``reasoning``), ``?`` when none is given.
        text: its text parts joined, each tool call as ``name(arguments)``, a tool result as
            its text; "" when it sends no text (``shown`` then says so).
    """

    role: str
    text: str

    @property
    def shown(self) -> str:
        """The text, or ``NO_TEXT`` for a turn that sent none."""
        return self.text or NO_TEXT


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
    """What one model request asks, read once for the report, a miss and a trajectory.

    Attributes:
        instructions: the system prompt sent beside the messages (Responses'
            ``instructions``, Anthropic's ``system``, Gemini's ``systemInstruction``), ""
            when there is none (always, in Chat Completions: its system prompt is a message).
        turns: one per message (input item, content) sent, in order, those without text too.
        tools: the names of the tools it offers, in its order.
        results: the tool results it sends back, in its order.
        structured: it asks for a JSON reply (a JSON schema, or JSON mode).
        schema: the JSON Schema the reply must fit, or None (none given, or JSON mode).
    """

    instructions: str = ""
    turns: tuple[Turn, ...] = ()
    tools: tuple[str, ...] = ()
    results: tuple[SentResult, ...] = ()
    structured: bool = False
    schema: dict[str, Any] | None = None

    @property
    def system(self) -> str:
        """The system prompt: the instructions, then the text of each system or developer
        turn (Anthropic and Gemini have none: theirs is the instructions)."""
        texts = [t.text for t in self.turns if t.role in SYSTEM_ROLES]
        return joined([self.instructions, *texts])

    @property
    def messages(self) -> int:
        """How many messages (input items, contents) it sends: one per turn."""
        return len(self.turns)

    @property
    def conversation(self) -> tuple[Turn, ...]:
        """What the report and a miss show: the instructions as a ``system`` turn (when
        there are any), then every turn."""
        if not self.instructions:
            return self.turns
        return (Turn(role="system", text=self.instructions), *self.turns)


def reply_format(kind: Any, schema: Any) -> dict[str, Any]:
    """``Asked``'s ``structured`` and ``schema`` for a request whose reply format is of
    ``kind`` (``json_schema``, ``json_object``, anything else: text) with ``schema`` (which
    llama.cpp's server takes with ``json_object`` too)."""
    if kind in ("json_schema", "json_object") and isinstance(schema, dict):  # llama.cpp's
        return {"structured": True, "schema": schema}
    return {"structured": kind in ("json_schema", "json_object")}


def parts_text(content: Any) -> str:
    """Text, the text of a list of parts (``text``, ``input_text``...), or other JSON as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return joined([as_str(part.get("text")) for part in as_dicts(content)])
    return json_text(content)


def call_text(name: Any, arguments: Any) -> str:
    """A tool call as ``name(arguments)``."""
    shown = arguments if isinstance(arguments, str) else json_text(arguments)
    return f"{as_str(name) or '?'}({shown})"


def joined(texts: list[str]) -> str:
    """The texts that are not empty, one a line."""
    return "\n".join(text for text in texts if text)


def names(found: list[str]) -> tuple[str, ...]:
    """The names that are not empty, in order."""
    return tuple(name for name in found if name)


def event_kind(name: str, data: dict[str, Any]) -> str:
    """An event's kind: its JSON ``type``, else its SSE event name."""
    return as_str(data.get("type")) or name


def refused(field: str, value: str | None, refusing: frozenset[str]) -> str | None:
    """``<field>: <value>`` when that value says the call was refused or blocked, else None."""
    return f"{field}: {value}" if value in refusing else None


def tool_call(index: int, call_id: Any, name: Any, raw: Any) -> ToolCall:
    """A tool call whose arguments come as JSON text or as an object, with the id the reply
    gave it, or None: none is made up (a client answers such a call by name, as the SDKs
    read it). ``index``, its place in the reply, is not used."""
    text = raw if isinstance(raw, str) else "" if raw is None else json.dumps(raw)
    parsed = loads(text) if text.strip() else {}
    return ToolCall(
        id=as_str(call_id) or None,
        name=as_str(name),
        arguments=parsed if isinstance(parsed, dict) else None,
        raw_arguments=text,
    )


def usage(prompt: Any, completion: Any, total: Any, cached: Any = 0, written: Any = 0) -> Usage:
    """Token counts; ``prompt`` counts every prompt token, those read from the prompt cache
    (``cached``) and written to it (``written``) included."""
    p, c = as_int(prompt), as_int(completion)
    return Usage(
        prompt_tokens=p,
        completion_tokens=c,
        total_tokens=as_int(total) or p + c,
        cached_tokens=as_int(cached),
        cache_write_tokens=as_int(written),
    )
