"""The session's report: every test's harness records, as terminal tables, JSON or HTML."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_harness import _changes as changes
from pytest_harness import _drift as drift
from pytest_harness._cassettes import replayed
from pytest_harness._datasets import sampling as samples
from pytest_harness._pytest_glue import matrix
from pytest_harness._pytest_glue import watch as spend
from pytest_harness._report import tribunals as report
from pytest_harness._report.text import (
    CALIBRATION_PROPERTY,
    OUTCOME,
    REASON_WIDTH,
    STEP_WIDTH,
    clip,
    cut,
    figure,
    money,
    percent,
    seconds,
    tabulate,
    timing,
)
from pytest_harness._report.tribunals import records_in

RUN_PROPERTY = "harness_run"
TRANSCRIPT_PROPERTY = "harness_transcript"


def run_property(run: Any, test: str | None) -> tuple[str, str]:
    """One orchestrator run as a JUnit property: the question, tools called, requests, stop,
    tokens, cost, time (and the recorded one, in replay), its steps in order (each model
    message, each tool call with its arguments and its result or error) and the answer."""
    recorded = run.recorded_time
    data = {
        "test": test,
        "question": cut(run.question),
        "answer": cut(run.output),
        "tools": run.tools_called,
        "tool_errors": sum(not call.ok for call in run.tool_calls),
        "requests": run.requests,
        "stop_reason": run.stop_reason,
        "tokens": run.usage.total_tokens,
        "cost": run.cost,
        "time": round(run.wall_time, 3),
        "recorded_time": None if recorded is None else round(recorded, 3),
        "events": dict(Counter(event.kind for event in run.events)),
        "steps": steps(run),
    }
    return RUN_PROPERTY, json.dumps(data, sort_keys=True)


def steps(run: Any) -> list[dict[str, Any]]:
    """A run's steps in order: each response's text (``message``; the last one's is the
    answer), then the tool calls it asked for (``tool``), as they were run."""
    calls = list(run.tool_calls)
    if not run.responses:  # a run made before Run kept its responses
        return [_tool_step(call) for call in calls]
    found: list[dict[str, Any]] = []
    last = len(run.responses) - 1
    for number, response in enumerate(run.responses):
        asked, calls = calls[: len(response.tool_calls)], calls[len(response.tool_calls) :]
        request = asked[0].request if asked else number + 1
        if response.text and not (number == last and response.text == run.output):
            found.append({"kind": "message", "request": request, "text": cut(response.text)})
        found += [_tool_step(call) for call in asked]
    return found + [_tool_step(call) for call in calls]


def trajectory_property(trajectory: Any, test: str | None) -> tuple[str, str]:
    """The application's model traffic in one test (a ``TrafficTrajectory``) as a run row
    (``source: traffic``): tools called, requests, tokens, latency, steps, last answer, and
    as its events the tools the provider ran itself."""
    requests = trajectory.requests
    latencies = [r.latency_s for r in requests]
    known = None not in latencies and bool(latencies)
    replayed = known and all(r.replayed for r in requests)
    time = round(sum(latencies), 3) if known else None
    data = {
        "test": test,
        "source": "traffic",
        "question": None,
        "answer": cut(requests[-1].answer.text) if requests else None,
        "models": sorted({r.model for r in requests if r.model}),
        "tools": trajectory.tools_called,
        "tool_errors": sum(not call.ok for call in trajectory.tool_calls),
        "requests": len(requests),
        "stop_reason": None,
        "tokens": sum(r.answer.usage.total_tokens for r in requests),
        "cost": None,
        "time": None if replayed else time,
        "recorded_time": time if replayed else None,
        "events": dict(Counter(event.kind for event in trajectory.events)),
        "steps": _traffic_steps(trajectory),
    }
    return RUN_PROPERTY, json.dumps(data, sort_keys=True)


def _traffic_steps(trajectory: Any) -> list[dict[str, Any]]:
    """Each request's answer text (``message``; not the last one's, the answer), then the
    tool calls it asked for, with the results sent back (and the MCP calls the application
    made on its own after it; those before any request first)."""
    found = [_tool_step(call) for call in trajectory.tool_calls if call.request == 0]
    last = len(trajectory.requests) - 1
    for number, request in enumerate(trajectory.requests):
        text = request.answer.text
        if text and number != last:
            found.append({"kind": "message", "request": request.number, "text": cut(text)})
        found += [_tool_step(c) for c in trajectory.tool_calls if c.request == request.number]
    return found


def _tool_step(call: Any) -> dict[str, Any]:
    return {
        "kind": "tool",
        "request": call.request,
        "tool": call.name,
        "arguments": clip(call.raw_arguments, STEP_WIDTH),
        "result": None if call.result is None else clip(call.result, STEP_WIDTH),
        "error": call.error,
        "server": getattr(call, "server", None),
    }


def runs_table(records: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            r["test"],
            r.get(OUTCOME, ""),
            clip(", ".join(r["tools"]) or "-", REASON_WIDTH),
            r["tool_errors"],
            r["requests"],
            r["stop_reason"] or r.get("source") or "-",
            ", ".join(f"{kind} x{n}" for kind, n in (r.get("events") or {}).items()) or "-",
            r["tokens"],
            money(r["cost"]),
            timing(r["time"], r.get("recorded_time")),
        ]
        for r in records
    ]
    headers = ["test", "outcome", "tools", "errors", "requests", "stop", "events", "tokens"]
    return tabulate(rows, headers=[*headers, "cost", "time"])


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


def app_calls_table(records: Rows) -> str:
    """Per test: the application's model calls, their models, tokens and latency."""
    rows = []
    for r in records:
        calls = r["calls"]
        latencies = [c["latency_s"] for c in calls if c.get("latency_s") is not None]
        recorded = any(c.get("latency_recorded") for c in calls)
        rows.append(
            [
                r["test"],
                r.get(OUTCOME, ""),
                r["total"],
                clip(", ".join(sorted({c["model"] or "?" for c in calls})), REASON_WIDTH),
                sum(c["tokens"] for c in calls),
                ("recorded " if recorded else "") + seconds(sum(latencies)) if latencies else "",
            ]
        )
    headers = ["test", "outcome", "calls", "models", "tokens", "latency"]
    return tabulate(rows, headers=headers)


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
    Section("app_calls", spend.CALLS_PROPERTY, "application model calls", app_calls_table),
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
    Section("changes", changes.CHANGE_PROPERTY, "changes", changes.changes_table, always=True),
    # Shown when a replay left recordings unused or ran something live (the table is "").
    Section("replay", replayed.REPLAY_PROPERTY, "replay", replayed.replay_table, always=True),
    # Shown whenever --harness-models ran a matrix: its cells exist only then.
    Section("matrix", matrix.MATRIX_PROPERTY, "model matrix", matrix.matrix_table, always=True),
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
        self.data["datasets"] = []  # set at the end by the dataset gates, if any
        self.tests: list[dict[str, Any]] = []  # each test with records: its outcome
        self._outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        self._outcomes[report.nodeid] = outcome(report, self._outcomes.get(report.nodeid))
        if report.when == "teardown" and report.user_properties:
            found = self._outcomes.pop(report.nodeid)
            for section in SECTIONS:
                records = records_in(report.user_properties, section.property)
                self.data[section.key] += [{**r, OUTCOME: found} for r in records]
            self.tests.append({"test": report.nodeid, "outcome": found})
        elif report.when == "teardown":
            self._outcomes.pop(report.nodeid, None)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for section in SECTIONS:
            rows = self.data[section.key]
            table = section.table(rows) if rows and (self.tables or section.always) else ""
            if table:
                terminalreporter.write_sep("=", f"pytest-harness {section.title}")
                terminalreporter.write_line(table)
        if self.path is not None and any(self.data.values()):
            terminalreporter.write_line(f"harness report written to {self.path}")

    def pytest_sessionfinish(self) -> None:
        if self.path is not None:
            write(self.path, {**self.data, "tests": self.tests})


