"""What a model call returns: ``ModelResponse`` and its parts, as plain frozen data."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pytest_harness.validator import visible_text

__all__ = ["Messages", "ModelResponse", "TokenCallback", "ToolCall", "Usage"]

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
    latency_s: float = field(default=0.0, compare=False)

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)

    @property
    def text(self) -> str:
        """The visible text: content without think blocks, stripped."""
        return visible_text(self.content).strip()
