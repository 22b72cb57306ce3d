"""Agreement among judges: percent agreement per run, Fleiss' kappa across runs.

Per run, percent agreement is the share of judge pairs that voted alike; across runs of one
tribunal, Fleiss' kappa (with a varying number of judges per run) corrects it for chance.
Runs where fewer than two judges voted carry no agreement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


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
