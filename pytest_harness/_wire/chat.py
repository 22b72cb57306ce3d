"""OpenAI Chat Completions and the providers compatible with it: requests, replies, streams.

A reply is a chat completion (its first choice read: message, tool calls, finish reason,
refusal) with a usage block; a stream is its chunks, whose deltas add up to the same. A
message's content is its text, or a list of parts (Mistral's): its ``text`` parts are the
content, its ``thinking`` parts reasoning. Reasoning also comes in a field of its own:
``reasoning_content`` (DeepSeek, vLLM, litellm), ``reasoning`` (Groq, Cerebras, OpenRouter)
or OpenRouter's ``reasoning_details``. A stream that sent its ``data: [DONE]`` came to its
end, with a finish reason or without one (OpenRouter's providers, Snowflake Cortex send
none); a stream with an ``error`` chunk failed (the SDK raises ``APIError`` at it).

The same readers build the seam's ``ModelResponse`` from litellm's output
(``read_completion``, ``read_stream``: litellm answers every provider in this shape), so
each first checks the type of every field it reads (``completion_problem``,
``chunk_problem``): a completion or chunk of the wrong shape is a ``ProviderResponseError``
that names the field, never a Python error. Recognition reads a recorded body only once
those checks found nothing.

``as_sent`` says whether litellm passes a recognised reply on as it is: the seam's replay
then answers with the response recognition read (``Recognised.as_sent``), not through
litellm.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_harness._model.response import ModelResponse, Pricing, ToolCall, Usage, split_think
from pytest_harness._wire import sse
from pytest_harness._wire._json import as_dict, as_dicts, as_str
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
    reply_format,
)
from pytest_harness.errors import ProviderResponseError

_API = "openai.chat"


def read_request(data: dict[str, Any]) -> Asked:
    """``messages`` (content text or parts, tool calls, tool results), ``tools`` and the
    legacy ``functions``; the system prompt is the system and developer messages."""
    messages = as_dicts(data.get("messages"))
    tools = [as_str(as_dict(t.get("function")).get("name")) for t in as_dicts(data.get("tools"))]
    tools += [as_str(f.get("name")) for f in as_dicts(data.get("functions"))]
    wanted = as_dict(data.get("response_format"))  # {"type": "json_schema", "json_schema": {...}}
    schema = as_dict(wanted.get("json_schema")).get("schema") or wanted.get("schema")
    return Asked(
        turns=tuple(map(message_turn, messages)),
        tools=names(tools),
        results=_results(messages),
        **reply_format(wanted.get("type"), schema),
    )


def message_turn(message: dict[str, Any]) -> Turn:
    """A message of this shape (Ollama's too): its text, then each tool call as
    ``name(arguments)``."""
    calls = [as_dict(call.get("function")) for call in as_dicts(message.get("tool_calls"))]
    said = [parts_text(message.get("content"))]
    said += [call_text(call.get("name"), call.get("arguments")) for call in calls]
    return Turn(role=as_str(message.get("role")) or "?", text=joined(said))


def _results(messages: list[dict[str, Any]]) -> tuple[SentResult, ...]:
    """``role: tool`` messages, named by the call of their ``tool_call_id`` when they do not
    say it; the legacy ``role: function`` by name."""
    called = {
        as_str(call.get("id")): as_str(as_dict(call.get("function")).get("name"))
        for message in messages
        for call in as_dicts(message.get("tool_calls"))
    }
    results = []
    for message in messages:
        text = parts_text(message.get("content"))
        if message.get("role") == "tool":
            call_id = as_str(message.get("tool_call_id")) or None
            name = as_str(message.get("name")) or called.get(call_id or "", "")
            results.append(SentResult(call_id=call_id, name=name, text=text))
        elif message.get("role") == "function":
            results.append(SentResult(call_id=None, name=as_str(message.get("name")), text=text))
    return tuple(results)


def read_reply(data: Any) -> Found | None:
    """A chat completion as the API sends it; None for any other value (a legacy text
    completion, litellm's own output, a field of the wrong type)."""
    if completion_problem(data) is not None or not _messages_sent(data["choices"]):
        return None
    response = read_completion(data, model="", cost=_unpriced, started=0.0, checked=True)
    return _API, response, as_str(data.get("model"))


def read_events(events: Events) -> Found | None:
    """A stream's chunks added up; None when one of them is not a chunk. Its events end
    with ``(sse.DONE, {})`` when it sent its ``data: [DONE]`` (``sse.stream_events``)."""
    sent, done = sse.ended(events)
    chunks = [data for _, data in sent]
    if any(chunk_problem(chunk) is not None for chunk in chunks):
        return None
    finish = None
    for chunk in chunks:  # "" is no finish reason (Ollama sent it in every chunk until 2024)
        finish = (chunk.get("choices") or [{}])[0].get("finish_reason") or finish
    response = read_stream(
        chunks, finish_reason=finish, model="", cost=_unpriced, started=0, checked=True, ended=done
    )
    model = next((m for c in reversed(chunks) if (m := as_str(c.get("model")))), "")
    return _API, response, model


def _unpriced(_: Usage) -> None:
    return None  # recognition never prices: the traffic check prices what it counts


def _messages_sent(choices: list[dict[str, Any]]) -> bool:
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


# What litellm passes on unchanged from an OpenAI-compatible chat completion: these finish
# reasons (it maps others), these message fields (a provider's own ``reasoning`` it may map),
# a content that is text (a list of parts it cannot read) and opens with no think block (it
# moves one into ``reasoning_content``), no error chunk (the SDK raises at it, and the seam
# keeps the chunks before it).
_AS_SENT_FINISH = frozenset({"stop", "length", "tool_calls", "content_filter"})
_AS_SENT_FIELDS = frozenset(
    {"role", "content", "tool_calls", "refusal", "reasoning_content", "annotations"}
)
_THINK = re.compile(r"<(?:think|thinking|budget:thinking)>")


def as_sent(payload: Any, *, streamed: bool, counted: bool = False) -> bool:
    """Whether litellm passes a recognised chat reply on as it is, so that the response
    recognition read is the one litellm would give (but for model, cost and latency).

    Args:
        payload: ``Recognised.payload`` of an ``openai.chat`` reply: the completion, or the
            stream's chunks.
        streamed: it is a stream's chunks.
        counted: the tokens litellm counted for a reply that says none are known (a
            recording keeps them): a reply without usage is passed on too.
    """
    if not streamed:
        data = payload if isinstance(payload, Mapping) else {}
        usage = data.get("usage") or ({} if counted else None)
        return _passed_on(data.get("choices"), "message", usage)
    chunks = [chunk for chunk in payload if isinstance(chunk, Mapping)]
    if any(_error(chunk) for chunk in chunks):
        return False
    usage = next((chunk["usage"] for chunk in chunks if chunk.get("usage")), None)
    choices = [choice for chunk in chunks for choice in chunk.get("choices") or []]
    return _passed_on(choices, "delta", usage or ({} if counted else None))


def _passed_on(choices: Any, part: str, usage: Any) -> bool:
    """Whether litellm passes these choices on as they are: known fields, a finish reason
    it keeps, no think block, and the usage counted (litellm counts a missing one itself)."""
    if not isinstance(choices, list) or not choices or not isinstance(usage, Mapping):
        return False
    finished = False
    for choice in choices:
        message = choice.get(part) if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping) or not _AS_SENT_FIELDS.issuperset(message):
            return False
        content = message.get("content")
        if not isinstance(content, (str, type(None))) or (content and _THINK.match(content)):
            return False
        reason = choice.get("finish_reason")
        if reason is not None and reason not in _AS_SENT_FINISH:
            return False
        finished = finished or reason is not None
    return finished


def read_completion(
    data: Mapping[str, Any], *, model: str, cost: Pricing, started: float, checked: bool = False
) -> ModelResponse:
    """The response in a chat completion (its first choice).

    Args:
        data: the completion, with at least one choice.
        model: the model asked for.
        cost: the USD cost of the usage, or None when unknown.
        started: ``time.perf_counter()`` when the call started.
        checked: ``data`` was read before (``completion_problem`` found nothing): its shape
            is not checked again.

    Raises:
        ProviderResponseError: the completion has no choice, or a field of the wrong type.
    """
    problem = None if checked else completion_problem(data)
    if problem is not None:
        raise _unreadable(model, "a chat completion", problem)
    choice = data["choices"][0]
    message = choice.get("message") or {}
    content, thoughts = _parts(message.get("content"))
    usage = _usage(data.get("usage"))
    return ModelResponse(
        content=content,
        reasoning=_reasoning(message, "\n\n") or "\n\n".join(thoughts) or split_think(content)[0],
        tool_calls=tuple(_tool_call(i, c) for i, c in enumerate(message.get("tool_calls") or [])),
        finish_reason=choice.get("finish_reason"),
        interrupted=False,
        refusal=_refusal(message.get("refusal"), choice.get("finish_reason")),
        usage=usage,
        cost=cost(usage),
        model=model,
        id=_id(data),
        latency_s=time.perf_counter() - started,
    )


def read_stream(
    chunks: Sequence[Mapping[str, Any]],
    *,
    finish_reason: str | None,
    model: str,
    cost: Pricing,
    started: float,
    checked: bool = False,
    ended: bool = False,
) -> ModelResponse:
    """The response a stream's chunks add up to. It was interrupted when it stopped before
    its end with no finish reason, or when it failed: a chunk sent an ``error`` (the chunks
    are read up to it; no finish reason; the error is its ``refusal``, the field a failure
    message shows).

    Args:
        chunks: the chunks, in order.
        finish_reason: the last finish reason the stream sent, or None.
        model: the model asked for.
        cost: the USD cost of the usage, or None when unknown.
        started: ``time.perf_counter()`` when the call started.
        checked: the chunks were read before (``chunk_problem`` found nothing in any): their
            shape is not checked again.
        ended: the stream came to its end (it sent ``data: [DONE]``): without a finish
            reason it is a whole reply all the same, its ``finish_reason`` None.

    Raises:
        ProviderResponseError: a chunk has a field of the wrong type.
    """
    for number, chunk in enumerate(() if checked else chunks, 1):
        problem = chunk_problem(chunk)
        if problem is not None:
            raise _unreadable(model, "a stream", f"chunk {number} of {len(chunks)}: {problem}")
    chunks, error = _until_error(chunks)
    if error is not None:  # a failed reply: whatever finish reason came, it did not finish
        finish_reason = None
    added = _Deltas(chunks)
    counted = _usage(added.usage)
    return ModelResponse(
        content=added.text,
        reasoning=added.reasoning or split_think(added.text)[0],
        tool_calls=tuple(_tool_call(i, added.calls[i]) for i in sorted(added.calls)),
        finish_reason=finish_reason,
        interrupted=error is not None or (finish_reason is None and not ended),
        refusal=error or _refusal(added.refused, finish_reason),
        usage=counted,
        cost=cost(counted),
        model=model,
        id=next(filter(None, map(_id, chunks)), None),
        latency_s=time.perf_counter() - started,
    )


def _until_error(
    chunks: Sequence[Mapping[str, Any]],
) -> tuple[Sequence[Mapping[str, Any]], str | None]:
    """The chunks up to the first that sends an error, that one included (its usage counts;
    the SDK reads nothing after it), and its error; all of them and None when none does."""
    for number, chunk in enumerate(chunks):
        error = _error(chunk)
        if error is not None:
            return chunks[: number + 1], error
    return chunks, None


class _Deltas:
    """What a stream's deltas add up to: text, reasoning, refusal, tool calls, its usage."""

    def __init__(self, chunks: Sequence[Mapping[str, Any]]) -> None:
        content: list[str] = []
        reasoning: list[str] = []
        refused: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Any = None
        for data in chunks:
            self.usage = data.get("usage") or self.usage
            for choice in data.get("choices") or []:
                delta = choice.get("delta") or {}
                text, thoughts = _parts(delta.get("content"))
                content.append(text or "")
                reasoning.append(_reasoning(delta, "") or "".join(thoughts))
                refused.append(delta.get("refusal") or "")
                for part in delta.get("tool_calls") or []:
                    _merge_tool_delta(self.calls, part)
        self.text = "".join(content) or None
        self.reasoning = "".join(reasoning)
        self.refused = "".join(refused)


def _parts(content: Any) -> tuple[str | None, list[str]]:
    """A message's (or a delta's) content as its text and the texts of its thinking: a
    string is all text; a list of parts (Mistral's) gives its ``text`` parts joined (None
    when there are none) and the text of each ``thinking`` part (a string, or text parts)."""
    if not isinstance(content, list):
        return content, []
    parts = as_dicts(content)
    text = "".join(as_str(part.get("text")) for part in parts if part.get("type") == "text")
    thoughts = []
    for part in parts:
        thinking = part.get("thinking") if part.get("type") == "thinking" else None
        inner = [thinking] if isinstance(thinking, str) else as_dicts(thinking)
        thoughts += [t if isinstance(t, str) else as_str(t.get("text")) for t in inner]
    return text or None, [thought for thought in thoughts if thought]


# OpenRouter's reasoning_details: the field that holds the text of each kind with text.
_DETAIL_TEXT = {"reasoning.text": "text", "reasoning.summary": "summary"}


def _reasoning(message: Mapping[str, Any], separator: str) -> str:
    """The reasoning a message (or a delta) sends in a field of its own, the first given:
    ``reasoning_content``, ``reasoning``, else the text of its ``reasoning_details`` (an
    encrypted one has none) joined by ``separator``; "" when there is none."""
    for name in ("reasoning_content", "reasoning"):
        text = as_str(message.get(name))
        if text:
            return text
    details = as_dicts(message.get("reasoning_details"))
    texts = [as_str(d.get(_DETAIL_TEXT.get(as_str(d.get("type")), ""))) for d in details]
    return separator.join(text for text in texts if text)


def _error(chunk: Mapping[str, Any]) -> str | None:
    """A chunk's ``error`` as a failure message shows it, ``error: <message>``, or None when
    it sends none. The SDK raises ``APIError`` at a chunk whose ``error`` is set, with its
    ``message`` (else its own words, here too); an error given as text is its message."""
    error = chunk.get("error")
    if not error:
        return None
    message = error.get("message") if isinstance(error, Mapping) else error
    shown = message if isinstance(message, str) and message else _STREAM_ERROR
    return f"error: {shown}"


_STREAM_ERROR = "An error occurred during streaming"  # the SDK's message for such an error


def _refusal(text: str | None, finish_reason: str | None) -> str | None:
    """The refusal of a chat reply: its ``refusal`` text, or a content filter's stop."""
    if finish_reason == "content_filter":
        return text or "finish_reason: content_filter"
    return text or None


def _id(data: Mapping[str, Any]) -> str | None:
    value = data.get("id")
    return value if isinstance(value, str) and value else None


def _usage(data: Mapping[str, Any] | None) -> Usage:
    data = data or {}
    prompt = int(data.get("prompt_tokens") or 0)
    completion = int(data.get("completion_tokens") or 0)
    total = int(data.get("total_tokens") or prompt + completion)
    details = data.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        cached_tokens=_count(cached),
        # litellm's usage of an Anthropic reply keeps its cache writes here.
        cache_write_tokens=_count(data.get("cache_creation_input_tokens")),
    )


