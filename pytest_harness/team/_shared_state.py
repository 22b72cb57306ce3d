"""SharedState: peer agents that take turns reading and writing one findings store."""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_harness import _aio
from pytest_harness.errors import TeamError, describe
from pytest_harness.team._findings import KnowledgeStore, MemberTurn, TeamResult, TerminatedBy
from pytest_harness.team._members import TeamConfig, member, researchers
from pytest_harness.team._turns import Seat, seat, take_turn, task_message

_UNSET: Any = object()  # "not given": None is a meaningful timeout


class SharedState:
    """A team of peer agents taking turns reading and writing one ``KnowledgeStore``.

    Declare a team as a class; an instance may override each attribute by the keyword of
    the same name. ``invoke(input)`` runs it and returns a ``TeamResult``.

    Attributes:
        members: the members, in turn order: ``Agent`` subclasses (or instances) or
            ``SharedState.member(Agent, instruction=..., name=..., timeout=...)`` values
            (``SharedState.researchers(A, B)`` makes several without instructions).
        coordination: the team's protocol, given to every member instead of the built-in
            guide (None: the guide, which explains the two tools and the read-then-write
            workflow).
        max_cycles: cycles at most (None: no limit but ``timeout``).
        timeout: wall seconds for the whole ``invoke`` (None: no limit but ``max_cycles``).
            Checked after each full cycle (after ``terminate_when``): a
            cycle that started runs to its end, every member taking its turn, and the team
            stops with ``terminated_by="timeout"`` when the deadline passed by then. It
            never cuts a turn off: bound one member's turn with ``member_timeout``.
        member_requests: model requests per member turn, at most.
        member_tool_rounds: batches of tool calls per member turn; the request after the
            last is sent with ``tool_choice="none"`` (None: no limit but the requests).
        member_timeout: seconds one member turn may take (None: no limit). A turn past it
            is cut off and recorded as an error; the team goes on.
        unique_findings: ``write_finding`` refuses a finding whose text is already in the
            store (ignoring case and runs of blanks) and tells the model so. False (the
            default): every finding is appended, repeats included, and
            ``terminate_when`` counts them.

    Methods to override:
        terminate_when(store): True to stop after the current full cycle (may be async).
        aggregate(store): the result's ``output`` (may be async); default
            ``store.read_all()``.
    """

    members: Sequence[Any] = ()
    coordination: str | None = None
    max_cycles: int | None = None
    timeout: float | None = None
    member_requests: int = 6
    member_tool_rounds: int | None = 3
    member_timeout: float | None = None
    unique_findings: bool = False

    member = staticmethod(member)
    researchers = staticmethod(researchers)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # ``@pytest.mark.scenarios(Team)``: pytest marks the team and calls it with the test.
        if len(args) == 1 and not kwargs:
            test = _marked_alone(cls, args[0])
            if test is not None:
                return test
        return super().__new__(cls)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.members = TeamConfig.read(cls, cls.__name__).members

    def __init__(
        self,
        *,
        members: Sequence[Any] | None = None,
        coordination: str | None = _UNSET,
        max_cycles: int | None = _UNSET,
        timeout: float | None = _UNSET,
        member_requests: int | None = None,
        member_tool_rounds: int | None = _UNSET,
        member_timeout: float | None = _UNSET,
        unique_findings: bool | None = None,
    ) -> None:
        given = {
            "members": members if members is not None else _UNSET,
            "coordination": coordination,
            "max_cycles": max_cycles,
            "timeout": timeout,
            "member_requests": member_requests if member_requests is not None else _UNSET,
            "member_tool_rounds": member_tool_rounds,
            "member_timeout": member_timeout,
            "unique_findings": unique_findings if unique_findings is not None else _UNSET,
        }
        for name, value in given.items():
            if value is not _UNSET:
                setattr(self, name, value)
        self.members = TeamConfig.read(self, self.name).members

    @property
    def name(self) -> str:
        return type(self).__name__

    def terminate_when(self, store: KnowledgeStore) -> Any:
        """Whether to stop after the cycle just completed (default: never)."""
        return False

    def aggregate(self, store: KnowledgeStore) -> Any:
        """The result's ``output`` made from the final store (default: its findings)."""
        return store.read_all()

    def invoke(self, input: Any) -> TeamResult:
        """Run the team on ``input`` (sync facade of ``ainvoke``)."""
        return _aio.run_sync(self.ainvoke(input))

    async def ainvoke(self, input: Any) -> TeamResult:
        """Run the team's cycles on ``input`` and return what it found.

        Args:
            input: the task (text; anything else is sent as JSON).

        Raises:
            ConfigError (a ``ValueError``): neither ``max_cycles`` nor ``timeout`` is set,
                there are no members, or a member has no model.
            TeamError: ``terminate_when`` or ``aggregate`` raised, or every member failed
                in one cycle.
        """
        config = TeamConfig.read(self, self.name).runnable()
        state = _State(config=config, seats=tuple(seat(m, config) for m in config.members))
        terminated_by = await self._cycles(state, input)
        output = await self._hook("aggregate", state)
        return TeamResult(
            team=self.name,
            output=output,
            cycles=state.cycles,
            terminated_by=terminated_by,
            turns=tuple(state.turns),
            store=state.store,
        )

    async def _cycles(self, state: _State, input: Any) -> TerminatedBy:
        """Run cycles until a limit or ``terminate_when``; which one ended them.

        After each full cycle ``terminate_when`` first, then the deadline.
        """
        limit = state.config.max_cycles
        cycle = 0
        while limit is None or cycle < limit:
            cycle += 1
            await self._cycle(state, input, cycle)
            state.cycles = cycle
            self._check_someone_ran(state, cycle)
            if await self._hook("terminate_when", state):
                return "terminate_when"
            if state.deadline is not None and time.monotonic() >= state.deadline:
                return "timeout"
        return "max_cycles"

    async def _cycle(self, state: _State, input: Any, cycle: int) -> None:
        """Each member's turn, in declaration order (the team's timeout does not cut it)."""
        for member_seat in state.seats:
            message = task_message(input, cycle, state.config.max_cycles, member_seat.name)
            turn = await take_turn(member_seat, state.store, cycle, message, team=self.name)
            state.turns.append(turn)

    def _check_someone_ran(self, state: _State, cycle: int) -> None:
        """``TeamError`` when every member's turn of ``cycle`` raised or timed out."""
        turns = state.turns[-len(state.seats) :]
        if all(turn.raised for turn in turns):
            lines = "\n".join(f"  {turn.error}" for turn in turns)
            raise self._error(
                f"{self.name}: every member failed in cycle {cycle}, so the team stopped "
                f"(check the model and its server):\n{lines}",
                state,
            )

    async def _hook(self, name: str, state: _State) -> Any:
        """Call ``terminate_when`` or ``aggregate`` with the store; ``TeamError`` if it raises."""
        try:
            return await _aio.maybe_await(getattr(self, name)(state.store))
        except Exception as error:  # HarnessStop is a BaseException: it is not caught here
            raise self._error(
                f"{self.name}: {name}(store) raised {describe(error)}. The store's "
                f"{state.store.size} findings are kept on this error (error.findings).",
                state,
            ) from error

    def _error(self, message: str, state: _State) -> TeamError:
        return TeamError(
            message,
            team=self.name,
            findings=state.store.read_all(),
            turns=tuple(state.turns),
            cycles=state.cycles,
        )

    def __repr__(self) -> str:
        names = ", ".join(m.label for m in self.members)
        return (
            f"<{self.name} members=[{names}] max_cycles={self.max_cycles} timeout={self.timeout}>"
        )


