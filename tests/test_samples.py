"""Sampled tests: ``@pytest.mark.harness(samples=N, pass_rate=p)`` in real pytest runs.

Bodies that fail on chosen samples give pass rates known in advance; a scripted judge on
loopback whose answer depends on how many requests it has seen gives a cassette of N
identical requests with different answers, which must replay in order.
"""

from __future__ import annotations

import itertools
import json
import threading
from typing import Any

import pytest

from pytest_harness._statistics import required, wilson
from pytest_harness.testing import LoopbackServer, Reply


@pytest.mark.parametrize(
    ("passes", "count", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),  # never empty at 0 passes
        (10, 10, 0.7225, 1.0),
        (7, 10, 0.3968, 0.8922),
        (18, 20, 0.6990, 0.9721),
    ],
)
def test_wilson_interval_matches_published_values(
    passes: int, count: int, low: float, high: float
) -> None:
    assert wilson(passes, count) == pytest.approx((low, high), abs=5e-5)


def test_required_passes_at_the_boundary() -> None:
    assert required(0.8, 10) == 8  # 8/10 is exactly 0.8: enough
    assert required(0.7, 10) == 7  # 0.7 * 10 is 7.000000000000001 in floating point
    assert required(1.0, 20) == 20
    assert required(0.05, 20) == 1


BODIES = """
import pytest

@pytest.mark.harness(samples=10, pass_rate=0.8)
def test_exactly_at_rate(harness):
    assert harness.sample not in (3, 7)

@pytest.mark.harness(samples=10, pass_rate=0.8)
def test_below_rate(harness):
    assert harness.sample not in (2, 5, 9), f"sample {harness.sample} was rude"

@pytest.mark.harness(samples=5)
def test_all_pass(harness):
    assert harness.sample in range(1, 6)

@pytest.mark.harness(samples=4, pass_rate=0.25)
def test_none_pass(harness):
    raise ValueError(f"no answer in sample {harness.sample}")
"""


def outcomes(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_pass_rate_decides_and_lines_show_passes_and_interval(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sampled=BODIES)
    result = outcomes(pytester, "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "test_exactly_at_rate PASSED (8/10 passed (80%, 95% CI 49%-94.3%), needs 8)" in out, out
    assert "test_all_pass PASSED (5/5 passed (100%, 95% CI 56.6%-100%), needs 5)" in out
    assert "test_below_rate FAILED (7/10 passed (70%, 95% CI 39.7%-89.2%), needs 8)" in out
    assert "test_none_pass FAILED (0/4 passed (0%, 95% CI 0%-49%), needs 1)" in out


def test_failure_shows_first_sample_in_full_and_the_others_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_sampled=BODIES)
    result = outcomes(pytester, "-k", "below_rate")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    first = text.index("sample 2 failed:")
    assert "pytest-harness: 7/10 passed (70%, 95% CI 39.7%-89.2%), needs 8 of 10 " in text
    assert "Failed samples: 2, 5, 9." in text
    # The first failure as pytest reports it: the source line and the assertion's message.
    assert "assert harness.sample not in (2, 5, 9)" in text[first:]
    assert "AssertionError: sample 2 was rude" in text[first:]
    assert "sample 5: AssertionError: sample 5 was rude" in text
    assert "sample 9: AssertionError: sample 9 was rude" in text
    report = text[: text.index("short test summary info")]  # CI=true repeats the message
    assert report.count("assert harness.sample not in") == 1  # the others: one line each


def test_report_json_and_junit_hold_each_sampled_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sampled=BODIES)
    outcomes(pytester, "--harness-report=r.json", "--junitxml=j.xml", "-n", "2")
    rows = {
        r["test"].split("::")[1]: r
        for r in json.loads((pytester.path / "r.json").read_text())["samples"]
    }
    assert set(rows) == {
        "test_exactly_at_rate",
        "test_below_rate",
        "test_all_pass",
        "test_none_pass",
    }
    below = rows["test_below_rate"]
    assert (below["passes"], below["ran"], below["required"], below["outcome"]) == (
        7,
        10,
        0.8,
        "fail",
    )
    assert below["interval"] == pytest.approx([0.3968, 0.8922], abs=1e-4)
    assert [f["sample"] for f in below["failures"]] == [2, 5, 9]
    assert below["failures"][0]["reason"].startswith("AssertionError: sample 2 was rude")
    assert rows["test_exactly_at_rate"]["outcome"] == "pass"
    assert rows["test_none_pass"]["failures"][3] == {
        "sample": 4,
        "reason": "ValueError: no answer in sample 4",
    }
    junit = (pytester.path / "j.xml").read_text()
    assert 'name="harness_pass_rate" value="8/10 passed (80%, 95% CI 49%-94.3%), needs 8"' in junit


