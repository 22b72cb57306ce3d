"""What a shared-state team produces: its ``KnowledgeStore`` of ``Finding`` values, its result."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from time import time as now
from typing import Any, Literal, TypeAlias

from pytest_harness.orchestrator import Run


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One finding in a team's store.

    Attributes:
        author: the name of the member who wrote it.
        cycle: the cycle it was written in (1 for the first).
        content: the finding itself (stripped of surrounding blanks).
        kind: a short label the author gave it ("" when none).
        time: ``time.time()`` when it was written.
    """

    author: str
    cycle: int
    content: str
    kind: str = ""
    time: float

    def as_dict(self, *, times: bool = True) -> dict[str, Any]:
        """The finding as plain JSON-ready data (``kind`` only when given)."""
        data: dict[str, Any] = {"author": self.author, "cycle": self.cycle}
        if self.kind:
            data["kind"] = self.kind
        data["content"] = self.content
        if times:
            data["time"] = self.time
        return data


class KnowledgeStore:
    """The append-only, thread-safe store a team's members share.

    Example:

        store = KnowledgeStore()
        store.write(author="Skeptic", cycle=1, content="A parcel marked delivered but missing")
        store.size                     # 1
        store.read_all()[0].author     # "Skeptic"
        store.to_json()                # '[{"author": "Skeptic", "cycle": 1, "content": ...}]'
    """

    def __init__(self) -> None:
        self._findings: list[Finding] = []
        self._lock = threading.Lock()

    def write(
        self, *, author: str, cycle: int, content: str, kind: str = "", unique: bool = False
    ) -> Finding:
        """Append one finding and return it.

        Args:
            author: who wrote it (a member's name).
            cycle: the cycle it belongs to (a whole number >= 0).
            content: the finding; surrounding blanks are stripped, and nothing must remain
                blank.
            kind: an optional short label.
            unique: refuse a finding whose content is already in the store (compared
                ignoring case and runs of blanks).

        Raises:
            TypeError: a value of the wrong type.
            ValueError: blank content or author, a negative cycle, or (``unique``) a
                finding already in the store; nothing is written.
        """
        finding = _checked(author, cycle, content, kind)
        with self._lock:
            if unique:
                _refuse_duplicate(self._findings, finding.content)
            self._findings.append(finding)
        return finding

    def read_all(self) -> list[Finding]:
        """Every finding in the order written, as a new list (the store itself never changes
        what it handed out)."""
        with self._lock:
            return list(self._findings)

    @property
    def size(self) -> int:
        """How many findings the store holds."""
        with self._lock:
            return len(self._findings)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Finding]:
        """The findings as they stand now (later writes are not seen by this iteration)."""
        return iter(self.read_all())

    def to_json(self, *, times: bool = False) -> str:
        """The findings as a JSON array, as the ``read_store`` tool sends them.

        Args:
            times: include when each finding was written (``time``, seconds since the
                epoch). Off by default: the model's view must not change between runs.
        """
        data = [finding.as_dict(times=times) for finding in self.read_all()]
        return json.dumps(data, ensure_ascii=False)

    def __repr__(self) -> str:
        return f"<KnowledgeStore {self.size} findings>"


def _checked(author: Any, cycle: Any, content: Any, kind: Any) -> Finding:
    """The finding these values make, or ``TypeError`` / ``ValueError`` saying what is wrong."""
    for name, value in (("author", author), ("content", content), ("kind", kind)):
        if not isinstance(value, str):
            raise TypeError(f"a finding's {name} is text, got {value!r} ({type(value).__name__})")
    if isinstance(cycle, bool) or not isinstance(cycle, int):
        raise TypeError(f"a finding's cycle is a whole number, got {cycle!r}")
    if cycle < 0:
        raise ValueError(f"a finding's cycle is 0 or more, got {cycle}")
    if not author.strip():
        raise ValueError("a finding needs an author: give the name of who wrote it")
    if not content.strip():
        raise ValueError("the finding is empty: write the insight itself in `content`")
    return Finding(
        author=author, cycle=cycle, content=content.strip(), kind=kind.strip(), time=now()
    )


def _refuse_duplicate(findings: list[Finding], content: str) -> None:
    key = _normal(content)
    for earlier in findings:
        if _normal(earlier.content) == key:
            raise ValueError(
                f"this finding is already in the store (written by {earlier.author} in cycle "
                f"{earlier.cycle}): write a new insight, or stop if you have none"
            )


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


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

    As a mapping its keys are ``RESULT_KEYS``: ``output``, ``cycles`` and
    ``terminated_by`` first, then ``errors``, ``turns``, ``store`` and ``team``, each
    reading the attribute of that name, so ``dict(result)`` is the classic result mapping and more.
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
