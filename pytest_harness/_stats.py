"""Statistics of judges: against labels (accuracy, Cohen's kappa) and among themselves.

Pure functions of pass/fail labels and predictions, with "pass" as the positive class: a
true positive is an item labelled pass that the judge passed, a false positive one labelled
fail that it passed. Accuracy is the share of items where prediction and label agree; Cohen's
kappa corrects that share for the agreement two raters with the same pass rates would reach
by chance::

    kappa = (observed - expected) / (1 - expected)
    expected = P(label pass) * P(predicted pass) + P(label fail) * P(predicted fail)

Kappa is undefined (None) when ``expected`` is 1: every label and every prediction is the
same verdict, so agreement says nothing about the judge.

Among judges: percent agreement per run, Fleiss' kappa across runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
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


def fleiss_kappa(runs: Sequence[Sequence[bool]]) -> float | None:
    """Fleiss' kappa over runs (subjects) of pass/fail votes, judges per run may vary.

    None when it is undefined: no run with two or more votes, or every vote in one category.
    """
    rated = [run for run in runs if len(run) >= 2]
    if not rated:
        return None
    observed = sum(percent_agreement(run) or 0.0 for run in rated) / len(rated)
    total = sum(len(run) for run in rated)
    share_yes = sum(sum(run) for run in rated) / total
    expected = share_yes**2 + (1 - share_yes) ** 2
    if math.isclose(expected, 1.0):
        return None
    return (observed - expected) / (1 - expected)
