"""Statistics: a pass rate's interval, the sequential test that stops sampling early, and
how judges agree with labels and with each other (Cohen's kappa, Krippendorff's alpha)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, TypeAlias


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of labels against predictions ("pass" is positive).

    Attributes:
        tp: labelled pass, predicted pass.
        fn: labelled pass, predicted fail.
        fp: labelled fail, predicted pass.
        tn: labelled fail, predicted fail.
    """

    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0

    @property
    def total(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    def as_dict(self) -> dict[str, dict[str, int]]:
        """Label, then prediction, to count: ``{"pass": {"pass": tp, "fail": fn}, ...}``."""
        return {
            "pass": {"pass": self.tp, "fail": self.fn},
            "fail": {"pass": self.fp, "fail": self.tn},
        }


def confusion(labels: Sequence[bool], predictions: Sequence[bool]) -> Confusion:
    """The confusion matrix of paired labels and predictions (same length)."""
    if len(labels) != len(predictions):
        raise ValueError(f"{len(labels)} labels but {len(predictions)} predictions")
    pairs = list(zip(labels, predictions, strict=True))
    return Confusion(
        tp=pairs.count((True, True)),
        fn=pairs.count((True, False)),
        fp=pairs.count((False, True)),
        tn=pairs.count((False, False)),
    )


def accuracy(matrix: Confusion) -> float | None:
    """The share of items whose prediction matches the label (None with no items)."""
    if not matrix.total:
        return None
    return (matrix.tp + matrix.tn) / matrix.total


def cohen_kappa(matrix: Confusion) -> float | None:
    """Cohen's kappa of predictions against labels (None when undefined, see the module)."""
    total = matrix.total
    if not total:
        return None
    observed = (matrix.tp + matrix.tn) / total
    label_pass = (matrix.tp + matrix.fn) / total
    predicted_pass = (matrix.tp + matrix.fp) / total
    expected = label_pass * predicted_pass + (1 - label_pass) * (1 - predicted_pass)
    if math.isclose(expected, 1.0):
        return None
    return (observed - expected) / (1 - expected)


def scored(labels: Sequence[bool], predictions: Sequence[Any]) -> tuple[list[bool], list[bool]]:
    """The pairs whose prediction is a bool (None is "no verdict"), as two lists."""
    kept = [(label, bool(p)) for label, p in zip(labels, predictions, strict=True) if p is not None]
    return [label for label, _ in kept], [prediction for _, prediction in kept]


def percent_agreement(votes: Sequence[bool]) -> float | None:
    """Share of judge pairs that voted alike (None with fewer than two votes)."""
    count = len(votes)
    if count < 2:
        return None
    yes = sum(votes)
    no = count - yes
    return (yes * (yes - 1) + no * (no - 1)) / (count * (count - 1))


def krippendorff_alpha(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha, nominal level, of values grouped by unit (missing values allowed).

    The formula and its source (Krippendorff 2011): docs/reference/architecture.md.

    Args:
        units: each unit's values, however many it got (a run's judge votes); a unit with
            fewer than two values is not pairable and is left out.

    Returns:
        Alpha, at most 1; None when undefined: no unit has two values, or every value of
        the pairable units is the same.
    """
    found = _coincidences(units)
    if found is None or found.expected == 0:
        return None
    return float(1 - (found.values - 1) * found.disagreeing / found.expected)


def observed_agreement(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Alpha's observed agreement ``1 - D_o``: the share of the pairable units' value pairs
    that match, each unit weighted by its number of values (None with no pairable unit)."""
    found = _coincidences(units)
    if found is None:
        return None
    return float(1 - found.disagreeing / found.values)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Coincidences:
    """What alpha needs from the coincidence matrix of the pairable units.

    Attributes:
        values: n, the number of pairable values.
        disagreeing: the sum of the matrix's cells off the diagonal, ``sum_{c != k} o_ck``.
        expected: ``sum_{c != k} n_c * n_k``, that is ``n ** 2 - sum_c n_c ** 2``.
    """

    values: int
    disagreeing: Fraction
    expected: int


def _coincidences(units: Sequence[Sequence[Hashable]]) -> _Coincidences | None:
    """The sums alpha needs, or None when no unit has two or more values."""
    pairable = [Counter(unit) for unit in units if len(unit) >= 2]
    if not pairable:
        return None
    totals: Counter[Hashable] = Counter()
    disagreeing = Fraction(0)
    for counts in pairable:
        totals.update(counts)
        size = counts.total()
        # Ordered pairs of two different values in this unit: m_u^2 - sum_c n_uc^2.
        disagreeing += Fraction(size * size - _squares(counts), size - 1)
    values = totals.total()
    return _Coincidences(
        values=values, disagreeing=disagreeing, expected=values * values - _squares(totals)
    )


def _squares(counts: Counter[Hashable]) -> int:
    return sum(count * count for count in counts.values())


# A pass rate: its interval, and the fewest passes that reach it.

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal distribution


def wilson(passes: int, count: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a pass rate (95% by default), as ``(low, high)``.

    Unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or N passes.
    """
    if count <= 0:
        return 0.0, 1.0
    rate = passes / count
    spread = z * z / count
    centre = (rate + spread / 2) / (1 + spread)
    half = z * math.sqrt(rate * (1 - rate) / count + spread / (4 * count)) / (1 + spread)
    return max(0.0, centre - half), min(1.0, centre + half)


def z_of(confidence: float) -> float:
    """The normal quantile of a two-sided interval at ``confidence`` (1.96 at 0.95)."""
    if confidence == 0.95:
        return Z95
    return statistics.NormalDist().inv_cdf((1 + confidence) / 2)


def required(pass_rate: float, count: int) -> int:
    """The fewest passing samples of ``count`` that reach ``pass_rate``."""
    return max(0, math.ceil(round(pass_rate * count, 9)))


# Sequential sampling: an SPRT decides a sampled test as soon as its samples can.

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
