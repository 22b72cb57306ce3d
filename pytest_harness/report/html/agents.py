"""The HTML report's sections on agents at work: orchestrator runs and simulated conversations.

Each run shows its steps (the tool calls in order, with their arguments and results) and each
conversation its turns, in full and escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_harness.report.html.markup import (
    Html,
    cells,
    element,
    entry,
    folded,
    section,
    table,
)
from pytest_harness.report.tables import money, seconds

Rows = Sequence[Mapping[str, Any]]


def runs(records: Rows) -> Html:
    """Orchestrator runs: tools, requests, why they stopped, events, spend; then their steps."""
    headers = ["test", "tools", "tool errors", "requests", "stop", "events", "tokens", "cost"]
    headers.append("time")
    body = []
    for r in records:
        events = r.get("events") or {}
        row = cells(
            r.get("test"),
            ", ".join(r.get("tools") or []) or "-",
            r.get("tool_errors", 0),
            r.get("requests", 0),
            r.get("stop_reason"),
            ", ".join(f"{kind} x{n}" for kind, n in events.items()) or "-",
            r.get("tokens", 0),
            money(r.get("cost")),
            seconds(r.get("time")),
        )
        detail = _steps(r.get("steps") or [])
        hooks = {"test": r.get("test"), "outcome": "info", "stop": r.get("stop_reason")}
        body.append(entry("agent-run", row, hooks, detail=detail, width=len(headers)))
    return section("runs", "Agent runs", table(headers, body))


def _steps(steps: Sequence[Mapping[str, Any]]) -> Html | None:
    """A run's tool calls in order: the request that made each, its arguments, what came back."""
    if not steps:
        return None
    rows = []
    for step in steps:
        failed = step.get("error") is not None
        result = step.get("error") if failed else step.get("result")
        rows.append(
            element(
                "tr",
                cells(
                    step.get("request"),
                    step.get("tool"),
                    folded(_plain(step.get("arguments"))),
                    element("div", folded(_plain(result)), class_="error" if failed else None),
                ),
                class_="step",
                data_tool=step.get("tool"),
                data_outcome="error" if failed else "pass",
            )
        )
    headers = ["request", "tool", "arguments", "result"]
    return table(headers, [element("tbody", *rows)], class_="steps")


def transcripts(records: Rows) -> Html:
    """Simulated conversations: persona, goal, how they ended; then every turn."""
    headers = ["test", "persona", "goal", "turns", "stopped by", "reason"]
    body = []
    for r in records:
        turns = r.get("turns") or []
        row = cells(
            r.get("test"),
            folded(r.get("persona")),
            folded(r.get("goal")),
            len(turns),
            r.get("stopped_by"),
            folded(r.get("reason")),
        )
        said = [
            element(
                "li",
                element("b", turn.get("role")),
                ": ",
                folded(_plain(turn.get("content"))),
                class_="turn",
                data_role=turn.get("role"),
            )
            for turn in turns
        ]
        detail = element("ol", *said, class_="turns") if said else None
        hooks = {"test": r.get("test"), "outcome": "info", "stopped_by": r.get("stopped_by")}
        body.append(entry("transcript", row, hooks, detail=detail, width=len(headers)))
    return section("transcripts", "Simulated conversations", table(headers, body))


def _plain(value: Any) -> str | None:
    """A step's or turn's value as text: strings as they are, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, sort_keys=True, default=repr)
    except ValueError:
        return repr(value)
