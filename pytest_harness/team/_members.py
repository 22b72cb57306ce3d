"""What a shared-state team declared (members, coordination, limits) and its checks."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_harness._agent import Agent
from pytest_harness.errors import ConfigError
from pytest_harness.orchestrator import MAX_REQUESTS_PER_TURN, Tool, tool

STORE_TOOLS = ("read_store", "write_finding")  # the tools every member is given


@dataclass(frozen=True, slots=True)
class Member:
    """One member of a team.

    Attributes:
        agent: an ``Agent`` subclass (or instance): its model, instructions, temperature
            and params drive the member's turns; its ``tools``, when it declares any, are
            offered beside the store's two.
        instruction: what this member alone is told, after the team's coordination text.
        name: the member's name on its findings and errors (default: the agent's name).
        timeout: seconds one turn of this member may take (default: the team's
            ``member_timeout``).
    """

    agent: type[Agent] | Agent
    instruction: str | None = None
    name: str = ""
    timeout: float | None = None

    @property
    def label(self) -> str:
        """The name findings and errors carry."""
        if self.name:
            return self.name
        agent = self.agent
        return agent.__name__ if isinstance(agent, type) else agent.name

    def tools(self) -> tuple[Tool, ...]:
        """The tools the agent declares (a ``tools`` attribute), as ``Tool`` values."""
        return tuple(
            t if isinstance(t, Tool) else tool(t) for t in getattr(self.agent, "tools", ()) or ()
        )


def member(
    agent: type[Agent] | Agent,
    instruction: str | None = None,
    *,
    name: str | None = None,
    timeout: float | None = None,
) -> Member:
    """A team member: ``member(Skeptic, instruction="Look for angry customers.")``.

    Args:
        agent: an ``Agent`` subclass or instance.
        instruction: what this member alone is told, after the team's coordination text.
        name: its name on findings and errors (needed when one agent sits twice).
        timeout: seconds one of its turns may take (default: the team's ``member_timeout``).

    Raises:
        ConfigError: a value of the wrong kind.
    """
    seat = Member(agent, instruction, name or "", timeout)
    _check_member(seat, "member()")
    return seat


def researchers(*agents: type[Agent] | Agent | Sequence[type[Agent] | Agent]) -> list[Member]:
    """Members without instructions: ``members = researchers(Literature, Industry)``.

    An older spelling, kept; lists are flattened.
    """
    flat: list[Any] = []
    for agent in agents:
        flat.extend(agent if isinstance(agent, (list, tuple)) else [agent])
    return [member(agent) for agent in flat]


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamConfig:
    """A team's settings as checked; ``SharedState`` says what each means.

    Attributes:
        team: The team's name.
        members: The seats, in turn order.
        coordination: The team's protocol text (None: the built-in guide).
        max_cycles: Cycles at most (None: no limit).
        timeout: Wall seconds for the whole ``invoke`` (None: no limit).
        member_requests: Model requests per member turn, at most.
        member_tool_rounds: Batches of tool calls per member turn (None: no limit).
        member_timeout: Seconds one member turn may take (None: no limit).
        unique_findings: Whether a repeated finding is refused.
    """

    team: str
    members: tuple[Member, ...]
    coordination: str | None
    max_cycles: int | None
    timeout: float | None
    member_requests: int
    member_tool_rounds: int | None
    member_timeout: float | None
    unique_findings: bool

    @classmethod
    def read(cls, owner: Any, team: str) -> TeamConfig:
        """The settings of ``owner`` (a team class or instance), checked.

        Raises:
            ConfigError: a setting is wrong; the message names ``team`` and the fix.
        """
        get = functools.partial(getattr, owner)  # the instance's value, else the class's
        config = cls(
            team=team,
            members=normalise_members(get("members"), team),
            coordination=_coordination(get("coordination"), team),
            max_cycles=_count(get("max_cycles"), f"{team}.max_cycles", low=1),
            timeout=_seconds(get("timeout"), f"{team}.timeout"),
            member_requests=_requests(get("member_requests"), team),
            member_tool_rounds=_count(
                get("member_tool_rounds"), f"{team}.member_tool_rounds", low=0
            ),
            member_timeout=_seconds(get("member_timeout"), f"{team}.member_timeout"),
            unique_findings=_unique_findings(get("unique_findings"), team),
        )
        for hook in ("terminate_when", "aggregate"):
            if not callable(get(hook)):
                raise ConfigError(f"{team}.{hook} must be a method (taking the store)")
        return config

    def runnable(self) -> TeamConfig:
        """These settings, when a team can run on them.

        Raises:
            ConfigError (a ``ValueError``): no members, or neither ``max_cycles`` nor
                ``timeout`` (the team would never stop).
        """
        if self.max_cycles is None and self.timeout is None:
            raise ConfigError(
                f"{self.team}: set max_cycles or timeout (or both) before invoking it; "
                "without either the team would never stop"
            )
        if not self.members:
            raise ConfigError(f"{self.team} has no members: set members = [AgentClass, ...]")
        return self


def normalise_members(value: Any, team: str) -> tuple[Member, ...]:
    """``members`` as a tuple of ``Member``; ``ConfigError`` for anything else."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ConfigError(
            f"{team}.members must be a list of Agent classes or member(...) values, got {value!r}"
        )
    seats = [spec if isinstance(spec, Member) else Member(spec) for spec in value]
    seen: set[str] = set()
    for seat in seats:
        _check_member(seat, f"{team}.members")
        if seat.label in seen:
            raise ConfigError(
                f"{team}.members has two members called {seat.label!r}: give one of them "
                f"another name, member({seat.label}, name=...)"
            )
        seen.add(seat.label)
    return tuple(seats)


