"""Tribunals inside pytest runs: the assertion message, the session report, JUnit, xdist, replay.

The judged suites run in-process (litellm imported beforehand, as in test_cassettes) except
under xdist. Their judges talk to a loopback server whose judges are scripted: a "lenient"
judge passes anything polite, a "strict" judge fails everything, a "broken" one answers prose.
"""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_harness._report.tribunals import record
from pytest_harness.testing import LoopbackServer, Reply
from pytest_harness.tribunal import Verdict, Vote

CONFTEST = """
import pytest
from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule

SCHEMA = {{
    "type": "object",
    "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
    "required": ["pass", "reason"],
}}


class Lenient(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = SCHEMA
    instructions = "You are a lenient judge of support replies."


class Strict(Lenient):
    instructions = "You are a strict judge of support replies."


class Broken(Lenient):
    instructions = "You are a broken judge of support replies."


class Quality(Tribunal):
    agents = [Lenient, Strict, Lenient]

    @rule("majority", may_fail=1)
    def passed(result):
        return result.processed["pass"]


class Shaky(Tribunal):
    agents = [Lenient, Broken, Broken]
    may_fail = 1
"""


def judge(body: dict[str, Any]) -> Reply:
    system = body["messages"][0]["content"]
    reply = body["messages"][-1]["content"]
    if "broken" in system:
        return Reply(content="I would rather not say.")
    polite = "rude" not in reply
    passed = polite and "strict" not in system
    reason = "polite and helpful" if passed else "too curt for a customer"
    return Reply(content=json.dumps({"pass": passed, "reason": reason}))


@pytest.fixture
def judges() -> Any:
    with LoopbackServer(handler=judge) as server:
        yield server


@pytest.fixture
def suite(pytester: pytest.Pytester, judges: LoopbackServer) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.format(url=judges.url))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    if "-n" in args:
        return suite.runpytest_subprocess("-p", "no:cacheprovider", *args)
    return suite.runpytest("-p", "no:cacheprovider", *args)


TESTS = """
import pytest
from conftest import Quality, Shaky
from pytest_harness import assert_verdict

pytestmark = pytest.mark.harness(cassette=False)

def test_polite(harness):
    verdict = harness.assert_verdict(Quality, "Thanks for waiting, it ships today.")
    assert verdict.tally == "2/3"
    assert [t.name for t in harness.tribunals] == ["Quality"]

def test_rude(harness):
    harness.assert_verdict(Quality, "Go away, rude customer.")

def test_plain_function():
    assert_verdict(Quality, "Thanks, happy to help.")

def test_too_many_broken(harness):
    harness.assert_verdict(Shaky, "Thanks, happy to help.")
"""


def test_failing_verdict_shows_every_vote_and_reason(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_reply=TESTS)
    result = run(suite)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: Quality verdict: FAIL, 0/3 votes passed, value False",
            "*rule: majority: more than half of the votes must pass; may_fail=1",
            "*input: 'Go away, rude customer.'",
            "*judge*model*vote*reason*time*tokens",
            "*Lenient*openai/loopback*FAIL*too curt for a customer*",
            "*Strict*openai/loopback*FAIL*too curt for a customer*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*Shaky: no verdict, Shaky: 2 of 3 judges failed (may_fail=1):",
            "*judge errors:",
            "*Broken: JudgeOutputError: the reply has no JSON object in it: 'I would rather*",
        ]
    )


def test_summary_table_with_verbose_only(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_reply=TESTS)
    quiet = run(suite)
    assert "pytest-harness tribunals" not in quiet.stdout.str()
    verbose = run(suite, "-v")
    verbose.stdout.fnmatch_lines(
        [
            "*= pytest-harness tribunals =*",
            "test*tribunal*verdict*votes*errors*tokens*cost*time",
            "-*",
        ]
    )
    # One row per test, in the order the tests ran (any order), then the agreement table.
    for row in (
        "test_reply.py::test_polite*Quality*pass*2/3*0*",
        "test_reply.py::test_rude*Quality*fail*0/3*0*",
        "test_reply.py::test_plain_function*Quality*pass*2/3*0*",
        "test_reply.py::test_too_many_broken*Shaky*error*0/0*2*",
    ):
        verbose.stdout.fnmatch_lines(["*= pytest-harness tribunals =*", row])
    verbose.stdout.fnmatch_lines(
        [
            "*= pytest-harness tribunals =*",
            "tribunal*runs (2+ votes)*agreement*Krippendorff's alpha",
            "-*",
            "Quality*3*55.6%*0.200",  # worked out in test_report_json_and_junit_properties
            "Shaky*0*n/a*n/a",  # its one run had a single vote: nothing to pair
        ]
    )


