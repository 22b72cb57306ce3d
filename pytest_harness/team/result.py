"""What a shared-state team's ``invoke`` returns or raises, as plain frozen data.

``TeamResult`` is the seed's ``{output, cycles, terminated_by}``, readable both ways: it is
a read-only ``collections.abc.Mapping`` (``result["output"]``, ``dict(result)``, ``in``,
``.get``, ``.keys()``, the seed's three keys first) and a frozen dataclass (``result.output``,
typed, with a ``repr`` that reads well in a pytest failure). It also carries every member
turn (its orchestrator ``Run`` and its error, if any), the errors on their own, and the
store.

``TeamError`` is a team that could not finish: its ``aggregate`` or ``terminate_when``
raised, or every member failed in one cycle. The store's findings are kept on it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pytest_harness.errors import HarnessError
from pytest_harness.orchestrator.run import Run
from pytest_harness.team.store import Finding, KnowledgeStore

TerminatedBy: TypeAlias = Literal["max_cycles", "terminate_when", "timeout"]
RESULT_KEYS = ("output", "cycles", "terminated_by", "errors", "turns", "store", "team")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberTurn:
    """One member's turn in one cycle (one orchestrator run), and what came of it.

    Attributes:
        member: the member's name.
        cycle: the cycle (1 for the first).
        run: the orchestrator run (its trajectory), or None when the turn never ended as a
            run (cut off by a timeout, or failed before it started).
        error: why the turn failed, naming the team and member; None when it ran to its
            end. A run stopped by a limit (``max_requests``, ``doom_loop``...) counts as
            failed: its findings stay in the store.
        exception: the exception that ended the turn, when one did.
    """

    member: str
    cycle: int
    run: Run | None
    error: str | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the turn ran to its end."""
        return self.error is None

    @property
    def raised(self) -> bool:
        """Whether the turn ended without a run of its own to its end (it raised or timed
        out, rather than stopping on a limit)."""
        return self.error is not None and (self.run is None or self.run.stop_reason == "error")


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class TeamResult(Mapping[str, Any]):
    """What a team's ``invoke`` returns: a frozen dataclass that is also a ``Mapping``.

    Attributes:
        team: the team's name.
        output: what ``aggregate(store)`` returned (default: ``store.read_all()``).
        cycles: how many cycles were completed, every member having taken its turn (the
            team checks ``terminate_when`` and its ``timeout`` only between cycles).
        terminated_by: ``"max_cycles"``, ``"terminate_when"`` or ``"timeout"``.
        turns: every member turn, in the order they ran.
        store: the store the members wrote (``store.read_all()``: the findings).

    As a mapping its keys are ``RESULT_KEYS``: the seed's ``output``, ``cycles`` and
    ``terminated_by`` first, then ``errors``, ``turns``, ``store`` and ``team``, each
    reading the attribute of that name, so ``dict(result)`` is the seed's hash and more.
    Equality stays the dataclass's (a ``TeamResult`` equals a ``TeamResult``, not a dict):
    compare ``dict(result)`` with a dict.
    """

    team: str
    output: Any
    cycles: int
    terminated_by: TerminatedBy
    turns: tuple[MemberTurn, ...] = ()
    store: KnowledgeStore = field(default_factory=KnowledgeStore)

    @property
    def errors(self) -> tuple[MemberTurn, ...]:
        """The turns that failed (``member``, ``cycle``, ``error``), in order."""
        return tuple(turn for turn in self.turns if not turn.ok)

    @property
    def findings(self) -> list[Finding]:
        """The store's findings (a new list)."""
        return self.store.read_all()

    def __getitem__(self, key: str) -> Any:
        if key not in RESULT_KEYS:
            raise KeyError(f"{key!r}: a team result has {', '.join(RESULT_KEYS)}")
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(RESULT_KEYS)

    def __len__(self) -> int:
        return len(RESULT_KEYS)

    def __repr__(self) -> str:
        return (
            f"TeamResult(team={self.team!r}, cycles={self.cycles}, "
            f"terminated_by={self.terminated_by!r}, findings={self.store.size}, "
            f"errors={[turn.error for turn in self.errors]!r}, output={self.output!r:.300})"
        )


class TeamError(HarnessError):
    """A shared-state team could not finish.

    Attributes:
        team: the team's name.
        findings: the store's findings when it stopped.
        turns: the member turns run so far (their errors included).
        cycles: the cycles that ran to their end.
    """

    def __init__(
        self,
        message: str,
        *,
        team: str,
        findings: list[Finding],
        turns: tuple[MemberTurn, ...],
        cycles: int,
    ) -> None:
        super().__init__(message)
        self.team = team
        self.findings = findings
        self.turns = turns
        self.cycles = cycles
