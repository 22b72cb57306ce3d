"""What tribunals report: the failure message, per-run records, the session's tables."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from pytest_harness._report.text import OUTCOME, money, seconds, tabulate
from pytest_harness._statistics import krippendorff_alpha, observed_agreement
from pytest_harness.errors import describe

if TYPE_CHECKING:
    from pytest_harness.tribunal import Verdict

RECORD_PROPERTY = "harness_tribunal"


def record(
    tribunal: Any, error: BaseException | None, test: str | None, *, sample: int | None = None
) -> dict[str, Any]:
    """The JSON-ready account of one finished (or failed) tribunal run (``sample``: its
    sample's number in a sampled test)."""
    from pytest_harness._agent import totals

    verdict: Verdict | None = tribunal.verdict
    votes = list(verdict.votes) if verdict is not None else []
    errors = [{"agent": e["agent"], "error": describe(e["error"])} for e in tribunal.errors]
    if verdict is None and not errors and error is not None:
        errors = [{"agent": tribunal.name, "error": describe(error)}]
    usage, cost = totals(tribunal.results)
    return {
        "test": test,
        "tribunal": tribunal.name,
        "outcome": "error" if verdict is None else ("pass" if verdict else "fail"),
        "value": _plain(verdict.value) if verdict is not None else None,
        "rule": verdict.rule if verdict is not None else None,
        "judges": len(tribunal.agents),
        "votes": [_vote_record(v) for v in votes],
        "votes_passed": sum(1 for v in votes if v.passed),
        "votes_cast": len(votes),
        "errors": errors,
        "agreement": verdict.agreement if verdict is not None else None,
        "tokens": usage.total_tokens if usage is not None else 0,
        "cost": cost,
        "time": tribunal.execution_time,
        "sample": sample,
    }


def junit_properties(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The test's JUnit XML properties for one tribunal run (the full record comes first).

    The test's tokens and cost, its tribunals' included, are the test's own properties
    (``spend.junit_properties``).
    """
    return [
        (RECORD_PROPERTY, json.dumps(data, sort_keys=True)),
        ("harness_verdict", f"{data['tribunal']}: {data['outcome']}"),
        ("harness_votes", f"{data['votes_passed']}/{data['votes_cast']}"),
    ]


def records_in(
    properties: Iterable[tuple[str, object]], kind: str = RECORD_PROPERTY
) -> list[dict[str, Any]]:
    """The records of ``kind`` (tribunal runs by default) in a report's ``user_properties``."""
    found = []
    for name, value in properties:
        if name == kind and isinstance(value, str):
            found.append(json.loads(value))
    return found


def session_table(records: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            r["test"],
            r.get(OUTCOME, ""),  # the test's (the session report adds it): xfailed, say
            r["tribunal"],
            r["outcome"],
            f"{r['votes_passed']}/{r['votes_cast']}",
            len(r["errors"]),
            r["tokens"],
            money(r["cost"]),
            seconds(r["time"]),
        ]
        for r in records
    ]
    headers = ["test", "outcome", "tribunal", "verdict", "votes", "errors", "tokens", "cost"]
    headers.append("time")
    return tabulate(rows, headers=headers)


def agreement(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per tribunal: its runs with two or more votes, and over them Krippendorff's alpha
    (nominal) and its observed agreement, as a percentage (``_statistics`` has the formula)."""
    by_tribunal: dict[str, list[list[bool]]] = {}
    for r in records:
        votes = [bool(v["passed"]) for v in r["votes"] if v["passed"] is not None]
        by_tribunal.setdefault(r["tribunal"], [])
        if len(votes) >= 2:
            by_tribunal[r["tribunal"]].append(votes)
    rows = []
    for name, runs in sorted(by_tribunal.items()):
        agreed = observed_agreement(runs)
        rows.append(
            {
                "tribunal": name,
                "runs": len(runs),
                "percent_agreement": None if agreed is None else 100 * agreed,
                "krippendorff_alpha": krippendorff_alpha(runs),
            }
        )
    return rows


def agreement_table(rows: Sequence[Mapping[str, Any]]) -> str:
    shown = [
        [
            row["tribunal"],
            row["runs"],
            "n/a" if row["percent_agreement"] is None else f"{row['percent_agreement']:.1f}%",
            "n/a" if row["krippendorff_alpha"] is None else f"{row['krippendorff_alpha']:.3f}",
        ]
        for row in rows
    ]
    headers = ["tribunal", "runs (2+ votes)", "agreement", "Krippendorff's alpha"]
    return tabulate(shown, headers=headers)


def _vote_record(vote: Any) -> dict[str, Any]:
    """A ``Vote`` as plain data. Its fields are strings, numbers and None but the vote itself,
    so a shallow copy does (``dataclasses.asdict`` deep-copies each field: most of a record's
    time)."""
    return {**{f.name: getattr(vote, f.name) for f in fields(vote)}, "vote": _plain(vote.vote)}


def _plain(value: Any) -> Any:
    """``value`` if JSON can hold it, else its repr."""
    if value is None or isinstance(value, (str, int, float)):  # bool is an int
        return value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
