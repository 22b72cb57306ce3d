"""The HTML report's calibrations: each judge and the panel scored against the labels.

Per calibration: a row per judge and one for the panel (items scored, accuracy, Cohen's
kappa against the labels, the confusion matrix as TP/FN/FP/TN with "pass" as positive),
the judges' agreement among themselves, and the bias probes, a flagged judge highlighted
with the items whose verdict flipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_harness.report.html.markup import (
    Html,
    cells,
    count,
    element,
    figure,
    folded,
    outcome,
    percent,
    section,
    table,
)

Rows = Sequence[Mapping[str, Any]]


def calibrations(records: Rows) -> Html:
    """Every calibration of the session, one ``<article>`` each."""
    return section("calibrations", "Judge calibration", *(_calibration(r) for r in records))


def _calibration(record: Mapping[str, Any]) -> Html:
    verdict = record.get("outcome")
    title = element(
        "h3",
        element("span", record.get("test"), class_="test"),
        " · ",
        element("span", record.get("tribunal"), class_="tribunal"),
        " ",
        outcome(verdict) if verdict else "",
    )
    about = (
        f"{record.get('items', 0)} labelled items from {record.get('source') or 'a list'}; "
        f"a judge is flagged above a flip rate of {percent(record.get('max_flip_rate'))}"
    )
    parts = [title, element("p", about, class_="about"), _scores(record)]
    shared = record.get("agreement") or {}
    if shared:
        agreed = shared.get("percent_agreement")
        line = (
            "agreement among the judges: "
            + ("n/a" if agreed is None else f"{agreed:.1f}%")
            + f", Fleiss' kappa {figure(shared.get('fleiss_kappa'))}"
        )
        parts.append(element("p", line, class_="calibration-agreement"))
    if record.get("probes"):
        parts.append(_probes(record["probes"]))
    flagged = record.get("flagged") or []
    if flagged:
        line = "flagged by the bias probes: " + ", ".join(str(name) for name in flagged)
        parts.append(element("p", line, class_="flagged-judges"))
    failures = [element("li", folded(f)) for f in record.get("failures") or []]
    if failures:
        parts.append(element("ul", *failures, class_="failures"))
    return element(
        "article",
        *parts,
        class_="entry calibration",
        data_test=record.get("test"),
        data_tribunal=record.get("tribunal"),
        data_outcome=verdict or ("fail" if flagged else "info"),
    )


def _scores(record: Mapping[str, Any]) -> Html:
    """Per judge, then the panel: scored, no verdict, accuracy, kappa, TP/FN/FP/TN."""
    rows = [
        _score_row(judge.get("judge"), judge, kind="judge-score")
        for judge in record.get("judges") or []
    ]
    rows.append(_score_row("panel", record.get("panel") or {}, kind="panel-score"))
    headers = ["judge", "scored", "no verdict", "accuracy", "kappa", "TP", "FN", "FP", "TN"]
    return table(headers, [element("tbody", *rows)], class_="scores")


def _score_row(name: Any, score: Mapping[str, Any], *, kind: str) -> Html:
    confusion = score.get("confusion")
    missing = list(score.get("no_verdict") or [])
    return element(
        "tr",
        cells(
            name,
            score.get("scored", 0),
            f"{len(missing)} ({', '.join(map(str, missing))})" if missing else 0,
            percent(score.get("accuracy")),
            figure(score.get("kappa")),
            count(confusion, "pass", "pass"),
            count(confusion, "pass", "fail"),
            count(confusion, "fail", "pass"),
            count(confusion, "fail", "fail"),
        ),
        class_=kind,
        data_judge=name,
    )


def _probes(probes: Sequence[Mapping[str, Any]]) -> Html:
    """Each judge under each probe: flips of applicable items, the rate, the flipped items."""
    rows = [
        element(
            "tr",
            cells(
                p.get("judge"),
                p.get("probe"),
                f"{p.get('flips', 0)}/{p.get('applicable', 0)}",
                percent(p.get("rate")),
                outcome("fail", "flagged") if p.get("flagged") else "no",
                ", ".join(str(item) for item in p.get("items") or []) or "-",
            ),
            class_="probe flagged" if p.get("flagged") else "probe",
            data_judge=p.get("judge"),
            data_probe=p.get("probe"),
        )
        for p in probes
    ]
    headers = ["judge", "probe", "flips", "flip rate", "flagged", "items that flipped"]
    return table(headers, [element("tbody", *rows)], class_="probes")
