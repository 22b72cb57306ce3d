"""The Verdict value, and how a panel reaches it.

``decide`` turns a panel's results into its ``Verdict``: one ``Vote`` per judge, the rule's
decision (or the tribunal's ``process`` function's), totals and agreement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from pytest_harness._aio import maybe_await
from pytest_harness.agent import totals
from pytest_harness.errors import ConfigError, describe
from pytest_harness.tribunal.agreement import percent_agreement
from pytest_harness.tribunal.strategies import Strategy, unanimous

VOTE_KEYS = ("verdict", "pass", "passed", "result", "score")
REASON_KEYS = ("reason", "reasoning", "explanation", "rationale", "why")

Evaluator: TypeAlias = Callable[[Any], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Vote:
    """One judge's vote in a verdict."""

    agent: str
    model: str | None
    vote: Any
    passed: bool | None
    reason: str | None
    time: float | None
    tokens: int
    cost: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeFailure:
    """A judge that produced no vote, and why."""

    agent: str
    error: BaseException

    def describe(self) -> str:
        return describe(self.error)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """A panel's decision with everything behind it. Truthy when it passes.

    Attributes:
        tribunal: the tribunal's name.
        value: what the strategy or ``process`` function returned.
        passed: ``bool(value)``.
        rule: the rule in words (strategy, ``process`` function, ``may_fail``).
        votes: one per successful judge, in panel order.
        errors: the judges that failed.
        agreement: share of judge pairs that voted alike (None with fewer than two votes).
        tokens: total tokens of every judge that answered.
        cost: total USD cost (None when no judge's model has a known price).
        execution_time: wall seconds of the whole panel.
    """

    tribunal: str
    value: Any
    passed: bool
    rule: str
    votes: tuple[Vote, ...] = ()
    errors: tuple[JudgeFailure, ...] = ()
    agreement: float | None = None
    tokens: int = 0
    cost: float | None = None
    execution_time: float | None = None

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        state = "passed" if self.passed else "failed"
        errors = f", {len(self.errors)} judge error(s)" if self.errors else ""
        return f"<Verdict {self.tribunal} {state}: {self.tally} votes{errors}; {self.rule}>"

    @property
    def tally(self) -> str:
        """Passing votes over votes cast, for example ``"2/3"``."""
        return f"{sum(1 for v in self.votes if v.passed)}/{len(self.votes)}"

    @property
    def reasons(self) -> dict[str, str | None]:
        return {vote.agent: vote.reason for vote in self.votes}


async def decide(
    tribunal: str,
    results: list[Any],
    *,
    judged: Sequence[Any],
    errors: Sequence[Mapping[str, Any]],
    strategy: Strategy | None,
    evaluate: Evaluator | None,
    process: Callable[[list[Any]], Any] | None,
    may_fail: int | None,
    execution_time: float | None,
) -> Verdict:
    """The verdict over ``results`` (after ``before_verdict``) of a panel's judges.

    Args:
        tribunal: the tribunal's name.
        results: what the verdict is computed from.
        judged: every successful judge's result (for tokens and cost).
        errors: ``{"agent": name, "error": exception}`` per failed judge.
        strategy / evaluate: the rule and the per-judge evaluator (default: unanimous over
            ``default_vote``).
        process: a function of all results that decides instead of the strategy.
        may_fail: the judge errors tolerated, shown in the rule.
        execution_time: the panel's wall seconds.
    """
    strategy = strategy or unanimous()
    evaluate = evaluate or default_vote
    shown_only = process is not None
    votes = [_vote(result, strategy, evaluate, shown_only=shown_only) for result in results]
    if process is not None:
        value = await maybe_await(process(results))
        rule = f"process: {getattr(process, '__name__', 'function')}"
    else:
        value = strategy.decide([vote.vote for vote in votes])
        rule = strategy.describe()
    if may_fail is not None:
        rule += f"; may_fail={may_fail}"
    usage, cost = totals(judged)
    return Verdict(
        tribunal=tribunal,
        value=value,
        passed=bool(value),
        rule=rule,
        votes=tuple(votes),
        errors=tuple(JudgeFailure(agent=e["agent"], error=e["error"]) for e in errors),
        agreement=percent_agreement([v.passed for v in votes if v.passed is not None]),
        tokens=usage.total_tokens if usage is not None else 0,
        cost=cost,
        execution_time=execution_time,
    )


def _vote(result: Any, strategy: Strategy, evaluate: Evaluator, *, shown_only: bool) -> Vote:
    if not shown_only:
        vote: Any = evaluate(result)
        passed: bool | None = strategy.vote_passes(vote)
    else:
        try:  # with a process function, votes are only shown, so a missing one is fine
            vote = evaluate(result)
            passed = strategy.vote_passes(vote)
        except Exception:
            vote, passed = None, None
    return Vote(
        agent=getattr(result, "agent", "") or type(result).__name__,
        model=getattr(result, "model", None),
        vote=vote,
        passed=passed,
        reason=reason_of(result),
        time=getattr(result, "execution_time", None),
        tokens=getattr(result, "tokens", 0) or 0,
        cost=getattr(result, "cost", None),
    )


def judge_labels(names: Iterable[str]) -> list[str]:
    """Judges named by panel position: a name that repeats gets ``#2``, ``#3``."""
    seen: Counter[str] = Counter()
    labels = []
    for name in names:
        seen[name] += 1
        labels.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return labels


def default_vote(result: Any) -> Any:
    """A judge's vote when the tribunal declares no evaluator: the first vote-like field."""
    processed = getattr(result, "processed", None)
    if isinstance(processed, Mapping):
        for key in VOTE_KEYS:
            if key in processed:
                return processed[key]
    raise ConfigError(
        f"cannot tell the vote of judge {getattr(result, 'agent', '?')}: its output "
        f"{processed!r:.120} has none of the fields {', '.join(VOTE_KEYS)}. Declare an "
        "evaluator: @Tribunal.verdict('majority') def passed(result): return ..."
    )


def reason_of(result: Any) -> str | None:
    processed = getattr(result, "processed", None)
    if isinstance(processed, Mapping):
        for key in REASON_KEYS:
            if isinstance(processed.get(key), str):
                return str(processed[key])
    return None
