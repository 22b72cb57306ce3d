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

    @Tribunal.verdict("majority")
    def passed(result):
        return result.processed["pass"]

def test_a(harness):
    harness.assert_verdict(Panel, "reply a")

def test_b(harness):
    harness.verdict(Panel, "reply b")  # shown, not asserted: a failing verdict is recorded

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
    table = text[text.index("pytest-harness verdict drift") :]
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
    # No run id in the file (files.RunLog keeps it): the same verdicts re-recorded change nothing.
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
