"""Verdict drift: re-recording with changed scripted votes reports exactly the flipped verdicts.

The judges are scripted on loopback from a table of votes per (judge, reply); the test
changes the table between a first recording and a re-recording, as a model upgrade would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_harness import _drift as drift
from pytest_harness.errors import CassetteError
from pytest_harness.testing import LoopbackServer, Reply

SUITE = """
import pytest
from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule

class Kind(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = {{
        "type": "object", "properties": {{"pass": {{"type": "boolean"}}}}, "required": ["pass"]
    }}
    instructions = "You are Kind."

class Harsh(Kind):
    instructions = "You are Harsh."

class Fair(Kind):
    instructions = "You are Fair."

class Panel(Tribunal):
    agents = [Kind, Harsh, Fair]

    @rule("majority")
    def passed(result):
        return result.processed["pass"]

def test_a(harness):
    harness.assert_verdict(Panel, "reply a")

def test_b(harness):
    harness.get_verdict(Panel, "reply b")  # shown, not asserted: a failing verdict is recorded

def test_c(harness):
    harness.assert_verdict(Panel, "reply c")
"""

FIRST = {
    ("Kind", "reply a"): True, ("Harsh", "reply a"): False, ("Fair", "reply a"): True,
    ("Kind", "reply b"): False, ("Harsh", "reply b"): False, ("Fair", "reply b"): True,
    ("Kind", "reply c"): True, ("Harsh", "reply c"): True, ("Fair", "reply c"): True,
}  # fmt: skip


class Votes:
    """The scripted judges: each answers its vote for the reply, from ``table``."""

    def __init__(self, table: dict[tuple[str, str], bool]) -> None:
        self.table = dict(table)

    def __call__(self, body: dict[str, Any]) -> Reply:
        judge = body["messages"][0]["content"].split("You are ")[1].split(".")[0]
        reply = body["messages"][-1]["content"]
        return Reply(content=json.dumps({"pass": self.table[(judge, reply)]}))


def record(pytester: pytest.Pytester, votes: Votes, *args: str) -> pytest.RunResult:
    with LoopbackServer(handler=votes) as server:
        pytester.makepyfile(test_judged=SUITE.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-live", *args)


def test_re_recording_reports_exactly_the_flipped_verdicts(pytester: pytest.Pytester) -> None:
    votes = Votes(FIRST)
    record(pytester, votes).assert_outcomes(passed=3)
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider")  # replay: no drift shown
    first.assert_outcomes(passed=3)
    assert "verdict drift" not in first.stdout.str()

    votes.table[("Fair", "reply a")] = False  # a: pass -> fail (the test now fails)
    votes.table[("Kind", "reply b")] = True  # b: fail -> pass
    votes.table[("Harsh", "reply c")] = False  # c: a vote changed, the verdict held
    result = record(pytester, votes, "--harness-report=r.json")
    result.assert_outcomes(passed=2, failed=1)

    rows = json.loads((pytester.path / "r.json").read_text())["drift"]
    rows.sort(key=lambda row: row["test"])  # in the order the tests ran (pytest-randomly)
    assert [(r["test"], r["key"], r["old"], r["new"], r["judges"]) for r in rows] == [
        ("test_judged.py::test_a", "Panel#1", "pass", "fail", [_vote("Fair", True, False)]),
        ("test_judged.py::test_b", "Panel#1", "fail", "pass", [_vote("Kind", False, True)]),
    ]
    text = result.stdout.str()
    table = text[text.index("pytest-harness verdict drift") : text.index("pytest-harness changes")]
    assert "test_judged.py::test_a  Panel#1     pass -> fail  Fair: pass -> fail" in table
    assert "test_judged.py::test_b  Panel#1     fail -> pass  Kind: fail -> pass" in table
    assert "test_c" not in table


def _vote(judge: str, old: bool, new: bool) -> dict[str, Any]:
    return {"judge": judge, "old": old, "new": new}


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["in-process", "xdist"])
def test_drift_is_shown_without_verbose_and_only_while_recording(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    votes = Votes(FIRST)
    record(pytester, votes).assert_outcomes(passed=3)
    votes.table[("Kind", "reply b")] = True
    result = record(pytester, votes, *workers)  # neither -v nor --harness-report
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    assert "test_judged.py::test_b  Panel#1     fail -> pass  Kind: fail -> pass" in text
    assert "pytest-harness tribunals" not in text  # the other tables still need -v


def test_the_cassette_keeps_each_tests_verdicts(pytester: pytest.Pytester) -> None:
    record(pytester, Votes(FIRST)).assert_outcomes(passed=3)
    cassette = json.loads((pytester.path / "cassettes/test_judged/test_b.yaml").read_text())
    (kept,) = cassette["metadata"]["verdicts"].values()
    # No run id in the file (runlog.RunLog keeps it): the same verdicts re-recorded change nothing.
    assert "run" not in kept
    assert "run" not in cassette["metadata"]
    assert kept["runs"] == [
        {
            "key": "Panel#1",
            "sample": None,
            "outcome": "fail",
            "votes": {"Kind": False, "Harsh": False, "Fair": True},
        }
    ]


# Comparisons on plain data: what the previous file holds decides -------------------------

NEW = {
    "run": "r2",
    "runs": [{"key": "Q#1", "sample": None, "outcome": "fail", "votes": {"J": False}}],
}


def header(verdicts: dict[str, Any], run: str = "r1") -> dict[str, Any]:
    return {"version": 1, "metadata": {"run": run, "verdicts": verdicts}}


def test_a_cassette_of_another_test_is_named() -> None:
    old = header({"t.py::test_other": {"run": "r1", "runs": []}})
    with pytest.raises(CassetteError) as caught:
        drift.compare(old, NEW, test="t.py::test_me", path=Path("c/t.yaml"), shared=False)
    message = str(caught.value)
    assert "c/t.yaml" in message
    assert "t.py::test_other" in message
    assert "Once this test's new recording is saved" in message
    # a named cassette is shared: other tests' verdicts there are no mistake
    assert drift.compare(old, NEW, test="t.py::test_me", path=Path("c/t.yaml"), shared=True) == []


@pytest.mark.parametrize(
    "previous",
    [
        {"version": 1, "metadata": None},  # a vcrpy cassette: no pytest-harness metadata
        {"version": 2, "metadata": {"run": "r1"}},
        {"version": None, "metadata": {"run": "r1"}},
    ],
)
def test_a_cassette_of_another_format_is_named(previous: dict[str, Any]) -> None:
    with pytest.raises(CassetteError, match=r"the previous c/t\.yaml is not a pytest-harness"):
        drift.compare(previous, NEW, test="t.py::t", path=Path("c/t.yaml"), shared=False)


def test_nothing_to_compare_is_no_drift() -> None:
    same = {"runs": [{**NEW["runs"][0], "outcome": "fail"}], "run": "r1"}
    assert drift.compare({}, NEW, test="t", path=Path("x"), shared=False) == []  # no file
    assert drift.compare(header({}), NEW, test="t", path=Path("x"), shared=False) == []  # older
    assert drift.compare(header({"t": same}), NEW, test="t", path=Path("x"), shared=False) == []
    # written by this very recording run (the test ran twice): not a drift
    flipped = {"run": "r2", "runs": [{**NEW["runs"][0], "outcome": "pass"}]}
    assert drift.compare(header({"t": flipped}), NEW, test="t", path=Path("x"), shared=False) == []


def test_runs_match_by_tribunal_and_occurrence() -> None:
    yes, no = {"agent": "J", "passed": True}, {"agent": "J", "passed": False}
    records = [
        {"tribunal": "Q", "outcome": "pass", "sample": 1, "votes": [yes]},
        {"tribunal": "Q", "outcome": "fail", "sample": 2, "votes": [no, yes]},
        {"tribunal": "R", "outcome": "pass", "sample": 2, "votes": []},
    ]
    kept = drift.entries(records, "r1")
    assert [(run["key"], run["sample"]) for run in kept["runs"]] == [
        ("Q#1", 1),
        ("Q#2", 2),
        ("R#1", 2),
    ]
    assert kept["runs"][1]["votes"] == {"J": False, "J#2": True}


# Scores: a judge's score moving toward or across its threshold ---------------------------

SCORED_SUITE = """
from pytest_harness import Tribunal
from pytest_harness.judges import Rubric

class Clarity(Rubric):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    criteria = "the reply is easy to follow"
    steps = ["Read the reply.", "Score how easy it is to follow."]
    threshold = 3

class Clear(Tribunal):
    agents = [Clarity]

def test_a(harness):
    harness.get_verdict(Clear, "reply a")

def test_b(harness):
    harness.get_verdict(Clear, "reply b")

def test_c(harness):
    harness.get_verdict(Clear, "reply c")
"""


class Scores:
    """The scripted rubric: the score of each reply, from ``table``."""

    def __init__(self, table: dict[str, int]) -> None:
        self.table = dict(table)

    def __call__(self, body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        reply = next(reply for reply in self.table if f"Response:\n\n{reply}" in prompt)
        return Reply(content=json.dumps({"reason": "scripted", "score": self.table[reply]}))


def record_scored(pytester: pytest.Pytester, scores: Scores, *args: str) -> pytest.RunResult:
    with LoopbackServer(handler=scores) as server:
        pytester.makepyfile(test_scored=SCORED_SUITE.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-live", *args)


def test_scores_that_moved_toward_or_across_the_threshold_are_reported(
    pytester: pytest.Pytester,
) -> None:
    scores = Scores({"reply a": 5, "reply b": 4, "reply c": 4})
    record_scored(pytester, scores).assert_outcomes(passed=3)
    cassette = json.loads((pytester.path / "cassettes/test_scored/test_a.yaml").read_text())
    (kept,) = cassette["metadata"]["verdicts"].values()
    assert kept["runs"][0]["scores"] == {"Clarity": {"score": 5.0, "threshold": 3.0}}

    scores.table.update({"reply a": 4, "reply b": 2, "reply c": 5})  # toward, across, away
    result = record_scored(pytester, scores, "--harness-report=r.json")
    result.assert_outcomes(passed=3)
    rows = sorted(json.loads((pytester.path / "r.json").read_text())["drift"], key=_by_test)
    assert [(r["test"], r["drift"], r["old"], r["new"]) for r in rows] == [
        ("test_scored.py::test_a", "score", "pass", "pass"),
        ("test_scored.py::test_b", "flip", "pass", "fail"),
    ]
    assert [j["moved"] for r in rows for j in r["judges"]] == ["toward", "across"]
    assert rows[1]["judges"] == [
        {
            "judge": "Clarity",
            "old": True,
            "new": False,
            "old_score": 4.0,
            "new_score": 2.0,
            "old_threshold": 3.0,
            "new_threshold": 3.0,
            "moved": "across",
        }
    ]
    text = result.stdout.str()
    table = text[text.index("pytest-harness verdict drift") : text.index("pytest-harness changes")]
    toward = "Clarity: 5 -> 4, moved toward the threshold 3"
    assert f"test_scored.py::test_a  Clear#1     pass -> pass  {toward}" in table
    assert "pass -> fail  Clarity: pass -> fail (4 -> 2, across the threshold 3)" in table
    assert "test_c" not in table


def _by_test(row: dict[str, Any]) -> str:
    return str(row["test"])


def scored(outcome: str, **judges: tuple[bool, float, float]) -> dict[str, Any]:
    """A kept run whose judges have (passed, score, threshold)."""
    return {
        "key": "Q#1",
        "sample": None,
        "outcome": outcome,
        "votes": {judge: passed for judge, (passed, _, _) in judges.items()},
        "scores": {j: {"score": s, "threshold": t} for j, (_, s, t) in judges.items()},
    }


def compare_runs(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    previous = header({"t": {"runs": [old]}})
    return drift.compare(previous, {"runs": [new]}, test="t", path=Path("x"), shared=False)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ((5.0, 3.0), (4.0, 3.0), "toward"),  # half of the distance: reported
        ((4.0, 3.0), (3.0, 3.0), "toward"),  # on the threshold, still passing
        ((1.0, 0.5), (0.8, 0.5), None),  # 0.5 -> 0.3 of distance: less than half
        ((0.1, 0.5), (0.4, 0.5), "toward"),  # from below, still failing
        ((4.0, 3.0), (5.0, 3.0), None),  # away from it
        ((3.0, 3.0), (2.0, 3.0), "across"),
        ((0.4, 0.5), (0.5, 0.5), "across"),
        ((0.8, 0.5), (0.8, 0.9), "across"),  # the threshold moved over the score
        ((4.0, None), (3.0, 3.0), None),  # no threshold to move toward
    ],
)
def test_how_a_score_moved(
    old: tuple[float, float | None], new: tuple[float, float | None], expected: str | None
) -> None:
    before = {"score": old[0], "threshold": old[1]}
    after = {"score": new[0], "threshold": new[1]}
    assert drift.moved(before, after) == expected
    assert drift.moved(None, after) is None


def test_a_held_verdict_is_a_row_only_when_a_score_moved() -> None:
    # a panel of two: Lax crossed its threshold, the verdict (at_least 1) held: a score row
    old = scored("pass", Lax=(True, 0.9, 0.5), Firm=(True, 0.95, 0.9))
    new = scored("pass", Lax=(False, 0.4, 0.5), Firm=(True, 0.95, 0.9))
    (row,) = compare_runs(old, new)
    assert (row["drift"], row["old"], row["new"]) == ("score", "pass", "pass")
    assert [(j["judge"], j["moved"]) for j in row["judges"]] == [("Lax", "across")]
    # a score that moved a little, and the same verdict: nothing to say
    little = scored("pass", Lax=(True, 0.85, 0.5), Firm=(True, 0.95, 0.9))
    assert compare_runs(old, little) == []


def test_a_flipped_verdict_lists_changed_votes_with_their_scores() -> None:
    old = scored("pass", Lax=(True, 0.9, 0.5), Firm=(True, 0.95, 0.9))
    new = scored("fail", Lax=(True, 0.9, 0.5), Firm=(False, 0.5, 0.9))
    (row,) = compare_runs(old, new)
    assert row["drift"] == "flip"
    assert [(j["judge"], j["old_score"], j["new_score"]) for j in row["judges"]] == [
        ("Firm", 0.95, 0.5)
    ]
    assert "Firm: pass -> fail (0.95 -> 0.5, across the threshold 0.9)" in drift.drift_table([row])


def test_verdicts_without_scores_keep_their_shape_and_rows() -> None:
    yes = {"agent": "J", "passed": True, "score": None, "threshold": None}
    (run,) = drift.entries([{"tribunal": "Q", "outcome": "pass", "votes": [yes]}])["runs"]
    assert "scores" not in run
    no = {**run, "outcome": "fail", "votes": {"J": False}}
    (row,) = compare_runs(run, no)
    assert row["judges"] == [{"judge": "J", "old": True, "new": False}]
    assert "J: pass -> fail" in drift.drift_table([row])
