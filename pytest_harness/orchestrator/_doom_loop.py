"""Doom-loop detection: a model that keeps making the same tool calls is warned, then stopped."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_harness._model.response import ModelResponse
from pytest_harness.errors import ConfigError, StopRun
from pytest_harness.orchestrator._pipeline import ModelCall, Next

WARNING_PREFIX = "Warning from the harness:"

Signature = tuple[tuple[str, str], ...]  # the (name, canonical arguments) of a response's calls


@dataclass(frozen=True, slots=True)
class Streak:
    """The responses at the end of the conversation that asked for the same calls.

    Attributes:
        signature: their calls, as (name, canonical arguments), sorted.
        length: how many responses in a row.
        warned: whether a warning was given inside the streak.
    """

    signature: Signature
    length: int
    warned: bool


@dataclass(frozen=True, slots=True)
class DoomLoop:
    """Warn a model that repeats the same tool calls, then stop the run if it goes on.

    Put it outside ``count_usage`` and any middleware that changes the conversation for one
    request only, so that its warning stays in the conversation.

    Attributes:
        repeats: responses in a row with the same calls before the warning (2 or more);
            the next identical response stops the run (``doom_loop``).
    """

    repeats: int = 3

    def __post_init__(self) -> None:
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 2:
            raise ConfigError(
                f"DoomLoop(repeats=...) expects a whole number of 2 or more (the same tool "
                f"calls this many times in a row earn a warning), got {self.repeats!r}; "
                "to turn the detection off, leave DoomLoop out of the middleware."
            )

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        streak = trailing_streak(call.messages)
        if streak is None or streak.length < self.repeats:
            return await next(call)
        if not streak.warned:
            call.messages.append({"role": "user", "content": warning(streak)})
            call.event("doom_loop", f"{describe(streak)}; warned the model")
        response = await next(call)
        if signature(response_calls(response)) == streak.signature:
            detail = (
                f"{describe(streak, streak.length + 1)}, the last after the warning; "
                "the run stopped before the last calls ran"
            )
            call.event("doom_loop", detail)
            raise StopRun("doom_loop", detail)
        return response


def trailing_streak(messages: Sequence[Mapping[str, Any]]) -> Streak | None:
    """The streak of identical tool-calling responses ending the conversation, or None.

    Read backwards: tool results are skipped, the harness's warning is noted (it counts only
    when an earlier response of the streak precedes it), anything else ends the streak.
    """
    found: Signature | None = None
    length, warned, warning_seen = 0, False, False
    for message in reversed(messages):
        role = message.get("role")
        if role == "tool":
            continue
        if role == "user" and is_warning(message):
            warning_seen = True
            continue
        if role != "assistant" or not message.get("tool_calls"):
            break
        current = signature(message_calls(message))
        if found is not None and current != found:
            break
        found, length = current, length + 1
        warned = warned or warning_seen
    return None if found is None else Streak(found, length, warned)


def message_calls(message: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """(name, raw arguments) of an assistant message's tool calls."""
    for tool_call in message.get("tool_calls") or ():
        function = tool_call.get("function") or {}
        yield str(function.get("name", "")), str(function.get("arguments") or "")


def response_calls(response: ModelResponse) -> Iterable[tuple[str, str]]:
    """(name, raw arguments) of a response's tool calls."""
    return ((call.name, call.raw_arguments) for call in response.tool_calls)


def signature(calls: Iterable[tuple[str, str]]) -> Signature:
    """The calls with canonical arguments, sorted: equal for the same batch in any order."""
    return tuple(sorted((name, canonical(arguments)) for name, arguments in calls))


def canonical(arguments: str) -> str:
    """Arguments as canonical JSON (sorted keys, no whitespace); as sent if not JSON."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return arguments.strip()
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def describe(streak: Streak, times: int | None = None, limit: int = 200) -> str:
    """The streak for an event: ``lookup called 3 times in a row with {...}``."""
    count = f"{streak.length if times is None else times} times in a row"
    if len(streak.signature) == 1:
        name, arguments = streak.signature[0]
        return f"{name} called {count} with {_cut(arguments, limit)}"
    listed = ", ".join(f"{name} {_cut(arguments, limit)}" for name, arguments in streak.signature)
    return f"the same batch ({listed}) made {count}"


def warning(streak: Streak) -> str:
    """The message that tells the model it is going round in circles."""
    names = sorted({name for name, _ in streak.signature})
    if len(streak.signature) == 1:
        what = f"called `{names[0]}` with the same arguments"
        again = "Do not call it again with these arguments"
    else:
        what = "made the same tool calls (" + ", ".join(f"`{n}`" for n in names) + ")"
        again = "Do not make these calls again"
    return (
        f"{WARNING_PREFIX} you {what} {streak.length} times in a row. {again}: answer from "
        "what you have or try something else."
    )


def is_warning(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is this middleware's warning."""
    content = message.get("content")
    return isinstance(content, str) and content.startswith(WARNING_PREFIX)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