def test_report_json_and_junit_properties(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_reply=TESTS)
    run(suite, "--harness-report=out/report.json", "--junitxml=out/junit.xml")
    data = json.loads((suite.path / "out" / "report.json").read_text())
    runs = {r["test"].split("::")[1]: r for r in data["tribunals"]}
    assert set(runs) == {"test_polite", "test_rude", "test_plain_function", "test_too_many_broken"}
    polite = runs["test_polite"]
    assert (polite["outcome"], polite["votes_passed"], polite["votes_cast"]) == ("pass", 2, 3)
    assert [v["agent"] for v in polite["votes"]] == ["Lenient", "Strict", "Lenient"]
    assert polite["votes"][1]["reason"] == "too curt for a customer"
    assert polite["tokens"] > 0
    assert runs["test_too_many_broken"]["outcome"] == "error"
    assert [e["agent"] for e in runs["test_too_many_broken"]["errors"]] == ["Broken", "Broken"]
    (quality,) = [row for row in data["agreement"] if row["tribunal"] == "Quality"]
    # Three runs of three votes: pass/fail/pass twice and fail/fail/fail once.
    assert quality["runs"] == 3
    assert quality["percent_agreement"] == pytest.approx(100 * (1 / 3 + 1 / 3 + 1) / 3)
    # Krippendorff's alpha: each pass/fail/pass run adds o_PF = o_FP = 2 * 1 / (3 - 1) = 1,
    # so sum_{c != k} o_ck = 4; n_pass = 4, n_fail = 5, n = 9.
    # alpha = 1 - (9 - 1) * 4 / (2 * 4 * 5) = 1 - 32 / 40 = 0.2.
    assert quality["krippendorff_alpha"] == pytest.approx(0.2)
    assert "fleiss_kappa" not in quality

    tree = ET.parse(suite.path / "out" / "junit.xml")
    props = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in tree.iter("testcase")
    }
    assert props["test_rude"]["harness_verdict"] == "Quality: fail"
    assert props["test_rude"]["harness_votes"] == "0/3"
    assert props["test_rude"]["harness_cost"] == ""  # the loopback model has no price
    assert json.loads(props["test_polite"]["harness_tribunal"])["votes_passed"] == 2


def test_xdist_report_covers_every_worker(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_reply=TESTS)
    result = run(suite, "-n", "2", "-v", "--harness-report=report.json")
    result.assert_outcomes(passed=2, failed=2)
    data = json.loads((suite.path / "report.json").read_text())
    assert len(data["tribunals"]) == 4
    text = result.stdout.str()
    for name in ("test_polite", "test_rude", "test_plain_function", "test_too_many_broken"):
        assert f"test_reply.py::{name} " in text


def test_recorded_tribunal_replays_offline(suite: pytest.Pytester, judges: LoopbackServer) -> None:
    suite.makepyfile(
        test_replay="""
        from conftest import Quality

        def test_quality(harness):
            verdict = harness.assert_verdict(Quality, "Thanks for waiting, it ships today.")
            assert verdict.tally == "2/3"
            assert verdict.reasons["Strict"] == "too curt for a customer"
        """
    )
    run(suite, "--harness-live").assert_outcomes(passed=1)
    recorded = len(judges.requests)
    assert recorded == 3
    cassette = json.loads(
        (suite.path / "cassettes" / "test_replay" / "test_quality.yaml").read_text()
    )
    assert len(cassette["interactions"]) == 3
    run(suite).assert_outcomes(passed=1)
    assert len(judges.requests) == recorded  # replayed: no new request reached the server