def test_session_table_lists_sampled_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sampled=BODIES)
    text = outcomes(pytester, "-v").stdout.str()
    table = text[text.index("pytest-harness sampled tests") :]
    header = table.splitlines()[1]
    assert header.split() == [
        "test",
        "passed",
        "rate",
        "CI",
        "needs",
        "pass^k",
        "outcome",
        "first",
        "failure",
    ]
    assert any(
        "test_below_rate" in line and "7/10" in line and "#2: AssertionError" in line
        for line in table.splitlines()
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("samples=0", "@pytest.mark.harness(samples=...) expects a whole number from 1 to 10000"),
        ("samples='3'", "@pytest.mark.harness(samples=...) expects a whole number from 1 to 10000"),
        ("samples=3, pass_rate=1.5", "@pytest.mark.harness(pass_rate=...) expects the share"),
        ("samples=3, pass_rate=0", "@pytest.mark.harness(pass_rate=...) expects the share"),
        ("pass_rate=0.9", "@pytest.mark.harness(pass_rate=0.9) needs samples=N"),
    ],
)
def test_wrong_sampling_arguments_are_named(
    pytester: pytest.Pytester, arguments: str, message: str
) -> None:
    pytester.makepyfile(
        f"import pytest\n\n@pytest.mark.harness({arguments})\ndef test_x():\n    pass\n"
    )
    result = outcomes(pytester)
    result.assert_outcomes(errors=1)
    assert message in result.stdout.str()


JUDGED = """
import pytest
from pytest_harness import Agent, Tribunal

class Judge(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = {{
        "type": "object", "properties": {{"pass": {{"type": "boolean"}}}}, "required": ["pass"]
    }}
    instructions = "Judge the reply."

class Panel(Tribunal):
    agents = [Judge]

@pytest.mark.harness(samples=6, pass_rate=0.5)
def test_judged(harness):
    harness.assert_verdict(Panel, "Thanks, it ships today.")
"""


class CountingJudge:
    """Answers the same request differently each time: fails the 2nd and the 5th."""

    def __init__(self) -> None:
        self.seen = itertools.count(1)
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            number = next(self.seen)
        return Reply(content=json.dumps({"pass": number not in (2, 5)}))


