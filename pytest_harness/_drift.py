"""Verdict drift: what a re-recording changed, in verdicts rather than bytes.

When a test records its cassette, the verdicts of the tribunals it ran are kept in the
cassette's metadata (``verdicts``, per test: each run's tribunal, outcome and every judge's
vote). When a later recording run replaces them (``--harness-live``, or
``--harness-record=new`` recording anew), the new verdicts are compared with the previous
recording's: each verdict that flipped is a row of the report (test, tribunal, old -> new,
the judges whose votes changed), in the terminal and the JSON report.

Runs are matched by tribunal and occurrence: the third run of ``Quality`` in a test (in a
sampled test, over all its samples) is ``Quality#3``, in the old recording and the new.

Plain data in and out: the cassette's file is ``cassettes.files``'s business.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_harness._cassettes.files import FORMAT_VERSION, THIS_RUN
from pytest_harness._report.text import judge_labels, tabulate
from pytest_harness.errors import CassetteError

DRIFT_PROPERTY = "harness_drift"
METADATA_KEY = "verdicts"


def entries(records: Sequence[Mapping[str, Any]], run_id: str | None = None) -> dict[str, Any]:
    """What a cassette keeps of a test's tribunal records: each run's outcome and votes.

    No run id: a cassette re-recorded with the same verdicts must not change (which run
    wrote an entry is kept outside the file, ``files.RunLog``). ``run_id`` is accepted and
    ignored, for callers written before.
    """
    seen: Counter[str] = Counter()
    runs = []
    for record in records:
        seen[record["tribunal"]] += 1
        runs.append(
            {
                "key": f"{record['tribunal']}#{seen[record['tribunal']]}",
                "sample": record.get("sample"),
                "outcome": record["outcome"],
                "votes": judge_votes(record["votes"]),
            }
        )
    return {"runs": runs}


def judge_votes(votes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{judge: passed}`` in panel order; a repeated judge name gets ``#2``, ``#3``."""
    labels = judge_labels(vote["agent"] for vote in votes)
    return {label: vote["passed"] for label, vote in zip(labels, votes, strict=True)}


def compare(
    previous: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    test: str,
    path: Path,
    shared: bool,
) -> list[dict[str, Any]]:
    """The verdicts of ``test`` that flipped between ``previous`` and ``new`` recordings.

    Args:
        previous: the cassette file's header (``version``, ``metadata``) before this
            recording, and under ``files.THIS_RUN`` the tests whose entries this recording
            run wrote into it already; empty or None when there was no file.
        new: what this recording keeps (``entries``).
        test: the test's node id.
        path: the cassette, for messages.
        shared: the cassette is named (several tests may record into it).

    Raises:
        CassetteError: the previous file is not a pytest-harness cassette, or belongs to
            another test: there is nothing to compare with.
    """
    if not previous:
        return []
    metadata: Mapping[str, Any] = previous.get("metadata") or {}
    ours = isinstance(previous.get("metadata"), Mapping)  # written by a recording run
    if previous.get("version") != FORMAT_VERSION or not ours:
        raise CassetteError(
            f"verdict drift: the previous {path} is not a pytest-harness cassette (format "
            f"version {previous.get('version')!r}, no recording run in its metadata), so its "
            "verdicts cannot be compared. Once this test's new recording is saved (it is when "
            "the test passes), re-recordings compare against it."
        )
    kept = metadata.get(METADATA_KEY) or {}
    old = kept.get(test)
    if old is None:
        others = sorted(kept)
        if others and not shared:
            raise CassetteError(
                f"verdict drift: the previous {path} holds the verdicts of another test "
                f"({', '.join(others)}), not of {test}: was the file copied or the test "
                "renamed? Nothing was compared. Once this test's new recording is saved (it is "
                "when the test passes), re-recordings compare against it."
            )
        return []
    # Entries of older cassettes name the run that wrote them.
    same_run = old.get("run") is not None and old.get("run") == new.get("run")
    if same_run or test in (previous.get(THIS_RUN) or ()):
        return []  # this recording run wrote it already (the test ran twice)
    return _flips(old.get("runs") or [], new.get("runs") or [], test=test, path=path)


def _flips(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], *, test: str, path: Path
) -> list[dict[str, Any]]:
    before = {run["key"]: run for run in old}
    rows = []
    for run in new:
        earlier = before.get(run["key"])
        if earlier is None or earlier["outcome"] == run["outcome"]:
            continue
        judges = dict.fromkeys([*earlier["votes"], *run["votes"]])  # panel order, once each
        changed = [
            {"judge": judge, "old": earlier["votes"].get(judge), "new": run["votes"].get(judge)}
            for judge in judges
            if earlier["votes"].get(judge) != run["votes"].get(judge)
        ]
        rows.append(
            {
                "test": test,
                "tribunal": run["key"].rpartition("#")[0],
                "key": run["key"],
                "sample": run.get("sample"),
                "old": earlier["outcome"],
                "new": run["outcome"],
                "judges": changed,
                "cassette": str(path),
            }
        )
    return rows


def junit_properties(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(DRIFT_PROPERTY, json.dumps(row, sort_keys=True)) for row in rows]


def drift_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The flipped verdicts: test, tribunal run, old -> new, the judges whose votes changed."""
    shown = [
        [
            r["test"],
            r["key"] if r.get("sample") is None else f"{r['key']} (sample {r['sample']})",
            f"{r['old']} -> {r['new']}",
            ", ".join(f"{j['judge']}: {_vote(j['old'])} -> {_vote(j['new'])}" for j in r["judges"])
            or "-",
        ]
        for r in rows
    ]
    return tabulate(shown, headers=["test", "tribunal", "verdict", "judges whose votes changed"])


def _vote(passed: bool | None) -> str:
    return "none" if passed is None else ("pass" if passed else "fail")
