"""Simulated users: a persona agent plays the user against the application for several turns."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pytest_harness import _aio
from pytest_harness._agent import Agent
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import ConfigError, SimulationError

Ending: TypeAlias = Literal["max_turns", "goal_reached", "abandoned"]
Conversation: TypeAlias = list[dict[str, str]]
App: TypeAlias = Callable[[Conversation], "str | Awaitable[str]"]

PERSONA_OUTPUT = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "status": {"type": "string", "enum": ["continue", "goal_reached", "abandoned"]},
        "reason": {"type": "string"},
    },
    "required": ["message", "status"],
}

PERSONA_INSTRUCTIONS = (
    "You play a user talking to an application, to test it. Stay in character.\n"
    "Persona: {persona}\nYour goal: {goal}\n"
    "Reply in JSON: `message` is your next message to the application, written as this "
    "user would write it; `status` is `continue`, or `goal_reached` when the application "
    "has done what you wanted, or `abandoned` when you give up; `reason` says why."
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a simulated conversation.

    Attributes:
        role: ``"user"`` (the persona) or ``"assistant"`` (the application).
        content: The message's text.
    """

    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """A simulated conversation and why it ended.

    Attributes:
        persona: who the simulated user was.
        goal: what it wanted.
        turns: the messages, alternating user and assistant, the user first.
        stopped_by: ``max_turns``, ``goal_reached`` or ``abandoned``.
        reason: the persona's reason when it stopped the conversation ("" otherwise).
    """

    persona: str
    goal: str
    turns: tuple[Turn, ...]
    stopped_by: Ending
    reason: str = ""

    @property
    def messages(self) -> Conversation:
        """The conversation in OpenAI's chat form, as the application saw it."""
        return [{"role": turn.role, "content": turn.content} for turn in self.turns]

    @property
    def replies(self) -> list[str]:
        """The application's replies, in order (to judge turn by turn)."""
        return [turn.content for turn in self.turns if turn.role == "assistant"]

    @property
    def text(self) -> str:
        """The conversation as plain text (to judge as a whole)."""
        names = {"user": "User", "assistant": "Application"}
        return "\n".join(f"{names[turn.role]}: {turn.content}" for turn in self.turns)


def simulate(app: App, *, persona: str, goal: str, **options: Any) -> Transcript:
    """Play ``persona`` against ``app`` until its goal is reached, it gives up, or
    ``max_turns`` user turns were sent (sync facade of ``asimulate``)."""
    return _aio.run_sync(asimulate(app, persona=persona, goal=goal, **options))


async def asimulate(
    app: App,
    *,
    persona: str,
    goal: str,
    model: str | None = None,
    max_turns: int = 5,
    opening: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> Transcript:
    """Async ``simulate``.

    Args:
        app: takes the conversation so far, returns the application's reply text.
        persona: who the user is ("an impatient customer whose parcel is late").
        goal: what the user wants ("a delivery date").
        model: the persona's model (``--harness-model`` replaces it).
        max_turns: user turns at most.
        opening: the first user message as given, instead of one the persona writes.
        params: further litellm arguments of the persona's calls (``max_tokens``...).

    Raises:
        SimulationError: the application raised (its ``transcript`` keeps the turns).
    """
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise ConfigError(
            f"simulate(max_turns=...) expects a whole number >= 1, got {max_turns!r}."
        )
    user = _persona(persona, goal, model, params)
    turns: list[Turn] = []
    for number in range(1, max_turns + 1):
        if number == 1 and opening is not None:
            message, status, reason = opening, "continue", ""
        else:
            message, status, reason = await _next_message(user, turns)
        if status != "continue":
            return _ended(persona, goal, turns, status, reason)  # type: ignore[arg-type]
        turns.append(Turn("user", message))
        turns.append(Turn("assistant", await _answer(app, turns, persona, goal)))
    return _ended(persona, goal, turns, "max_turns", "")


def _persona(persona: str, goal: str, model: str | None, params: Any) -> Agent:
    return Agent(
        model=model,
        instructions=PERSONA_INSTRUCTIONS.format(persona=persona, goal=goal),
        output=PERSONA_OUTPUT,
        params=params,
        name="SimulatedUser",
    )


async def _next_message(user: Agent, turns: Sequence[Turn]) -> tuple[str, str, str]:
    """The persona's next message, status and reason, from the conversation so far."""
    if turns:
        said = "\n".join(
            f"{'You' if t.role == 'user' else 'Application'}: {t.content}" for t in turns
        )
        user.input = f"The conversation so far:\n{said}\n\nWrite your next message."
    else:
        user.input = "Write your first message to the application."
    reply = (await user.acall()).processed
    return str(reply["message"]), str(reply["status"]), str(reply.get("reason") or "")


async def _answer(app: App, turns: Sequence[Turn], persona: str, goal: str) -> str:
    conversation = [{"role": t.role, "content": t.content} for t in turns]
    try:
        reply = app(conversation)
        if inspect.isawaitable(reply):
            reply = await reply
    except Exception as error:
        transcript = Transcript(
            persona=persona, goal=goal, turns=tuple(turns), stopped_by="max_turns"
        )
        raise SimulationError(
            f"the application raised on user turn {len(conversation) // 2 + 1}: "
            f"{type(error).__name__}: {error}",
            transcript=transcript,
        ) from error
    return str(reply)


def _ended(
    persona: str, goal: str, turns: Sequence[Turn], stopped_by: Ending, reason: str
) -> Transcript:
    transcript = Transcript(
        persona=persona, goal=goal, turns=tuple(turns), stopped_by=stopped_by, reason=reason
    )
    scope.emit("transcript", transcript)
    return transcript
