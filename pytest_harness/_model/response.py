"""What a model call returns (``ModelResponse`` and its parts, plain frozen data), and the
check of whether a response is usable (``ResponseValidator``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

TokenCallback: TypeAlias = Callable[[str], None]
Messages: TypeAlias = str | Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call requested by the model.

    Attributes:
        id: the provider's call id, or None when it gave none (Gemini's function calls often
            carry none: their results answer them by name, in order).
        name: the tool's name.
        arguments: the arguments parsed from JSON, or None when they did not parse to an object.
        raw_arguments: the arguments exactly as the model sent them.
    """

    id: str | None
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
        content: the text exactly as the model gave it (think blocks included; of a list
            of parts, its text parts), or None.
        reasoning: the reasoning sent apart from the text (litellm's
            ``reasoning_content``; a provider's ``reasoning`` field, thinking parts), else
            the text of the think blocks.
        tool_calls: the tool calls requested: those the caller is to run.
        provider_tool_calls: the tools the provider ran itself while answering (OpenAI
            Responses' hosted tools: ``web_search_call``, ``mcp_call``...): nothing for the
            caller to run, so not in ``tool_calls``; kept to be shown apart.
        media: the output the reply carries besides text and tool calls, one entry per
            part, named by its MIME type (``image/png``; by the part's kind when it names
            none): Gemini's ``inlineData`` and ``fileData`` parts (an image it made), thought
            parts left out. A reply with media is not empty.
        finish_reason: why the model stopped, as the provider said it.
        interrupted: a stream that did not finish (a partial, not a turn): cut off with no
            finish reason and before its end (a chat stream's ``data: [DONE]``), or failed
            (a chat stream's error chunk).
        refusal: the provider refused or blocked the call (its refusal text, or the field
            that said so, ``finishReason: SAFETY``), or, in a failed stream, its error
            (``error: <message>``); None for an answer.
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
    provider_tool_calls: tuple[ToolCall, ...] = ()
    media: tuple[str, ...] = ()
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


# The USD cost of a usage, or None when unknown: what a reader of a reply is given to price it.
Pricing: TypeAlias = Callable[["Usage"], "float | None"]


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


def _answers(response: ResponseLike) -> bool:
    """Whether the response answers with something besides text: tool calls, tools the
    provider ran for it (their output, an image or a search, is part of the answer), or
    media."""
    return (
        response.has_tool_calls
        or bool(getattr(response, "provider_tool_calls", ()))
        or bool(getattr(response, "media", ()))
    )


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
        if _answers(response):
            return True, None
        if not (response.content or "").strip() and not _reasoning(response).strip():
            return False, "empty_response"
        return True, None

    def degenerate(self, response: ResponseLike | None) -> bool:
        """True for a text response whose visible content is blank once thinking is removed
        (a response with tool calls or media is not a text response)."""
        if response is None or response.interrupted:
            return False
        if _answers(response):
            return False
        return not visible_text(response.content).strip()

    def problem(self, response: ResponseLike | None) -> str | None:
        """The first defect of a response: a ``valid`` reason, ``"degenerate"``, or None."""
        ok, reason = self.valid(response)
        if not ok:
            return reason
        return "degenerate" if self.degenerate(response) else None
