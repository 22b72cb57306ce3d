"""Model responses in recorded HTTP traffic: which interaction is a chat reply, and what it says.

``recognise`` reads one interaction (request URL and body, response status, headers, body)
and, when it holds a successful reply of a known chat API, plain or streamed, returns the API,
the provider and model (for price look-ups) and its ``ModelResponse``. Known: OpenAI Chat
Completions (read here, via ``read_completion`` / ``read_stream``) and Responses, Anthropic
Messages, Gemini generateContent (read below). It goes by the body's shape; the URL
only names a Gemini model.

A cut-off stream is recognised as ``interrupted``, an empty reply as empty, a refusal or a
blocked prompt with its ``refusal`` (the caller judges them). A background Responses reply
polled before it finished (``queued``, ``in_progress``) is no reply yet: None. Anything
else is None: an error status or body, embeddings, a model list, malformed JSON or SSE, a
field of the wrong type. It never raises, never prices (``cost`` None), never
times (``latency_s`` 0). It imports the standard library and
``pytest_harness._response`` only (no vcrpy, litellm or httpx): it runs on every recorded or
replayed interaction.

``request_messages`` reads the other side, for the report: the messages a request of one
of those APIs sent, as role and text. Reading a recorded body (its text, its JSON, its
server-sent events) is here too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from pytest_harness._response import (
    ModelResponse,
    ToolCall,
    Usage,
    chunk_problem,
    completion_problem,
    read_completion,
    read_stream,
)

_ANTHROPIC_EVENTS = {"message_start", "content_block_start", "content_block_delta", "message_delta"}


@dataclass(frozen=True, slots=True)
class Recognised:
    """A model response found in one HTTP interaction.

    Attributes:
        api: ``openai.chat``, ``openai.responses``, ``anthropic.messages`` or ``gemini.generate``.
        provider: ``openai``, ``anthropic`` or ``gemini``.
        model: named by the response body, else the request body, else (Gemini) the URL; or "".
        response: the reply, with that model (``cost`` None, ``latency_s`` 0).
        streamed: whether it came as a stream (SSE, or Gemini's JSON array).
        payload: the body as read: its JSON value, or a stream's events' JSON data in
            order (for the seam's replay, which reads it again as litellm would). An
            ``openai.chat`` payload is readable: ``completion_problem`` (``chunk_problem``
            for each chunk) found nothing in it.
    """

    api: str
    provider: str
    model: str
    response: ModelResponse
    streamed: bool
    payload: Any = None


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
        return recognise_parsed(uri, request_body, status, headers, events=json_events(text))
    return recognise_parsed(uri, request_body, status, headers, value=loads(text))


def recognise_parsed(
    uri: str,
    request_body: bytes | str | Mapping[str, Any] | None,
    status: int,
    headers: Mapping[str, Any],
    *,
    value: Any = None,
    events: Sequence[tuple[str, Any]] | None = None,
) -> Recognised | None:
    """``recognise`` of a body already parsed: its JSON ``value``, or its ``events`` (name,
    JSON data) when it is a server-sent event stream; never raises.

    A cassette keeps JSON bodies parsed (``bodies``): its reader need not write them out to
    parse them again. The request body may be given parsed too.
    """
    if not isinstance(status, int) or not 200 <= status < 300:
        return None
    if events is not None:
        data: Any = [data for _, data in events]
        found, streamed = _from_events(list(events)), True
    elif is_event_stream(headers, ""):  # a JSON value served as a stream: no events in it
        return None
    else:
        data = value
        found, streamed = _from_json(value), isinstance(value, list)
    if found is None:
        return None
    api, response, model = found
    model = model or as_str(_as_request(request_body).get("model"))
    model = model or (gemini_model(uri) if api == "gemini.generate" else "")
    response = replace(
        response,
        content=response.content or None,
        reasoning=response.reasoning or None,
        finish_reason=response.finish_reason or None,
        model=model,
        latency_s=0.0,
    )
    return Recognised(api, api.partition(".")[0], model, response, streamed, data)


def _as_request(body: bytes | str | Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(body) if isinstance(body, Mapping) else as_dict(loads(decode(body)))


def _from_json(data: Any) -> Found | None:
    if isinstance(data, list):
        gemini = any(_is_gemini(c) for c in data)
        return read_gemini(data, streamed=True) if gemini else None
    if not isinstance(data, dict):
        return None
    if _is_gemini(data):
        return read_gemini([data], streamed=False)
    if data.get("type") == "message":
        return read_anthropic(data, stopped=True)
    if data.get("object") == "response":
        return read_responses(data)
    if data.get("object") == "chat.completion" or "choices" in data:
        return _chat(data)
    return None


def _from_events(found: list[tuple[str, Any]]) -> Found | None:
    events: Events = [(name, data) for name, data in found if isinstance(data, dict)]
    if not events or len(events) < len(found):
        return None
    kinds = {event_kind(name, data) for name, data in events}
    if any(kind.startswith("response.") for kind in kinds):
        return read_responses_stream(events)
    if kinds & _ANTHROPIC_EVENTS:
        return read_anthropic_stream(events)
    chunks = [data for _, data in events]
    if any("choices" in chunk for chunk in chunks):
        return _chat_stream(chunks)
    return read_gemini(chunks, streamed=True) if any(map(_is_gemini, chunks)) else None


# OpenAI Chat Completions, once read_completion / read_stream accept their shape (they would
# raise ProviderResponseError otherwise).
def _chat(data: dict[str, Any]) -> Found | None:
    if completion_problem(data) is not None or not _as_sent(data["choices"]):
        return None
    response = read_completion(data, model="", cost=lambda _: None, started=0.0, checked=True)
    return "openai.chat", response, as_str(data.get("model"))


def _chat_stream(chunks: list[dict[str, Any]]) -> Found | None:
    if any(chunk_problem(chunk) is not None for chunk in chunks):
        return None
    finish = None
    for chunk in chunks:
        finish = (chunk.get("choices") or [{}])[0].get("finish_reason") or finish
    response = read_stream(
        chunks, finish_reason=finish, model="", cost=lambda _: None, started=0, checked=True
    )
    model = next((m for c in reversed(chunks) if (m := as_str(c.get("model")))), "")
    return "openai.chat", response, model


def _as_sent(choices: list[dict[str, Any]]) -> bool:
    """Whether each choice has its message and its tool calls' arguments as JSON text: a
    completion as the API sends it (``read_completion`` also takes arguments parsed)."""
    messages = [choice.get("message") for choice in choices]
    return all(
        isinstance(message, dict)
        and not any(
            isinstance((call.get("function") or {}).get("arguments"), dict)
            for call in message.get("tool_calls") or []
        )
        for message in messages
    )


def gemini_model(uri: str) -> str:
    """The model a Gemini URL names: ``…/models/<model>:generateContent``."""
    path = uri.partition("?")[0] if isinstance(uri, str) else ""
    _, found, rest = path.partition("/models/")
    return rest.partition(":")[0].partition("/")[0] if found else ""


def request_api(uri: str, body: bytes | str | None) -> str | None:
    """The API a request is made to (``Recognised.api``), by its URL, else by its body's
    shape; None for another request. For what a request says when no reply is at hand (a
    cassette miss)."""
    path = uri.partition("?")[0] if isinstance(uri, str) else ""
    api = next((api for ending, api in _ENDPOINTS.items() if path.endswith(ending)), None)
    if api is not None:
        return api
    data = as_dict(loads(decode(body)))
    return next((api for field, api in _REQUEST_FIELDS.items() if field in data), None)


_ENDPOINTS = {
    "/chat/completions": "openai.chat",
    "/responses": "openai.responses",
    "/messages": "anthropic.messages",
    ":generateContent": "gemini.generate",
    ":streamGenerateContent": "gemini.generate",
}
# The field that holds a request's messages, by API.
_REQUEST_FIELDS = {
    "messages": "openai.chat",
    "input": "openai.responses",
    "contents": "gemini.generate",
}


# (api, response, the model its body names or "")
Found: TypeAlias = "tuple[str, ModelResponse, str]"
# A stream's events: (event name, its JSON object).
Events: TypeAlias = "list[tuple[str, dict[str, Any]]]"

_ANTHROPIC_DELTAS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "json"}
_RESPONSES_FINAL = {"response.completed", "response.incomplete", "response.failed"}
_RESPONSES_REASONING = {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
# A background response (``background=True``) not finished yet: polled, not answered.
_RESPONSES_PENDING = {"queued", "in_progress"}


# OpenAI Responses API.
def read_responses(data: dict[str, Any]) -> Found | None:
    """A Responses API response object: its output items, status and usage."""
    output = data.get("output")
    if not isinstance(output, list):
        return None
    if as_str(data.get("status")) in _RESPONSES_PENDING:
        return None  # a background reply polled before it finished: not a call yet
    items = as_dicts(output)
    parts = [p for i in items if i.get("type") == "message" for p in as_dicts(i.get("content"))]
    reasoning = [_reasoning_item(i) for i in items if i.get("type") == "reasoning"]
    calls = [i for i in items if as_str(i.get("type")).endswith("_call")]
    finish, interrupted = _responses_finish(data, bool(calls))
    usage = as_dict(data.get("usage"))
    cached = as_dict(usage.get("input_tokens_details")).get("cached_tokens")
    response = ModelResponse(
        content="".join(as_str(p.get("text")) for p in parts if p.get("type") == "output_text"),
        reasoning="\n\n".join(text for text in reasoning if text),
        tool_calls=tuple(_responses_call(n, c) for n, c in enumerate(calls)),
        finish_reason=finish,
        interrupted=interrupted,
        refusal=_responses_refusal(parts, finish),
        usage=_usage(
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            usage.get("total_tokens"),
            cached,
        ),
    )
    return "openai.responses", response, as_str(data.get("model"))


def _responses_refusal(parts: list[dict[str, Any]], finish: str | None) -> str | None:
    """The text of the reply's ``refusal`` parts, or its content filter's stop, or None."""
    refusals = [as_str(p.get("refusal")) for p in parts if p.get("type") == "refusal"]
    if refusals:
        return "\n".join(filter(None, refusals)) or "content: refusal"
    return _refused("incomplete_details.reason", finish, _FILTERED)


# An output item's bookkeeping, not what the model asked for (``_responses_call``).
_CALL_BOOKKEEPING = {"id", "type", "status", "call_id", "name", "output", "outputs", "result"}


def _responses_call(index: int, item: dict[str, Any]) -> ToolCall:
    """A tool-call output item of any kind (``function_call``, ``custom_tool_call``,
    ``computer_call``, ``web_search_call``, ``mcp_call``...): named by its tool where it has
    one, else by its type; its arguments, input or action as the arguments."""
    name = as_str(item.get("name")) or as_str(item.get("type"))
    for field in ("arguments", "input", "action"):
        if item.get(field) is not None:
            return _tool_call(index, item.get("call_id") or item.get("id"), name, item[field])
    asked = {k: v for k, v in item.items() if k not in _CALL_BOOKKEEPING and v is not None}
    return _tool_call(index, item.get("call_id") or item.get("id"), name, asked)


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
        usage=_usage(
            sum(as_int(usage.get(k)) for k in prompt),
            usage.get("output_tokens"),
            None,
            usage.get("cache_read_input_tokens"),
            usage.get("cache_creation_input_tokens"),
        ),
        refusal=_refused("stop_reason", stop, _REFUSED_STOPS),
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
    blocked = next((r for c in chunks if (r := _gemini_block(c))), None)
    response = ModelResponse(
        content="".join(p["text"] for p in text if p.get("thought") is not True),
        reasoning="".join(p["text"] for p in text if p.get("thought") is True),
        tool_calls=tuple(
            _tool_call(n, c.get("id"), c.get("name"), c.get("args")) for n, c in enumerate(calls)
        ),
        finish_reason=finish or None,
        interrupted=streamed and not finish and blocked is None,
        refusal=blocked or _refused("finishReason", finish, _GEMINI_BLOCKS),
        usage=_usage(
            usage.get("promptTokenCount"),
            completion,
            usage.get("totalTokenCount"),
            usage.get("cachedContentTokenCount"),
        ),
    )
    model = next((m for c in reversed(chunks) if (m := as_str(c.get("modelVersion")))), "")
    return "gemini.generate", response, model


def _is_gemini(data: Any) -> bool:
    """A Gemini response: candidates, or only the feedback of a blocked prompt."""
    return isinstance(data, dict) and ("candidates" in data or "promptFeedback" in data)


def _gemini_block(chunk: dict[str, Any]) -> str | None:
    """``promptFeedback.blockReason: <reason>`` when the prompt was blocked, else None."""
    reason = as_str(as_dict(chunk.get("promptFeedback")).get("blockReason"))
    return f"promptFeedback.blockReason: {reason}" if reason else None


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


def _call_text(call: dict[str, Any]) -> str:
    """A tool call as ``name(arguments)``."""
    arguments = call.get("arguments")
    shown = arguments if isinstance(arguments, str) else _json_text(arguments)
    return f"{as_str(call.get('name')) or '?'}({shown})"


def _json_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)


_REQUEST_READERS = {
    "openai.chat": _chat_request,
    "openai.responses": _responses_request,
    "anthropic.messages": _anthropic_request,
    "gemini.generate": _gemini_request,
}


# A reply's parts, as ``pytest_harness._response`` holds them.
# Stops that say the provider refused or blocked the call instead of answering.
_REFUSED_STOPS = frozenset({"refusal"})  # Anthropic's stop_reason
_FILTERED = frozenset({"content_filter"})  # OpenAI Responses' reason for an incomplete reply
_GEMINI_BLOCKS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)


def _refused(field: str, value: str | None, refusing: frozenset[str]) -> str | None:
    """``<field>: <value>`` when that value says the call was refused or blocked, else None."""
    return f"{field}: {value}" if value in refusing else None


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


def _usage(prompt: Any, completion: Any, total: Any, cached: Any = 0, written: Any = 0) -> Usage:
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


_LINES = re.compile(r"\r\n|\r|\n")
_FIRST_FIELD = re.compile(r"\A\s*(?:data|event):")


def decode(body: bytes | str | None) -> str | None:
    """The body as text, or None when it is not UTF-8 (or not a body)."""
    if isinstance(body, (bytes, bytearray)):
        try:
            return bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return body if isinstance(body, str) else None


def loads(text: str | None) -> Any:
    """The JSON value of the text, or None when it is not JSON."""
    try:
        return None if text is None else json.loads(text)
    except (ValueError, RecursionError):
        return None


def is_event_stream(headers: Mapping[str, Any], text: str) -> bool:
    """SSE by its content type (headers: name -> value or list of values, any case) or look."""
    items = headers.items() if isinstance(headers, Mapping) else ()
    for name, value in items:
        if isinstance(name, str) and name.lower() == "content-type":
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, str) and "text/event-stream" in v.lower() for v in values):
                return True
    return _FIRST_FIELD.match(text) is not None


def events(text: str) -> Iterator[tuple[str, str]]:
    """``(event name, data)`` of each event with data; the name is ``""`` when none was given."""
    name = ""
    data: list[str] = []
    for line in _LINES.split(text):
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "", []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if data:
        yield name, "\n".join(data)


def json_events(text: str) -> list[tuple[str, Any]]:
    """The events whose data is JSON, decoded; the others (``[DONE]``, a cut event) left out."""
    found = []
    for name, data in events(text):
        try:
            found.append((name, json.loads(data)))
        except (ValueError, RecursionError):
            continue
    return found
