"""Report rows for agents at work: orchestrator runs and simulated conversations.

Each is a JUnit property of its test (JSON, read back by the session report), a row of a
terminal table at the end of the session, and an entry of the JSON report (``runs``,
``transcripts``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_harness.report.tables import REASON_WIDTH, clip, money, seconds, tabulate

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