def test_identical_requests_record_once_per_sample_and_replay_in_order(
    pytester: pytest.Pytester,
) -> None:
    judge = CountingJudge()
    with LoopbackServer(handler=judge) as server:
        pytester.makepyfile(test_judged=JUDGED.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        recorded = outcomes(pytester, "--harness-live", "--harness-report=live.json")
        recorded.assert_outcomes(passed=1)
    cassette = json.loads((pytester.path / "cassettes/test_judged/test_judged.yaml").read_text())
    bodies = {json.dumps(i["request"]["body"]) for i in cassette["interactions"]}
    assert len(cassette["interactions"]) == 6
    assert len(bodies) == 1
    # The server is gone: replay answers from the cassette, in recorded order.
    replayed = outcomes(pytester, "--harness-report=replay.json")
    replayed.assert_outcomes(passed=1)
    for name in ("live.json", "replay.json"):
        data = json.loads((pytester.path / name).read_text())
        (row,) = data["samples"]
        assert (row["passes"], [f["sample"] for f in row["failures"]]) == (4, [2, 5])
        verdicts = [(r["sample"], r["outcome"]) for r in data["tribunals"]]
        assert verdicts == [
            (1, "pass"),
            (2, "fail"),
            (3, "pass"),
            (4, "pass"),
            (5, "fail"),
            (6, "pass"),
        ]


def test_a_cassette_miss_stops_sampling(pytester: pytest.Pytester) -> None:
    with LoopbackServer(handler=CountingJudge()) as server:
        pytester.makepyfile(test_judged=JUDGED.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        result = outcomes(pytester)  # replay, and nothing was recorded
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "CassetteMiss" in text
    assert "--harness-live" in text
    assert "sample 2" not in text  # stopped at the first sample, not counted as 6 failures


APPLICATION = """
import litellm
import pytest

@pytest.mark.harness(samples=3, pass_rate=0.6)
def test_application_reply(harness):
    reply = litellm.completion(
        model="openai/loopback", api_base="{url}", api_key="loopback-not-a-secret",
        messages=[{{"role": "user", "content": "Where is my order?"}}],
    )
    assert reply is not None  # the application got a reply; the harness checks it
"""


def test_a_bad_response_the_application_received_fails_only_its_sample(
    pytester: pytest.Pytester,
) -> None:
    answers = iter([Reply(content="On its way."), Reply(content=""), Reply(content="Today.")])
    with LoopbackServer(handler=lambda body: next(answers)) as server:
        pytester.makepyfile(test_app=APPLICATION.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        result = outcomes(pytester, "--harness-live", "-v", "--harness-report=r.json")
    result.assert_outcomes(passed=1)  # 2 of 3 reach 0.6; the empty reply is not a test failure
    (row,) = json.loads((pytester.path / "r.json").read_text())["samples"]
    assert row["passes"] == 2
    (failure,) = row["failures"]
    assert failure["sample"] == 2
    assert failure["reason"].startswith(
        "InvalidResponse: model 'loopback' returned an empty response"
    )


class ScriptedJudge:
    """Fails the samples whose request number is in ``failing`` (one request per sample)."""

    def __init__(self, failing: set[int]) -> None:
        self.failing = failing
        self.seen = itertools.count(1)

    def __call__(self, body: dict[str, Any]) -> Reply:
        return Reply(content=json.dumps({"pass": next(self.seen) not in self.failing}))


@pytest.mark.parametrize(
    ("failing", "pass_rate", "line"),
    [
        ({2, 5}, 4 / 6, "PASSED (4/6 passed (66.7%, 95% CI 30%-90.3%), needs 4)"),  # at p
        ({2, 5}, 0.7, "FAILED (4/6 passed (66.7%, 95% CI 30%-90.3%), needs 5)"),
        (set(), 1.0, "PASSED (6/6 passed (100%, 95% CI 61%-100%), needs 6)"),
        (set(range(1, 7)), 0.1, "FAILED (0/6 passed (0%, 95% CI 0%-39%), needs 1)"),
    ],
)
def test_verdicts_of_a_scripted_judge_decide_the_rate(
    pytester: pytest.Pytester, failing: set[int], pass_rate: float, line: str
) -> None:
    suite = JUDGED.replace("pass_rate=0.5", f"pass_rate={pass_rate!r}")
    suite = suite.replace(
        "def test_judged", "@pytest.mark.harness(cassette=False)\ndef test_judged"
    )
    with LoopbackServer(handler=ScriptedJudge(failing)) as server:
        pytester.makepyfile(test_judged=suite.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        result = outcomes(pytester, "-v")
    assert f"test_judged.py::test_judged {line}" in result.stdout.str()


STOPPED = (
    JUDGED
    + """
@pytest.mark.harness(samples=4)
def test_partly(harness):
    if harness.sample == 3:
        harness.assert_verdict(Panel, "Thanks, it ships today.")
"""
)


def test_a_stopped_test_says_how_many_samples_completed_and_why(
    pytester: pytest.Pytester,
) -> None:
    """A cassette miss at the first sample, and at the third: no rate of samples that never
    ran, but how many completed and what stopped them."""
    pytester.makepyfile(test_judged=STOPPED.format(url="http://127.0.0.1:9"))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    result = outcomes(pytester, "-v", "-p", "no:randomly", "--harness-report=report.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "test_judged.py::test_judged FAILED (no sample of 6 completed: CassetteMiss: "
            "no recording in *test_judged.yaml matches this request)*",
            "test_judged.py::test_partly FAILED (2 of 4 samples completed (2 passed), then "
            "sample 3 stopped: CassetteMiss: no recording in *test_partly.yaml matches this "
            "request)*",
        ]
    )
    assert "0/0 passed" not in result.stdout.str()
    rows = {
        r["test"]: r for r in json.loads((pytester.path / "report.json").read_text())["samples"]
    }
    unrun, partly = rows["test_judged.py::test_judged"], rows["test_judged.py::test_partly"]
    assert (unrun["ran"], unrun["interval"], unrun["stopped"]["sample"]) == (0, None, 1)
    assert (partly["ran"], partly["passes"], partly["stopped"]["sample"]) == (2, 2, 3)
    assert partly["stopped"]["reason"].startswith("CassetteMiss: no recording in ")