def test_changed_judge_instructions_miss_the_cassette(
    suite: pytest.Pytester, judges: LoopbackServer
) -> None:
    body = """
        from conftest import Lenient, Tribunal

        class Judge(Lenient):
            instructions = "You are a lenient judge of support replies."

        class One(Tribunal):
            agents = [Judge]

        def test_one(harness):
            harness.assert_verdict(One, "Thanks!")
        """
    suite.makepyfile(test_miss=body)
    run(suite, "--harness-live").assert_outcomes(passed=1)
    # The replays run in fresh processes: nothing of the recording run's modules is reused.
    replay = ("-p", "no:cacheprovider")
    suite.runpytest_subprocess(*replay).assert_outcomes(passed=1)  # unchanged: replayed
    suite.makepyfile(test_miss=body.replace("lenient judge", "lenient judge of tone"))
    result = suite.runpytest_subprocess(*replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*CassetteMiss*",
            '*-*"content": "You are a lenient judge of support replies.*',
            '*+*"content": "You are a lenient judge of tone of support replies.*',
            "*--harness-record=new*",
        ]
    )


def test_bad_strategy_fails_collection_with_the_valid_ones(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_bad="""
        from pytest_harness import Tribunal

        class Bad(Tribunal):
            strategy = "most"

        def test_x():
            pass
        """
    )
    result = run(suite)
    result.stdout.fnmatch_lines(
        ["*unknown verdict strategy 'most'. Valid strategies: unanimous, majority, at_least*"]
    )
    assert result.ret != 0


def test_json_report_written_even_without_tribunals(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_x():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider", "--harness-report=r.json").assert_outcomes(
        passed=1
    )
    assert json.loads(Path(pytester.path / "r.json").read_text()) == {
        "agreement": [],
        "app_calls": [],
        "calibrations": [],
        "changes": [],
        "datasets": [],
        "drift": [],
        "matrix": {},
        "replay": [],
        "runs": [],
        "samples": [],
        "tests": [],
        "transcripts": [],
        "tribunals": [],
        "usage": [],
    }


def test_plugins_hear_of_each_tribunal(suite: pytest.Pytester) -> None:
    suite.makeconftest(
        (suite.path / "conftest.py").read_text() + "\nimport json\nSEEN = []\n\n"
        "def pytest_harness_tribunal(item, tribunal, record):\n"
        "    SEEN.append((item.name, tribunal.name, record['outcome']))\n\n"
        "def pytest_sessionfinish(session):\n"
        "    open('seen.json', 'w').write(json.dumps(SEEN))\n"
    )
    suite.makepyfile(test_reply=TESTS)
    run(suite).assert_outcomes(passed=2, failed=2)
    seen = json.loads((suite.path / "seen.json").read_text())
    assert sorted(map(tuple, seen)) == [
        ("test_plain_function", "Quality", "pass"),
        ("test_polite", "Quality", "pass"),
        ("test_rude", "Quality", "fail"),
        ("test_too_many_broken", "Shaky", "error"),
    ]


def test_report_option_does_not_swallow_a_test_path(pytester: pytest.Pytester) -> None:
    pytester.mkdir("sub")
    (pytester.path / "sub" / "test_a.py").write_text("def test_a():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-report", "sub")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-report got 'sub', which looks like a test path*"])


def test_a_records_votes_hold_every_field_and_plain_votes() -> None:
    """Each vote of a record holds every field of the Vote; a vote JSON cannot hold is its repr."""

    class Odd:
        def __repr__(self) -> str:
            return "<odd>"

    def vote(agent: str, value: Any) -> Vote:
        return Vote(
            agent=agent,
            model="m",
            vote=value,
            passed=True,
            reason="fine",
            time=0.5,
            tokens=3,
            cost=0.25,
            score=4.0,
            threshold=3.0,
        )

    votes = (vote("Scored", {"score": 4, "label": ["good"]}), vote("Odd", Odd()))
    verdict = Verdict(tribunal="Tribunal", value=Odd(), passed=True, rule="r", votes=votes)
    ran = SimpleNamespace(  # what record() reads of a Tribunal that ran
        name="Tribunal", verdict=verdict, results=[], errors=[], agents=[], execution_time=0.5
    )
    data = record(ran, None, "test_x")
    assert data["votes"] == [
        dataclasses.asdict(votes[0]),
        {**dataclasses.asdict(votes[1]), "vote": "<odd>"},
    ]
    assert data["value"] == "<odd>"
    assert json.loads(json.dumps(data)) == data
