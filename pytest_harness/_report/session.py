"""The session's report: every test's harness records, as terminal tables, JSON or HTML.

Agents at work (orchestrator runs, simulated conversations) become report rows here: each is
a JUnit property of its test (JSON, read back by the session report), a row of a
terminal table at the end of the session, and an entry of the JSON report (``runs``,
``transcripts``).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_harness import _drift as drift
from pytest_harness import _samples as samples
from pytest_harness import _watch as spend
from pytest_harness._report import tribunals as report
from pytest_harness._report.text import (
    CALIBRATION_PROPERTY,
    REASON_WIDTH,
    clip,
    figure,
    money,
    percent,
    seconds,
    tabulate,
)
from pytest_harness._report.tribunals import records_in

RUN_PROPERTY = "harness_run"
TRANSCRIPT_PROPERTY = "harness_transcript"
STEP_WIDTH = 2000  # a tool call's arguments and result in a report, at most


def run_property(run: Any, test: str | None) -> tuple[str, str]:
    """One orchestrator run as a JUnit property: tools called, requests, stop, tokens, cost,
    and its steps (each tool call: request, tool, arguments, result or error)."""
    data = {
        "test": test,
        "tools": run.tools_called,
        "tool_errors": sum(not call.ok for call in run.tool_calls),
        "requests": run.requests,
        "stop_reason": run.stop_reason,
        "tokens": run.usage.total_tokens,
        "cost": run.cost,
        "time": round(run.wall_time, 3),
        "events": dict(Counter(event.kind for event in run.events)),
        "steps": [
            {
                "request": call.request,
                "tool": call.name,
                "arguments": clip(call.raw_arguments, STEP_WIDTH),
                "result": None if call.result is None else clip(call.result, STEP_WIDTH),
                "error": call.error,
            }
            for call in run.tool_calls
        ],
    }
    return RUN_PROPERTY, json.dumps(data, sort_keys=True)


def runs_table(records: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            r["test"],
            clip(", ".join(r["tools"]) or "-", REASON_WIDTH),
            r["tool_errors"],
            r["requests"],
            r["stop_reason"],
            ", ".join(f"{kind} x{n}" for kind, n in (r.get("events") or {}).items()) or "-",
            r["tokens"],
            money(r["cost"]),
            seconds(r["time"]),
        ]
        for r in records
    ]
    headers = ["test", "tools", "errors", "requests", "stop", "events", "tokens", "cost", "time"]
    return tabulate(rows, headers=headers)


def transcript_property(transcript: Any, test: str | None) -> tuple[str, str]:
    """One simulated conversation as a JUnit property: persona, goal, turns, why it ended."""
    data = {
        "test": test,
        "persona": transcript.persona,
        "goal": transcript.goal,
        "turns": transcript.messages,
        "stopped_by": transcript.stopped_by,
        "reason": transcript.reason,
    }
    return TRANSCRIPT_PROPERTY, json.dumps(data, sort_keys=True)


def transcripts_table(records: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            r["test"],
            clip(r["persona"], REASON_WIDTH),
            sum(turn["role"] == "user" for turn in r["turns"]),
            r["stopped_by"],
            clip(r["reason"] or "-", REASON_WIDTH),
        ]
        for r in records
    ]
    return tabulate(rows, headers=["test", "persona", "user turns", "stopped by", "reason"])


Rows = Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Section:
    """One kind of record: its JSON key, its JUnit property, its terminal table."""

    key: str
    property: str
    title: str
    table: Callable[[Rows], str]
    always: bool = False  # shown without -v or --harness-report (verdict drift)


def usage_table(records: Rows) -> str:
    """Per test: model calls, tokens and cost; then the session's total."""
    rows = [[r["test"], r["calls"], r["tokens"], money(r["cost"])] for r in records]
    costs = [r["cost"] for r in records if r["cost"] is not None]
    total = sum(costs) if costs else None
    rows.append(["total", sum(r["calls"] for r in records), sum(r["tokens"] for r in records)])
    rows[-1].append(money(total))
    return tabulate(rows, headers=["test", "calls", "tokens", "cost"])


def tribunals_table(records: Rows) -> str:
    """The tribunal runs, then the judges' agreement per tribunal."""
    text = report.session_table(records)
    rows = report.agreement(records)
    if any(row["runs"] for row in rows):
        text += "\n\n" + report.agreement_table(rows)
    return text


def calibrations_table(records: Rows) -> str:
    """Per calibration: the panel's accuracy and kappa, and the judges the probes flagged."""
    rows = []
    for r in records:
        panel = r["panel"]
        rows.append(
            [
                r["test"],
                r["tribunal"],
                f"{panel['scored']}/{r['items']}",
                percent(panel["accuracy"]),
                figure(panel["kappa"]),
                ", ".join(r.get("flagged") or []) or "-",
                r.get("outcome", "-"),
            ]
        )
    headers = ["test", "tribunal", "scored", "accuracy", "kappa", "flagged", "outcome"]
    return tabulate(rows, headers=headers)


SECTIONS = (
    Section("usage", spend.USAGE_PROPERTY, "model calls", usage_table),
    Section("runs", RUN_PROPERTY, "agent runs", runs_table),
    Section(
        "transcripts",
        TRANSCRIPT_PROPERTY,
        "simulated conversations",
        transcripts_table,
    ),
    Section("samples", samples.SAMPLES_PROPERTY, "sampled tests", samples.samples_table),
    Section("calibrations", CALIBRATION_PROPERTY, "judge calibration", calibrations_table),
    Section("tribunals", report.RECORD_PROPERTY, "tribunals", tribunals_table),
    Section("drift", drift.DRIFT_PROPERTY, "verdict drift", drift.drift_table, always=True),
)


class SessionReport:
    """Collects every test's records (from all xdist workers) and reports them at the end.

    The plugin registers it on the xdist controller.

    Args:
        path: where to write the report (``.html``: HTML, else JSON), or None.
        tables: print every section's table (``-v`` or ``--harness-report``); otherwise
            only the sections shown always (verdict drift while re-recording).
    """

    def __init__(self, path: Path | None, *, tables: bool = True) -> None:
        self.path = path
        self.tables = tables
        self.data: dict[str, list[dict[str, Any]]] = {s.key: [] for s in SECTIONS}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "teardown" and report.user_properties:
            for section in SECTIONS:
                self.data[section.key] += records_in(report.user_properties, section.property)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for section in SECTIONS:
            rows = self.data[section.key]
            if rows and (self.tables or section.always):
                terminalreporter.write_sep("=", f"pytest-harness {section.title}")
                terminalreporter.write_line(section.table(rows))
        if self.path is not None and any(self.data.values()):
            terminalreporter.write_line(f"harness report written to {self.path}")

    def pytest_sessionfinish(self) -> None:
        if self.path is not None:
            write(self.path, self.data)


def write(path: Path, data: Mapping[str, Rows]) -> None:
    """Write the session's records to ``path``: HTML for ``.html``, else JSON."""
    full: dict[str, Any] = {s.key: list(data.get(s.key, ())) for s in SECTIONS}
    full["agreement"] = report.agreement(full["tribunals"])
    if path.suffix.lower() in (".html", ".htm"):
        from pytest_harness._report.html import write_html

        write_html(path, full)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(full, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)
