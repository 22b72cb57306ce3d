"""Verdict strategies: the rule that turns a panel's votes into pass or fail.

One vote per successful judge (the evaluator turns a judge's Result into its vote):

- ``unanimous``: every vote passes (and there is at least one vote);
- ``majority``: more than half of the votes pass;
- ``at_least(k)``: at least ``k`` votes pass;
- ``fraction(min)``: the share of passing votes is at least ``min``;
- ``mean(min)``: the mean of numeric votes (scores; True counts 1) is at least ``min``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_harness.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Strategy:
    """A rule turning votes into a pass/fail verdict. Build one with the functions below."""

    name: str
    threshold: float | None = None

    def vote_passes(self, vote: Any) -> bool:
        """Whether one vote counts as passing (for ``mean``: its score reaches the minimum)."""
        if self.name == "mean":
            return _score(vote) >= (self.threshold or 0)
        return passes(vote)

    def decide(self, votes: Sequence[Any]) -> bool:
        passing = sum(1 for vote in votes if self.vote_passes(vote))
        count = len(votes)
        if self.name == "unanimous":
            return count > 0 and passing == count
        if self.name == "majority":
            return passing > count / 2
        if self.name == "at_least":
            return passing >= (self.threshold or 0)
        if self.name == "fraction":
            return count > 0 and passing / count >= (self.threshold or 0)
        scores = [_score(vote) for vote in votes]
        return bool(scores) and sum(scores) / len(scores) >= (self.threshold or 0)

    def describe(self) -> str:
        """The rule in words, for failure messages and reports."""
        return {
            "unanimous": "unanimous: every vote must pass",
            "majority": "majority: more than half of the votes must pass",
            "at_least": f"at_least({_num(self.threshold)}): at least {_num(self.threshold)} "
            "votes must pass",
            "fraction": f"fraction({_num(self.threshold)}): at least {_num(self.threshold)} of "
            "the votes must pass",
            "mean": f"mean({_num(self.threshold)}): the mean score must be at least "
            f"{_num(self.threshold)}",
        }[self.name]


def unanimous() -> Strategy:
    return Strategy("unanimous")


def majority() -> Strategy:
    return Strategy("majority")


def at_least(k: int) -> Strategy:
    """At least ``k`` passing votes."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"at_least(k) expects a whole number k >= 1, got k={k!r}")
    return Strategy("at_least", k)


def fraction(minimum: float) -> Strategy:
    """A share of at least ``minimum`` (0 < minimum <= 1) of passing votes."""
    if isinstance(minimum, bool) or not isinstance(minimum, (int, float)):
        raise ConfigError(f"fraction(min) expects a number, got min={minimum!r}")
    if not 0 < minimum <= 1:
        raise ConfigError(f"fraction(min) expects 0 < min <= 1, got min={minimum!r}")
    return Strategy("fraction", float(minimum))


def mean(minimum: float) -> Strategy:
    """A mean numeric vote (a score) of at least ``minimum``."""
    if isinstance(minimum, bool) or not isinstance(minimum, (int, float)):
        raise ConfigError(f"mean(min) expects a number, got min={minimum!r}")
    return Strategy("mean", float(minimum))


_BUILDERS: dict[str, Callable[..., Strategy]] = {
    "unanimous": unanimous,
    "majority": majority,
    "at_least": at_least,
    "fraction": fraction,
    "mean": mean,
}
VALID_STRATEGIES = tuple(_BUILDERS)


def strategy(spec: str | Strategy, *args: Any) -> Strategy:
    """Resolve a strategy given by name (with its argument) or as a ``Strategy``.

    Raises:
        ValueError (ConfigError): unknown name, or wrong arguments.
    """
    if isinstance(spec, Strategy):
        if args:
            raise ConfigError(f"strategy {spec.name} is already built; drop the extra {args!r}")
        return spec
    builder = _BUILDERS.get(spec) if isinstance(spec, str) else None
    if builder is None:
        valid = ", ".join(VALID_STRATEGIES)
        raise ConfigError(f"unknown verdict strategy {spec!r}. Valid strategies: {valid}")
    try:
        return builder(*args)
    except TypeError:
        wanted = {"at_least": "(k)", "fraction": "(min)", "mean": "(min)"}.get(spec, "()")
        raise ConfigError(
            f"verdict strategy {spec!r} takes {wanted}, got arguments {args!r}"
        ) from None


def passes(vote: Any) -> bool:
    """A vote's truth: its truthiness, or for text a yes-like word (\"true\", \"pass\")."""
    return bool(vote) if not isinstance(vote, str) else vote.strip().lower() in _YES


_YES = frozenset({"true", "yes", "pass", "passed", "ok", "1"})


def _score(vote: Any) -> float:
    if isinstance(vote, (int, float)):
        return float(vote)
    raise ConfigError(
        f"the mean(min) strategy needs numeric votes (scores), got {vote!r}: make the "
        "evaluator return a number"
    )


def _num(value: float | None) -> str:
    return f"{value:g}" if value is not None else "?"
