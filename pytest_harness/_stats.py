"""Statistics of judges: against labels (accuracy, Cohen's kappa) and among themselves
(percent agreement, Krippendorff's alpha).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any


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
