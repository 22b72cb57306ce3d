"""Verdict drift: what a re-recording changed in a test's verdicts and judges' scores."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_harness._cassettes.write import FORMAT_VERSION, THIS_RUN
from pytest_harness._report.text import judge_labels, tabulate
from pytest_harness.errors import CassetteError

DRIFT_PROPERTY = "harness_drift"
METADATA_KEY = "verdicts"
# A score is reported as moving toward its threshold when it covered at least this share of
# the distance it had to it: half. A share, not an amount, so that it means the same for a
# 1-5 rubric and a 0-1 ratio; small moves of a score far from its threshold are noise.
TOWARD = 0.5


def entries(records: Sequence[Mapping[str, Any]], run_id: str | None = None) -> dict[str, Any]:
    """What a cassette keeps of a test's tribunal records: each run's outcome and votes.

    No run id: a cassette re-recorded with the same verdicts must not change (which run
    wrote an entry is kept outside the file, ``runlog.RunLog``). ``run_id`` is accepted and
    ignored, for callers written before.
    """
    seen: Counter[str] = Counter()
    runs = []
    for record in records:
        seen[record["tribunal"]] += 1
        run = {
            "key": f"{record['tribunal']}#{seen[record['tribunal']]}",
            "sample": record.get("sample"),
            "outcome": record["outcome"],
            "votes": judge_votes(record["votes"]),
        }
        scores = judge_scores(record["votes"])
        if scores:
            run["scores"] = scores
        runs.append(run)
    return {"runs": runs}


def judge_votes(votes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{judge: passed}`` in panel order; a repeated judge name gets ``#2``, ``#3``."""
    labels = judge_labels(vote["agent"] for vote in votes)
    return {label: vote["passed"] for label, vote in zip(labels, votes, strict=True)}


def judge_scores(votes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{judge: {"score": s, "threshold": t}}`` for the judges that gave a numeric score."""
    labels = judge_labels(vote["agent"] for vote in votes)
    return {
        label: {"score": vote["score"], "threshold": vote.get("threshold")}
        for label, vote in zip(labels, votes, strict=True)
        if vote.get("score") is not None
    }


def moved(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str | None:
    """How a judge's score moved against its threshold: ``"across"``, ``"toward"`` or None.

    Each score is read against its own recording's threshold; a score without one, or a
    judge scored in one recording only, has not moved.
    """
    if not old or not new or old.get("threshold") is None or new.get("threshold") is None:
        return None
    before = old["score"] - old["threshold"]
    after = new["score"] - new["threshold"]
    if (before >= 0) != (after >= 0):
        return "across"
    if abs(after) < abs(before) and abs(before) - abs(after) >= TOWARD * abs(before):
        return "toward"
    return None


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
            recording, and under ``write.THIS_RUN`` the tests whose entries this recording
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
    return flips(old.get("runs") or [], new.get("runs") or [], test=test, path=path)


def flips(
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    *,
    test: str,
    path: Path | str,
) -> list[dict[str, Any]]:
    """The tribunal runs of ``new`` whose verdict flipped, or whose judges' scores moved,
    against the run of the same key in ``old`` (``entries``' runs)."""
    before = {run["key"]: run for run in old}
    rows = []
    for run in new:
        earlier = before.get(run["key"])
        if earlier is None:
            continue
        changed = _changed_judges(earlier, run)
        flipped = earlier["outcome"] != run["outcome"]
        if not flipped and not any(judge.get("moved") for judge in changed):
            continue
        rows.append(
            {
                "test": test,
                "tribunal": run["key"].rpartition("#")[0],
                "key": run["key"],
                "sample": run.get("sample"),
                "old": earlier["outcome"],
                "new": run["outcome"],
                "drift": "flip" if flipped else "score",
                "judges": changed if flipped else [j for j in changed if j.get("moved")],
                "cassette": str(path),
            }
        )
    return rows


def _changed_judges(earlier: Mapping[str, Any], run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The judges whose vote changed or whose score moved, in panel order, once each."""
    votes = (earlier["votes"], run["votes"])
    scores = (earlier.get("scores") or {}, run.get("scores") or {})
    changed = []
    for judge in dict.fromkeys([*votes[0], *votes[1]]):
        entry: dict[str, Any] = {
            "judge": judge,
            "old": votes[0].get(judge),
            "new": votes[1].get(judge),
        }
        old_score, new_score = scores[0].get(judge), scores[1].get(judge)
        how = moved(old_score, new_score)
        if old_score or new_score:
            entry.update(_score_fields(old_score, new_score, how))
        if entry["old"] != entry["new"] or how:
            changed.append(entry)
    return changed


def _score_fields(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, how: str | None
) -> dict[str, Any]:
    return {
        "old_score": (old or {}).get("score"),
        "new_score": (new or {}).get("score"),
        "old_threshold": (old or {}).get("threshold"),
        "new_threshold": (new or {}).get("threshold"),
        "moved": how,
    }


def junit_properties(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(DRIFT_PROPERTY, json.dumps(row, sort_keys=True)) for row in rows]


def drift_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The drifted verdicts: test, tribunal run, old -> new, the judges that moved."""
    shown = [
        [
            r["test"],
            r["key"] if r.get("sample") is None else f"{r['key']} (sample {r['sample']})",
            f"{r['old']} -> {r['new']}",
            ", ".join(judge_change(j) for j in r["judges"]) or "-",
        ]
        for r in rows
    ]
    headers = ["test", "tribunal", "verdict", "judges whose votes or scores moved"]
    return tabulate(shown, headers=headers)


def judge_change(change: Mapping[str, Any]) -> str:
    """``Fair: pass -> fail``; with scores ``Rubric: 5 -> 4, moved toward the threshold 3``."""
    vote = f"{change['judge']}: {_vote(change['old'])} -> {_vote(change['new'])}"
    scores = score_change(change)
    if scores is None:
        return vote
    if change.get("moved") == "toward":
        return f"{change['judge']}: {scores}"
    return f"{vote} ({scores})"


def score_change(change: Mapping[str, Any]) -> str | None:
    """How a judge's score moved: ``5 -> 4, moved toward the threshold 3``, ``4 -> 2,
    across the threshold 3`` or ``4 -> 5``; None for a vote without scores."""
    if change.get("old_score") is None or change.get("new_score") is None:
        return None
    scores = f"{change['old_score']:g} -> {change['new_score']:g}"
    threshold = change.get("new_threshold")
    where = f" {threshold:g}" if threshold is not None else ""
    if change.get("moved") == "toward":
        return f"{scores}, moved toward the threshold{where}"
    if change.get("moved") == "across":
        return f"{scores}, across the threshold{where}"
    return scores


def _vote(passed: bool | None) -> str:
    return "none" if passed is None else ("pass" if passed else "fail")
