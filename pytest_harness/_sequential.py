"""Sequential sampling: a sampled test stops as soon as its samples decide it (an SPRT)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypeAlias

Decision: TypeAlias = Literal["pass", "fail"]
DEFAULT_MARGIN = 0.05
METHOD = "SPRT"  # as the reports name it
_FAR = 10_000  # more samples than this "would likely decide it" is no useful estimate


@dataclass(frozen=True, slots=True, kw_only=True)
class Sprt:
    """Wald's SPRT of "pass rate >= ``pass_rate``" with an indifference zone (see the module).

    Attributes:
        pass_rate: the share of samples that must pass (``p``).
        confidence: 1 minus the largest wrong-verdict rate at the zone's edges.
        margin: half the width of the indifference zone (``d``).
    """

    pass_rate: float
    confidence: float
    margin: float = DEFAULT_MARGIN

    @property
    def low(self) -> float:
        """The rate a pass must rule out: ``pass_rate - margin``."""
        return self.pass_rate - self.margin

    @property
    def high(self) -> float:
        """The rate a failure must rule out: ``pass_rate + margin``, at most 1."""
        return min(1.0, self.pass_rate + self.margin)

    @property
    def bound(self) -> float:
        """The log likelihood ratio that decides: ``ln(1 / (1 - confidence))``."""
        return -math.log(1.0 - self.confidence)

    def step(self, passed: bool) -> float:
        """How one sample moves the log likelihood ratio (``-inf``: a failure when every
        sample must pass)."""
        if passed:
            return math.log(self.high / self.low)
        if self.high >= 1.0:
            return -math.inf
        return math.log((1.0 - self.high) / (1.0 - self.low))

    def llr(self, passes: int, failures: int) -> float:
        """The log likelihood ratio of ``high`` against ``low`` after these samples."""
        if failures and self.high >= 1.0:
            return -math.inf
        total = passes * self.step(True)
        return total + failures * self.step(False) if failures else total

    def decide(self, passes: int, failures: int) -> Decision | None:
        """``"pass"``, ``"fail"``, or None while the samples do not decide."""
        llr = self.llr(passes, failures)
        if llr >= self.bound:
            return "pass"
        if llr <= -self.bound:
            return "fail"
        return None

    def more_needed(self, passes: int, failures: int) -> int | None:
        """About how many more samples would decide, were the rate what it has been so far.

        The distance to the nearer threshold in the direction the samples drift, over the
        expected step at the observed rate (a pass and a failure added, half each, so that
        no rate is 0 or 1). None when that is no useful estimate: the observed rate sits in
        the indifference zone, where the drift is about nothing, or the test is decided.
        """
        llr = self.llr(passes, failures)
        if abs(llr) >= self.bound:
            return None
        if self.high >= 1.0:  # no failure yet, or it would be decided: passes only
            return math.ceil((self.bound - llr) / self.step(True))
        rate = (passes + 0.5) / (passes + failures + 1)
        drift = rate * self.step(True) + (1.0 - rate) * self.step(False)
        if drift == 0.0:
            return None
        distance = self.bound - llr if drift > 0 else llr + self.bound
        more = math.ceil(distance / abs(drift))
        return more if more <= _FAR else None


def pass_hat_k(passes: int, ran: int, k: int) -> float | None:
    """pass^k: the chance that k samples, all of them, pass (None when fewer than k ran).

    The unbiased estimate from ``ran`` samples of which ``passes`` passed,
    ``C(passes, k) / C(ran, k)`` (S. Yao et al., "tau-bench", 2024): an agent that passes
    90% of single runs passes all of 8 runs far less often.
    """
    if k < 1 or ran < k:
        return None
    return math.comb(passes, k) / math.comb(ran, k)


def pass_hat_ks(passes: int, ran: int, most: int = 8) -> dict[int, float]:
    """pass^k for k from 1 to ``most`` (or to ``ran``, when fewer ran)."""
    return {k: math.comb(passes, k) / math.comb(ran, k) for k in range(1, min(most, ran) + 1)}
