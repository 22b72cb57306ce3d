"""The figures of a calibration: scores against the labels, agreement, probe flips.

``Score`` is one judge's (or the panel's) predictions against the labels, ``Agreement``
the judges' agreement among themselves, ``ProbeResult`` one judge under one bias probe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_harness.calibration import metrics
from pytest_harness.calibration.labels import Labelled
from pytest_harness.calibration.metrics import Confusion
from pytest_harness.tribunal.agreement import fleiss_kappa, percent_agreement


@dataclass(frozen=True, slots=True, kw_only=True)
class Score:
    """A judge's (or the panel's) predictions scored against the labels.

    Attributes:
        judge: the judge's name, or ``"panel"``.
        scored: items with a prediction.
        accuracy / kappa: against the labels over the scored items (None when undefined).
        confusion: labels against predictions.
        no_verdict: ids of the items without a prediction, in set order.
        errors: why, per item id in ``no_verdict``.
    """

    judge: str
    scored: int
    accuracy: float | None
    kappa: float | None
    confusion: Confusion
    no_verdict: tuple[str, ...] = ()
    errors: Mapping[str, str] | None = None

    @classmethod
    def of(
        cls,
        judge: str,
        items: Sequence[Labelled],
        predictions: Sequence[bool | None],
        errors: Mapping[str, str],
    ) -> Score:
        """Score ``predictions`` (None: no verdict) of ``items`` against their labels."""
        labels, predicted = metrics.scored([item.label for item in items], predictions)
        matrix = metrics.confusion(labels, predicted)
        missing = tuple(item.id for item, p in zip(items, predictions, strict=True) if p is None)
        return cls(
            judge=judge,
            scored=len(labels),
            accuracy=metrics.accuracy(matrix),
            kappa=metrics.cohen_kappa(matrix),
            confusion=matrix,
            no_verdict=missing,
            errors={key: errors[key] for key in missing if key in errors},
        )

    def record(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "confusion": self.confusion.as_dict(),
            "scored": self.scored,
            "no_verdict": list(self.no_verdict),
            "errors": dict(self.errors or {}),
        }

    def row(self) -> list[Any]:
        c = self.confusion
        shown = [percent(self.accuracy), figure(self.kappa)]
        return [self.judge, self.scored, len(self.no_verdict), *shown, c.tp, c.fn, c.fp, c.tn]


@dataclass(frozen=True, slots=True, kw_only=True)
class Agreement:
    """How much the judges agree among themselves, whatever the labels say.

    Attributes:
        percent_agreement: the mean, over items with two or more votes, of the share of
            judge pairs that voted alike, as a percentage (None without such items).
        fleiss_kappa: that agreement corrected for chance (None when undefined).
        items: the items with two or more votes.
    """

    percent_agreement: float | None
    fleiss_kappa: float | None
    items: int

    @classmethod
    def of(cls, runs: Sequence[Sequence[bool]]) -> Agreement:
        """From each item's votes (the judges that voted)."""
        rated = [run for run in runs if len(run) >= 2]
        shares = [percent_agreement(run) or 0.0 for run in rated]
        mean = 100 * sum(shares) / len(shares) if shares else None
        return cls(percent_agreement=mean, fleiss_kappa=fleiss_kappa(rated), items=len(rated))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """One judge under one probe.

    Attributes:
        judge / probe: their names.
        flips: items whose perturbed vote was not the one a fair judge gives.
        applicable: items the probe applied to where both votes were given.
        rate: ``flips / applicable`` (None when nothing applied).
        flagged: the rate is above the calibration's ``max_flip_rate``.
        items: the ids of the items that flipped.
    """

    judge: str
    probe: str
    flips: int
    applicable: int
    rate: float | None
    flagged: bool
    items: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "probe": self.probe,
            "flips": self.flips,
            "applicable": self.applicable,
            "rate": self.rate,
            "flagged": self.flagged,
            "items": list(self.items),
        }


def percent(value: float | None) -> str:
    """A share (0..1) as a percentage, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{100 * value:.1f}%"


def figure(value: float | None) -> str:
    """A kappa to three places, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{value:.3f}"