def outcome(report: Any, before: str | None) -> str:
    """A test's outcome once pytest reported one of its phases: ``passed``, ``failed``,
    ``skipped``, ``xfailed``, ``xpassed`` or ``error`` (set-up or teardown failed);
    ``before``: its outcome after the phases reported so far."""
    if hasattr(report, "wasxfail"):  # an expected failure: failed as expected, or passed
        return "xfailed" if report.skipped else "xpassed"
    if report.when == "call":
        return str(report.outcome)
    if report.failed and before not in ("failed", "error"):
        return "error"
    if report.skipped:
        return "skipped"
    return before or "passed"


def write(path: Path, data: Mapping[str, Rows]) -> None:
    """Write the session's records to ``path``: HTML for ``.html``, else JSON (``tests``:
    each test with records and its outcome)."""
    write_contents(path, contents(data))


def contents(data: Mapping[str, Rows]) -> dict[str, Any]:
    """The report's dict: every section's records, ``tests``, and the judges' agreement
    computed from the tribunal records (``python -m pytest_harness merge`` writes one too)."""
    full: dict[str, Any] = {s.key: list(data.get(s.key, ())) for s in SECTIONS}
    full["tests"] = list(data.get("tests", ()))
    full["datasets"] = list(data.get("datasets", ()))  # the dataset gates (datasets._gate)
    full["agreement"] = report.agreement(full["tribunals"])
    full["matrix"] = matrix.pivot(full["matrix"])  # rows of tests, a column per model
    full["changes"] = changes.ordered(changes.by_cassette(full["changes"]))
    return full


def write_contents(path: Path, full: Mapping[str, Any]) -> None:
    """Write a report's dict (``contents``) as it is: HTML for ``.html``, else JSON."""
    if path.suffix.lower() in (".html", ".htm"):
        from pytest_harness._report.html import write_html

        write_html(path, full)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(full, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)
