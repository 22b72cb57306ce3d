"""The HTML report's sections on verdicts: tribunal runs, agreement, sampled tests, drift, usage.

Each function takes the session's records of one kind (the JSON report's shapes, see
``html.page``) and returns its ``<section>``; a record may lack any optional key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_harness.report.html.markup import (
    Html,
    cells,
    element,
    entry,
    figure,
    folded,
    join,
    outcome,
    percent,
    section,
    table,
    vote,
)
from pytest_harness.report.tables import money, seconds

Rows = Sequence[Mapping[str, Any]]


def tribunals(records: Rows) -> Html:
    """Every tribunal run, each with its judges' votes, reasons and costs, and its errors."""
    headers = ["test", "tribunal", "verdict", "votes", "tokens", "cost", "time"]
    body = []
    for r in records:
        name = r.get("tribunal")
        if r.get("sample") is not None:
            name = f"{name} (sample {r['sample']})"
        row = cells(
            r.get("test"),
            name,
            outcome(r.get("outcome")),
            f"{r.get('votes_passed', 0)}/{r.get('votes_cast', 0)}",
            r.get("tokens", 0),
            money(r.get("cost")),
            seconds(r.get("time")),
        )
        hooks = {"test": r.get("test"), "tribunal": r.get("tribunal"), "outcome": r.get("outcome")}
        detail = _run_detail(r)
        body.append(entry("tribunal-run", row, hooks, detail=detail, width=len(headers)))
    return section("tribunals", "Tribunal runs", table(headers, body, class_="runs"))


def _run_detail(record: Mapping[str, Any]) -> Html:
    """Under a run: its rule and value, the judges' votes, the judges that failed."""
    parts = []
    if record.get("rule") is not None or record.get("value") is not None:
        line = f"rule: {record.get('rule') or '-'}; value: {record.get('value')!r}"
        parts.append(element("p", line, class_="rule"))
    votes = record.get("votes") or []
    if votes:
        headers = ["judge", "model", "vote", "reason", "time", "tokens", "cost"]
        rows = [
            element(
                "tr",
                cells(
                    v.get("agent"),
                    v.get("model") or "",
                    vote(v.get("passed"), v.get("vote")),
                    folded(v.get("reason")),
                    seconds(v.get("time")),
                    v.get("tokens", 0),
                    money(v.get("cost")),
                ),
                class_="judge",
                data_judge=v.get("agent"),
                data_vote=_vote_word(v.get("passed")),
            )
            for v in votes
        ]
        parts.append(table(headers, [element("tbody", *rows)], class_="judges"))
    errors = record.get("errors") or []
    if errors:
        items = [
            element(
                "li",
                element("b", e.get("agent")),
                ": ",
                folded(e.get("error")),
                class_="judge-error",
                data_judge=e.get("agent"),
            )
            for e in errors
        ]
        parts.append(element("ul", *items, class_="errors"))
    return join(parts)


def agreement(rows: Rows) -> Html:
    """Per tribunal: runs with two or more votes, mean percent agreement, Fleiss' kappa."""
    body = [
        element(
            "tr",
            cells(
                r.get("tribunal"),
                r.get("runs", 0),
                "n/a" if r.get("percent_agreement") is None else f"{r['percent_agreement']:.1f}%",
                figure(r.get("fleiss_kappa")),
            ),
            class_="agreement",
            data_tribunal=r.get("tribunal"),
        )
        for r in rows
    ]
    headers = ["tribunal", "runs (2+ votes)", "agreement", "Fleiss' kappa"]
    return section("agreement", "Agreement among judges", table(headers, body))


def samples(records: Rows) -> Html:
    """Sampled tests: passes of N, the rate and its 95% interval, the rate needed, failures."""
    headers = ["test", "passed", "rate", "95% interval", "needs", "outcome"]
    body = []
    for r in records:
        ran = r.get("ran", r.get("samples", 0))
        low, high = [*(r.get("interval") or []), None, None][:2]
        row = cells(
            r.get("test"),
            f"{r.get('passes', 0)}/{ran}",
            percent(r.get("pass_rate")),
            f"{percent(low)} - {percent(high)}",
            percent(r.get("required")),
            outcome(r.get("outcome")),
        )
        failures = [
            element(
                "li",
                element("b", f"sample {f.get('sample')}"),
                ": ",
                folded(f.get("reason")),
                class_="failed-sample",
                data_sample=f.get("sample"),
            )
            for f in r.get("failures") or []
        ]
        detail = element("ul", *failures, class_="failures") if failures else None
        hooks = {"test": r.get("test"), "outcome": r.get("outcome")}
        body.append(entry("sampled-test", row, hooks, detail=detail, width=len(headers)))
    return section("samples", "Sampled tests", table(headers, body))


def drift(rows: Rows) -> Html:
    """Verdicts that flipped since the previous recording, and the judges whose votes did."""
    headers = ["test", "tribunal", "verdict", "judges whose votes changed", "cassette"]
    body = []
    for r in rows:
        name = r.get("key") or r.get("tribunal")
        if r.get("sample") is not None:
            name = f"{name} (sample {r['sample']})"
        old, new = r.get("old"), r.get("new")
        change = join(
            [
                outcome(old, old or "new run"),
                element("span", " -> ", class_="arrow"),
                outcome(new, new or "gone"),
            ]
        )
        judges = [
            element(
                "li",
                element("b", j.get("judge")),
                ": ",
                vote(j.get("old")),
                " -> ",
                vote(j.get("new")),
                class_="changed-vote",
                data_judge=j.get("judge"),
            )
            for j in r.get("judges") or []
        ]
        row = cells(r.get("test"), name, change, element("ul", *judges), r.get("cassette"))
        hooks = {"test": r.get("test"), "tribunal": r.get("tribunal"), "outcome": new or "gone"}
        body.append(entry("drift", row, {**hooks, "old": old or "none", "new": new or "none"}))
    return section("drift", "Verdict drift since the previous recording", table(headers, body))


def usage(rows: Rows) -> Html:
    """Per test: model calls, tokens and cost; then the session's total."""
    body = [
        element(
            "tr",
            cells(r.get("test"), r.get("calls", 0), r.get("tokens", 0), money(r.get("cost"))),
            class_="usage",
            data_test=r.get("test"),
        )
        for r in rows
    ]
    costs = [r["cost"] for r in rows if r.get("cost") is not None]
    total = cells(
        "total",
        sum(r.get("calls", 0) for r in rows),
        sum(r.get("tokens", 0) for r in rows),
        money(sum(costs) if costs else None),
    )
    foot = element("tfoot", element("tr", total, class_="usage-total"))
    return section(
        "usage", "Model usage", table(["test", "calls", "tokens", "cost"], [*body, foot])
    )


def _vote_word(passed: bool | None) -> str:
    return "none" if passed is None else ("pass" if passed else "fail")
