"""What a model call returns: ``ModelResponse`` and its parts, as plain frozen data.

``read_completion`` and ``read_stream`` build one from an OpenAI-style chat completion, or
from the chunks of its stream, given as plain dicts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pytest_harness.validator import split_think, visible_text

__all__ = [
    "Messages",
    "ModelResponse",
    "TokenCallback",
    "ToolCall",
    "Usage",
    "read_completion",
    "read_stream",
]

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
    """Token counts of one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """One model turn, as plain data.

    Attributes:
        content: the text exactly as the model gave it (think blocks included), or None.
        reasoning: litellm's ``reasoning_content``, else the text of the think blocks.
        tool_calls: the tool calls requested.
        finish_reason: why the model stopped, as the provider said it.
        interrupted: a stream that ended without a finish reason (a partial, not a turn).
        usage: token counts.
        cost: USD cost when litellm knows the model's price, else None.
        model: the model the call was made with.
        id: the provider's id of the response, when it gave one (not compared).
        latency_s: wall time of the call (not compared: replays differ only in it).
    """

    content: str | None
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    interrupted: bool = False
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    model: str = ""
    id: str | None = field(default=None, compare=False)
    latency_s: float = field(default=0.0, compare=False)

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)

    @property
    def text(self) -> str:
        """The visible text: content without think blocks, stripped."""
        return visible_text(self.content).strip()


Pricing: TypeAlias = Callable[["Usage"], "float | None"]


def read_completion(
    data: Mapping[str, Any], *, model: str, cost: Pricing, started: float
) -> ModelResponse:
    """The response in a chat completion (its first choice).

    Args:
        data: the completion, with at least one choice.
        model: the model asked for.
        cost: the USD cost of the usage, or None when unknown.
        started: ``time.perf_counter()`` when the call started.
    """
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
) -> ModelResponse:
    """The response a stream's chunks add up to; without a finish reason it was interrupted."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: Any = None
    for data in chunks:
        usage = data.get("usage") or usage
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
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
        usage=counted,
        cost=cost(counted),
        model=model,
        id=next(filter(None, map(_id, chunks)), None),
        latency_s=time.perf_counter() - started,
    )


def _id(data: Mapping[str, Any]) -> str | None:
    value = data.get("id")
    return value if isinstance(value, str) and value else None


def _usage(data: Mapping[str, Any] | None) -> Usage:
    data = data or {}
    prompt = int(data.get("prompt_tokens") or 0)
    completion = int(data.get("completion_tokens") or 0)
    total = int(data.get("total_tokens") or prompt + completion)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


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
    except (TypeError, ValueError):
        return None
    return parsed if isinstance(parsed, dict) else None
