"""A calibration's result: scores against the labels, agreement, probes, failures, record."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_harness import _statistics as stats
from pytest_harness._report.text import CALIBRATION_PROPERTY, clip, figure, percent, tabulate
from pytest_harness._statistics import Confusion, krippendorff_alpha, observed_agreement
from pytest_harness.calibration._labels import Labelled
from pytest_harness.errors import ConfigError

# What a fair verdict must not depend on, per built-in probe (for failure messages).

_INVARIANT = {
    "examples": "the order of its few-shot examples",
    "position": "which candidate comes first",
    "padding": "the length of the text",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """A tribunal run over a labelled set, scored; ``record`` is its account in the report.

    Attributes:
        tribunal: the tribunal's name.
        source: the labelled set's path as given (None for a list).
        items: the number of labelled items.
        panel: the panel's verdicts scored against the labels.
        judges: each judge's votes scored against the labels, in panel order.
        agreement: the judges' agreement among themselves over all items.
        probes: each judge under each probe asked for.
        max_flip_rate: the flip rate above which a judge is flagged.
        min_accuracy: The panel's lowest passing accuracy it was run with (None: none).
        min_kappa: The panel's lowest passing kappa it was run with (None: none).
    """

    tribunal: str
    source: str | None
    items: int
    panel: Score
    judges: tuple[Score, ...]
    agreement: Agreement
    probes: tuple[ProbeResult, ...] = ()
    max_flip_rate: float = 0.1
    min_accuracy: float | None = None
    min_kappa: float | None = None

    @property
    def flagged(self) -> tuple[str, ...]:
        """The judges some probe flagged, in panel order."""
        hit = {result.judge for result in self.probes if result.flagged}
        return tuple(score.judge for score in self.judges if score.judge in hit)

    def failures(
        self, min_accuracy: float | None = None, min_kappa: float | None = None
    ) -> list[str]:
        """What fails the calibration: the panel under a threshold, each flagged judge.

        A threshold not given here is the one the calibration was run with, if any.

        Raises:
            ConfigError: a threshold out of range.
        """
        min_accuracy = self.min_accuracy if min_accuracy is None else min_accuracy
        min_kappa = self.min_kappa if min_kappa is None else min_kappa
        check_thresholds(min_accuracy, min_kappa)
        found = []
        if min_accuracy is not None:
            found += _accuracy_failure(self.panel, min_accuracy)
        if min_kappa is not None:
            found += _kappa_failure(self.panel, min_kappa)
        found += [_flag_failure(r, self.max_flip_rate) for r in self.probes if r.flagged]
        return found

    def record(self, test: str | None) -> dict[str, Any]:
        """The JSON-ready account of this calibration in ``test``; the report keeps it:

            {
              "test": "tests/test_judges.py::test_quality", "tribunal": "Quality",
              "source": "labels/quality.jsonl",            # None for a Python list
              "items": 200,                                 # labelled items
              "panel": {
                "accuracy": 0.9, "kappa": 0.78,             # None when undefined
                "confusion": {"pass": {"pass": 57, "fail": 3}, "fail": {"pass": 17, "fail": 123}},
                "scored": 200,                              # items with a verdict
                "no_verdict": ["line 7"],                   # ids of items without one
                "errors": {"line 7": "AllAgentsFailed: ..."}
              },
              "judges": [{"judge": "Lenient", ...the panel's fields...}, ...],   # panel order
              "agreement": {"percent_agreement": 86.7, "krippendorff_alpha": 0.61, "items": 200},
              "probes": [{"judge": "Lenient", "probe": "position", "flips": 9, "applicable": 40,
                          "rate": 0.225, "flagged": true, "items": ["pair-3", ...]}],
              "flagged": ["Lenient"],
              "max_flip_rate": 0.1,
              "min_accuracy": 0.8, "min_kappa": null,      # the thresholds it was run with
              "failures": ["the panel's accuracy 0.750 is below min_accuracy=0.8 (...)"],
              "outcome": "fail"                             # "pass" when there are no failures
            }

        ``confusion`` maps the label, then the prediction, to a count ("pass" is positive: TP is
        ``["pass"]["pass"]``, FN ``["pass"]["fail"]``, FP ``["fail"]["pass"]``, TN
        ``["fail"]["fail"]``). Accuracy and rates are shares (0 to 1); ``percent_agreement`` is a
        percentage, as in the tribunals' agreement table, and like it the observed agreement of
        Krippendorff's alpha (Krippendorff 2011, nominal). Judges are named by their agent's name,
        ``#2``, ``#3`` added when a name repeats in the panel.
        """
        failures = self.failures()
        return {
            "test": test,
            "tribunal": self.tribunal,
            "source": self.source,
            "items": self.items,
            "panel": self.panel.record(),
            "judges": [{"judge": score.judge, **score.record()} for score in self.judges],
            "agreement": {
                "percent_agreement": self.agreement.percent_agreement,
                "krippendorff_alpha": self.agreement.krippendorff_alpha,
                "items": self.agreement.items,
            },
            "probes": [result.record() for result in self.probes],
            "flagged": list(self.flagged),
            "max_flip_rate": self.max_flip_rate,
            "min_accuracy": self.min_accuracy,
            "min_kappa": self.min_kappa,
            "failures": failures,
            "outcome": "fail" if failures else "pass",
        }

    def junit_property(self, test: str | None) -> tuple[str, str]:
        """The record as the test's JUnit property (the session report reads it back)."""
        return CALIBRATION_PROPERTY, json.dumps(self.record(test), sort_keys=True)

    def table(self) -> str:
        """The terminal tables: scores per judge and the panel, agreement, then probes."""
        where = self.source or "a list"
        lines = [f"{self.tribunal} calibrated on {self.items} labelled items from {where}"]
        rows = [score.row() for score in (*self.judges, self.panel)]
        headers = ["judge", "scored", "no verdict", "accuracy", "kappa", "TP", "FN", "FP", "TN"]
        lines += [tabulate(rows, headers), ""]
        shared = self.agreement
        agreed = "n/a" if shared.percent_agreement is None else f"{shared.percent_agreement:.1f}%"
        lines.append(
            f"agreement among the judges: {agreed} over {shared.items} items with 2+ votes, "
            f"Krippendorff's alpha {figure(shared.krippendorff_alpha)}"
        )
        if self.probes:
            lines += ["", f"bias probes (flagged above a flip rate of {self.max_flip_rate:.0%}):"]
            lines.append(tabulate([_probe_row(r) for r in self.probes], _PROBE_HEADERS))
        return "\n".join(lines)


_PROBE_HEADERS = ["judge", "probe", "flips", "flip rate", "flagged", "items that flipped"]


def check_thresholds(min_accuracy: float | None, min_kappa: float | None) -> None:
    """Raise ConfigError unless the thresholds are in range (accuracy 0..1, kappa -1..1)."""
    for name, value, low in (("min_accuracy", min_accuracy, 0.0), ("min_kappa", min_kappa, -1.0)):
        ok = value is None or (isinstance(value, (int, float)) and low <= value <= 1)
        if not ok or isinstance(value, bool):
            raise ConfigError(f"{name}={value!r} is out of range: give a number from {low} to 1")


def _accuracy_failure(panel: Score, threshold: float) -> list[str]:
    if panel.accuracy is None:
        return [
            f"the panel's accuracy is undefined (no item got a verdict), so it cannot reach "
            f"min_accuracy={threshold}: see why in the errors of {', '.join(panel.no_verdict)}"
        ]
    if panel.accuracy >= threshold:
        return []
    c = panel.confusion
    return [
        f"the panel's accuracy {panel.accuracy:.3f} is below min_accuracy={threshold} "
        f"({c.tp + c.tn} of {panel.scored} items right: {c.fp} passed that should fail, "
        f"{c.fn} failed that should pass): improve the judges' instructions or examples, "
        "or check the labels of the items they get wrong"
    ]


def _kappa_failure(panel: Score, threshold: float) -> list[str]:
    if panel.kappa is None:
        if not panel.scored:
            why = "no item got a verdict"
        else:
            verdict = "pass" if panel.confusion.tp else "fail"
            why = f"every label and every verdict is {verdict}, so agreement shows nothing"
        return [
            f"the panel's Cohen's kappa is undefined ({why}), so it cannot reach "
            f"min_kappa={threshold}: label items of both verdicts, pass and fail"
        ]
    if panel.kappa >= threshold:
        return []
    return [
        f"the panel's Cohen's kappa {panel.kappa:.3f} is below min_kappa={threshold} "
        f"(accuracy {percent(panel.accuracy)}; kappa discounts the agreement chance gives): "
        "the panel is not telling the labelled verdicts apart; improve the judges' "
        "instructions or examples, or check the labels"
    ]


def _flag_failure(result: ProbeResult, max_flip_rate: float) -> str:
    invariant = _INVARIANT.get(result.probe, "this change")
    return (
        f"judge {result.judge} is flagged by the {result.probe} probe: its vote flipped on "
        f"{result.flips} of {result.applicable} items ({percent(result.rate)}), above "
        f"max_flip_rate={max_flip_rate}: {', '.join(result.items)}. A fair verdict does not "
        f"depend on {invariant}: fix the judge's instructions, or drop it from the panel"
    )


def _probe_row(result: ProbeResult) -> list[Any]:
    flips = f"{result.flips}/{result.applicable}"
    flagged = "FLAGGED" if result.flagged else ("n/a" if not result.applicable else "no")
    shown = clip(", ".join(result.items), 60) or "-"
    return [result.judge, result.probe, flips, percent(result.rate), flagged, shown]


@dataclass(frozen=True, slots=True, kw_only=True)
class Score:
    """A judge's (or the panel's) predictions scored against the labels.

    Attributes:
        judge: the judge's name, or ``"panel"``.
        scored: items with a prediction.
        accuracy: Against the labels, over the scored items (None when undefined).
        kappa: Cohen's kappa against the labels, over the scored items (None when undefined).
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
        labels, predicted = stats.scored([item.label for item in items], predictions)
        matrix = stats.confusion(labels, predicted)
        missing = tuple(item.id for item, p in zip(items, predictions, strict=True) if p is None)
        return cls(
            judge=judge,
            scored=len(labels),
            accuracy=stats.accuracy(matrix),
            kappa=stats.cohen_kappa(matrix),
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

    Over the items with two or more votes (a judge that failed on an item has no vote
    there), as Krippendorff's alpha, nominal level, which allows such missing votes.

    Attributes:
        percent_agreement: the share of pairs of votes on the same item that match, each
            item weighted by its number of votes (alpha's observed agreement; with every
            vote cast, the mean over items of the share of judge pairs that voted alike),
            as a percentage (None without such items).
        krippendorff_alpha: that agreement corrected for chance: 1 when every item's votes
            are unanimous, 0 at chance (None when undefined: no such item, or every vote
            the same).
        items: the items with two or more votes.
    """

    percent_agreement: float | None
    krippendorff_alpha: float | None
    items: int

    @classmethod
    def of(cls, runs: Sequence[Sequence[bool]]) -> Agreement:
        """From each item's votes (the judges that voted)."""
        rated = [run for run in runs if len(run) >= 2]
        agreed = observed_agreement(rated)
        return cls(
            percent_agreement=None if agreed is None else 100 * agreed,
            krippendorff_alpha=krippendorff_alpha(rated),
            items=len(rated),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """One judge under one probe.

    Attributes:
        judge: The judge's name.
        probe: The probe's name.
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
