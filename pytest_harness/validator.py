"""ResponseValidator: is a model response usable, and does it say anything?

Two questions, two methods (after Rubino's ResponseValidator):

- ``valid(response)`` is STRUCTURAL: not None, not an interrupted partial, and carrying text
  (visible or reasoning) or tool calls. It returns ``(ok, reason)`` with reason ``"nil_response"``,
  ``"interrupted"`` or ``"empty_response"``, checked in that order.
- ``degenerate(response)`` is SEMANTIC: a structurally valid text response whose visible
  content is empty once ``<think>`` / ``<thinking>`` blocks are removed (the model reasoned
  but never spoke). Tool-call responses are never degenerate: the tool call is the answer.
  None and interrupted responses are not degenerate either: they are invalid.

litellm moves a leading think block of many providers into ``reasoning_content``, so the
text the seed validator saw as ``"<think>…</think>"`` arrives here as blank ``content`` plus
``reasoning``. Reasoning therefore counts as text for ``valid`` (as the think block did), and
never as visible content for ``degenerate``: thinking-only stays degenerate, not empty.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = ["ResponseLike", "ResponseValidator", "split_think", "visible_text"]

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