@dataclass
class _State:
    """One ``invoke`` as it goes: the store, the turns so far, the deadline."""

    config: TeamConfig
    seats: tuple[Seat, ...]
    store: KnowledgeStore = field(default_factory=KnowledgeStore)
    turns: list[MemberTurn] = field(default_factory=list)
    cycles: int = 0
    deadline: float | None = None

    def __post_init__(self) -> None:
        if self.config.timeout is not None:
            self.deadline = time.monotonic() + self.config.timeout


def _marked_alone(team: type[SharedState], target: Any) -> Any | None:
    """``target`` marked to error alone, when ``@pytest.mark.scenarios(team)`` named the team
    alone and pytest, taking the team for the thing to mark, now calls it with the test.

    The bare mark pytest put on the team is taken off again; the test's own marker says
    ``alone`` and the scenarios plugin makes that the test's set-up error, showing the
    marker's forms. None when that is not what happened (the team is not so marked, or
    ``target`` is not a test function or class).
    """
    marks = team.__dict__.get("pytestmark", [])
    kept = [mark for mark in marks if not _bare_scenarios(mark)]
    if len(kept) == len(marks) or not (inspect.isfunction(target) or inspect.isclass(target)):
        return None
    import pytest

    team.pytestmark = kept  # type: ignore[attr-defined]
    return pytest.mark.scenarios(team=team, alone=True)(target)


def _bare_scenarios(mark: Any) -> bool:
    return getattr(mark, "name", None) == "scenarios" and not (mark.args or mark.kwargs)
