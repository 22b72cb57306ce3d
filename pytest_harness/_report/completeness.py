"""The report page's replay section: per replayed test, what it played from its cassette,
the recordings it left unused and what ran live beside it (``_cassettes.replayed``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from pytest_harness._cassettes.replayed import counts
from pytest_harness._report.markup import element, section, table, test_outcome
from pytest_harness._report.text import OUTCOME

_KINDS = (("http", "HTTP call"), ("tools", "tool call"), ("mcp", "MCP message"))


def replay(rows: Sequence[Mapping[str, Any]]) -> Markup:
    """A line of counts, then a row per replayed test; a test whose replay was not complete
    (a recording left unused, something run live) comes first, marked ``incomplete``."""
    ordered = sorted(rows, key=lambda r: not (r.get("unused") or r.get("live")))
    body = [_row(r) for r in ordered]
    line = element("p", counts(rows), class_="replay-counts")
    headers = ["test", "outcome", "replayed", "recordings not used", "ran live"]
    return section("replay", "Replay", line, table(headers, body, class_="replay"))


def _row(row: Mapping[str, Any]) -> Markup:
    unused = [
        f"interaction {u.get('interaction')}: {u.get('what')}" for u in row.get("unused") or []
    ]
    live = [str(what) for what in row.get("live") or []]
    complete = not unused and not live
    return element(
        "tr",
        element(
            "td", row.get("test"), " ", element("span", row.get("cassette"), class_="cassette")
        ),
        element("td", test_outcome(row.get(OUTCOME))),
        element("td", _replayed(row.get("replayed") or {})),
        element("td", _listed(unused, strict=bool(row.get("strict")) and not row.get("shared"))),
        element("td", _listed(live)),
        class_="entry replay" + ("" if complete else " incomplete"),
        data_test=row.get("test"),
        data_outcome=row.get(OUTCOME),
    )


def _replayed(replayed: Mapping[str, Any]) -> str:
    """``2 HTTP calls · 1 tool call``, or ``nothing``."""
    shown = []
    for key, label in _KINDS:
        number = replayed.get(key) or 0
        if number:
            shown.append(f"{number} {label}{'' if number == 1 else 's'}")
    return " · ".join(shown) or "nothing"


def _listed(lines: Sequence[str], *, strict: bool = False) -> Markup:
    if not lines:
        return Markup("-")
    items = element("ul", *(element("li", line) for line in lines))
    return element("div", items, element("p", "strict replay: fails the test") if strict else "")