def _count(value: Any) -> int:
    """A token count read from a provider's usage: an integer, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _merge_tool_delta(calls: dict[int, dict[str, Any]], part: Mapping[str, Any]) -> None:
    index = part.get("index") or 0
    slot = calls.setdefault(index, {"id": None, "function": {"name": "", "arguments": ""}})
    slot["id"] = part.get("id") or slot["id"]
    function = part.get("function") or {}
    slot["function"]["name"] += function.get("name") or ""
    slot["function"]["arguments"] += function.get("arguments") or ""


def _tool_call(index: int, data: Mapping[str, Any]) -> ToolCall:
    function = data.get("function") or {}
    raw = function.get("arguments")
    raw_text = raw if isinstance(raw, str) else json.dumps(raw)
    return ToolCall(
        id=data.get("id") or f"call_{index}",
        name=function.get("name") or "",
        arguments=_parse_arguments(raw),
        raw_arguments=raw_text,
    )


def _parse_arguments(raw: Any) -> Mapping[str, Any] | None:
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError, RecursionError):  # RecursionError: too deep to parse
        return None
    return parsed if isinstance(parsed, dict) else None


# The fields read_completion and read_stream read, and their types: absent or null is always
# fine; a dict is an object's fields, a list of one shape a list of such values.
# A tuple is any of its types.
_USAGE = {"prompt_tokens": int, "completion_tokens": int, "total_tokens": int}


def _message(arguments: type | tuple[type, ...]) -> dict[str, Any]:
    call = {"id": str, "index": int, "function": {"name": str, "arguments": arguments}}
    # A list of parts is read part by part, each of any shape (``_parts``).
    return {
        "content": (str, list),
        "reasoning_content": str,
        "refusal": str,
        "tool_calls": [call],
    }


# A stream's argument pieces are text to join; a whole call's may also come parsed.
_CHUNK = {"choices": [{"finish_reason": str, "delta": _message(str)}], "usage": _USAGE}
_COMPLETION = {
    "choices": [{"finish_reason": str, "message": _message((str, dict))}],
    "usage": _USAGE,
}
_NAMES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
}


def completion_problem(data: Any) -> str | None:
    """What makes ``data`` unreadable as a chat completion (the field and what it is), or None."""
    if isinstance(data, Mapping) and not data.get("choices"):
        return f"choices must be a list of at least one choice, got {_kind(data.get('choices'))}"
    return _shape_problem(data, _COMPLETION, "")


def chunk_problem(data: Any) -> str | None:
    """What makes ``data`` unreadable as a chunk of a chat completion stream, or None."""
    return _shape_problem(data, _CHUNK, "")


def _shape_problem(value: Any, shape: Any, where: str) -> str | None:
    if isinstance(shape, dict):
        if not isinstance(value, Mapping):
            expected = f"{where} must be an object" if where else "expected an object"
            return f"{expected}, got {_kind(value)}"
        for key, inner in shape.items():
            child = value.get(key)
            if child is None:
                continue
            problem = _shape_problem(child, inner, f"{where}.{key}" if where else key)
            if problem is not None:
                return problem
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} must be a list, got {_kind(value)}"
        for index, item in enumerate(value):
            problem = _shape_problem(item, shape[0], f"{where}[{index}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, bool) or not isinstance(value, shape):
        expected = " or ".join(
            _NAMES[kind] for kind in (shape if isinstance(shape, tuple) else [shape])
        )
        return f"{where} must be {expected}, got {_kind(value)}"
    return None


def _kind(value: Any) -> str:
    """A JSON value for messages: its type and the start of it (never all of a big one)."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        keys = ", ".join(repr(key)[:30] for key in list(value)[:5])
        return f"an object with keys {keys}" if keys else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, int) and value.bit_length() > 64:
        return "an integer"  # repr refuses integers of more than 4,300 digits
    shown = repr(value[:80] if isinstance(value, str) else value)
    return f"{_NAMES.get(type(value)) or type(value).__name__} ({shown[:80]})"


def _unreadable(model: str, what: str, problem: str) -> ProviderResponseError:
    return ProviderResponseError(
        f"model {model!r} answered {what} that cannot be read: {problem}. The provider's reply "
        "is not an OpenAI-style chat completion; check api_base and the model name."
    )
