"""What a model call returns: ``ModelResponse`` and its parts, as plain frozen data.

``read_completion`` and ``read_stream`` build one from an OpenAI-style chat completion, or
from the chunks of its stream, given as plain dicts. Each first checks the type of every
field it reads (``completion_problem``, ``chunk_problem``): a completion or chunk of the
wrong shape is a ``ProviderResponseError`` that names the field, never a Python error.

The degenerate-output check is here too: ``ResponseValidator`` says whether a response is
usable and whether it says anything.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from pytest_harness.errors import ProviderResponseError

TokenCallback: TypeAlias = Callable[[str], None]
Messages: TypeAlias = str | Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call requested by the model.

    Attributes:
        id: the provider's call id.
        name: the tool's name.
        arguments: the arguments parsed from JSON, or None when they did not parse to an object.
        raw_arguments: the arguments exactly as the model sent them.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str = field(repr=False)

    @property
    def parsed(self) -> bool:
        """Whether ``arguments`` holds the parsed JSON object."""
        return self.arguments is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one call, or of many: usages add (``a + b``, ``sum(usages, Usage())``).

    Every total of the package (a run's tally, a test's spend, a panel's judges) is a sum of
    these.

    Attributes:
        prompt_tokens: every token of the prompt, those read from or written to the
            provider's prompt cache included.
        completion_tokens: the reply's tokens, reasoning included.
        total_tokens: as the provider counted them (else prompt plus completion).
        cached_tokens: the part of ``prompt_tokens`` read from the prompt cache (priced at
            the cache-read rate).
        cache_write_tokens: the part of ``prompt_tokens`` written to the prompt cache
            (Anthropic; priced at the cache-write rate).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: object) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """One model turn, as plain data.

    Attributes:
        content: the text exactly as the model gave it (think blocks included), or None.
        reasoning: litellm's ``reasoning_content``, else the text of the think blocks.
        tool_calls: the tool calls requested.
        finish_reason: why the model stopped, as the provider said it.
        interrupted: a stream that ended without a finish reason (a partial, not a turn).
        refusal: the provider refused or blocked the call (its refusal text, or the field
            that said so, ``finishReason: SAFETY``), or None for an answer.
        usage: token counts.
        cost: USD cost when litellm knows the model's price, else None.
        model: the model the call was made with.
        id: the provider's id of the response, when it gave one (not compared).
        latency_s: wall time of the call (not compared: replays differ only in it); in
            replay, the latency recorded with the cassette when it kept one.
        latency_recorded: ``latency_s`` is the recorded one (a replay), not this call's.
    """

    content: str | None
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    interrupted: bool = False
    refusal: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    model: str = ""
    id: str | None = field(default=None, compare=False)
    latency_s: float = field(default=0.0, compare=False)
    latency_recorded: bool = field(default=False, compare=False)

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)

    @property
    def text(self) -> str:
        """The visible text: content without think blocks, stripped."""
        return visible_text(self.content).strip()


Pricing: TypeAlias = Callable[["Usage"], "float | None"]


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
    content = message.get("content")
    usage = _usage(data.get("usage"))
    return ModelResponse(
        content=content,
        reasoning=message.get("reasoning_content") or split_think(content)[0],
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
) -> ModelResponse:
    """The response a stream's chunks add up to; without a finish reason it was interrupted.

    ``checked``: the chunks were read before (``chunk_problem`` found nothing in any): their
    shape is not checked again.

    Raises:
        ProviderResponseError: a chunk has a field of the wrong type.
    """
    for number, chunk in enumerate(() if checked else chunks, 1):
        problem = chunk_problem(chunk)
        if problem is not None:
            raise _unreadable(model, "a stream", f"chunk {number} of {len(chunks)}: {problem}")
    content: list[str] = []
    reasoning: list[str] = []
    refused: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: Any = None
    for data in chunks:
        usage = data.get("usage") or usage
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
            refused.append(delta.get("refusal") or "")
            for part in delta.get("tool_calls") or []:
                _merge_tool_delta(calls, part)
    text = "".join(content) or None
    counted = _usage(usage)
    return ModelResponse(
        content=text,
        reasoning="".join(reasoning) or split_think(text)[0],
        tool_calls=tuple(_tool_call(i, calls[i]) for i in sorted(calls)),
        finish_reason=finish_reason,
        interrupted=finish_reason is None,
        refusal=_refusal("".join(refused), finish_reason),
        usage=counted,
        cost=cost(counted),
        model=model,
        id=next(filter(None, map(_id, chunks)), None),
        latency_s=time.perf_counter() - started,
    )


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
    return {"content": str, "reasoning_content": str, "refusal": str, "tool_calls": [call]}


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


_TAG = r"think(?:ing)?"
# A closed block: the closing tag must name the same tag as the opening one.
_CLOSED = re.compile(rf"<\s*({_TAG})\s*>(.*?)<\s*/\s*\1\s*>", re.IGNORECASE | re.DOTALL)
# An opening tag never closed: the block runs to the end of the text.
_UNCLOSED = re.compile(rf"<\s*{_TAG}\s*>(.*)\Z", re.IGNORECASE | re.DOTALL)


class ResponseLike(Protocol):
    """What the validator reads of a response (``ModelResponse`` has all of it)."""

    @property
    def content(self) -> str | None: ...

    @property
    def interrupted(self) -> bool: ...

    @property
    def has_tool_calls(self) -> bool: ...


def _reasoning(response: ResponseLike) -> str:
    return getattr(response, "reasoning", None) or ""


def visible_text(content: str | None) -> str:
    """The content with every think block removed (an unclosed one runs to the end)."""
    if not content:
        return ""
    return _UNCLOSED.sub("", _CLOSED.sub("", content))


def split_think(content: str | None) -> tuple[str | None, str]:
    """Split ``content`` into (text of its think blocks, visible text).

    The reasoning is the think blocks' inner text joined by blank lines, or None when the
    content has no think block.
    """
    if not content:
        return None, ""
    thoughts = [m.group(2).strip() for m in _CLOSED.finditer(content)]
    rest = _CLOSED.sub("", content)
    unclosed = _UNCLOSED.search(rest)
    if unclosed:
        thoughts.append(unclosed.group(1).strip())
        rest = rest[: unclosed.start()]
    return ("\n\n".join(thoughts) if thoughts else None), rest


class ResponseValidator:
    """Judges one response on two axes: structurally valid, and not degenerate."""

    def valid(self, response: ResponseLike | None) -> tuple[bool, str | None]:
        """Return ``(True, None)`` for a usable response, else ``(False, reason)``."""
        if response is None:
            return False, "nil_response"
        if response.interrupted:
            return False, "interrupted"
        if getattr(response, "refusal", None):
            return False, "refused"
        if response.has_tool_calls:
            return True, None
        if not (response.content or "").strip() and not _reasoning(response).strip():
            return False, "empty_response"
        return True, None

    def degenerate(self, response: ResponseLike | None) -> bool:
        """True for a text response whose visible content is blank once thinking is removed."""
        if response is None or response.interrupted:
            return False
        if response.has_tool_calls:
            return False
        return not visible_text(response.content).strip()

    def problem(self, response: ResponseLike | None) -> str | None:
        """The first defect of a response: a ``valid`` reason, ``"degenerate"``, or None."""
        ok, reason = self.valid(response)
        if not ok:
            return reason
        return "degenerate" if self.degenerate(response) else None