def _check_member(seat: Member, where: str) -> None:
    agent = seat.agent
    if not (isinstance(agent, Agent) or (isinstance(agent, type) and issubclass(agent, Agent))):
        raise ConfigError(
            f"{where}: a member is an Agent subclass (or instance), got {agent!r} "
            f"(type={type(agent).__name__}); declare it as `class Name(Agent): ...`"
        )
    if seat.instruction is not None and not isinstance(seat.instruction, str):
        raise ConfigError(f"{where}: {seat.label}'s instruction must be text or None")
    if not isinstance(seat.name, str):
        raise ConfigError(f"{where}: a member's name must be text, got {seat.name!r}")
    _seconds(seat.timeout, f"{where}: {seat.label}'s timeout")
    try:
        names = [t.name for t in seat.tools()]
    except TypeError as error:
        raise ConfigError(f"{where}: {seat.label}'s tools: {error}") from None
    taken = sorted(set(names) & set(STORE_TOOLS))
    if taken:
        raise ConfigError(
            f"{where}: {seat.label} declares a tool named {taken[0]!r}, which the team gives "
            "every member: rename the agent's tool"
        )


def _coordination(value: Any, team: str) -> str | None:
    if value is None or (isinstance(value, str) and value.strip()):
        return value
    raise ConfigError(
        f"{team}.coordination must be non-blank text, or None for the built-in guide; got {value!r}"
    )


def _count(value: Any, what: str, *, low: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{what} expects None or a whole number >= {low}, got {value!r}")
    return value


def _requests(value: Any, team: str) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_REQUESTS_PER_TURN
    ):
        raise ConfigError(
            f"{team}.member_requests expects a whole number from 1 to {MAX_REQUESTS_PER_TURN} "
            f"(model requests per member turn), got {value!r}"
        )
    return value


def _unique_findings(value: Any, team: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(
        f"{team}.unique_findings expects True (refuse a finding already in the store) or "
        f"False (append it, the default), got {value!r} ({type(value).__name__})"
    )


def _seconds(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{what} expects None or a number of seconds > 0, got {value!r}")
    return float(value)
