"""Calibration as a pytest test: the fixture's methods, the report's table and JSON, bad labels.

The judges are scripted on loopback: ``Right`` passes exactly the good replies, ``Yes``
passes everything; the labelled set (next to the test module) has 6 good and 4 bad replies.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_harness.testing import LoopbackServer, Reply

CONFTEST = """
from pytest_harness import Agent, Tribunal

class Right(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = {{"type": "object", "properties": {{"pass": {{"type": "boolean"}}}}}}
    structured = True
    instructions = "Right"

class Yes(Right):
    instructions = "Yes"

class Careful(Tribunal):
    agents = [Right, Right]

class YesMan(Tribunal):
    agents = [Yes]
"""

TESTS = """
import pytest
from conftest import Careful, YesMan

pytestmark = pytest.mark.harness(cassette=False)

def test_careful(harness):
    calibration = harness.assert_calibrated(Careful, "labels/replies.jsonl", min_kappa=0.9)
    assert harness.calibrations == [calibration]

def test_yes_man(harness):
    harness.assert_calibrated(YesMan, "labels/replies.jsonl", min_accuracy=0.8)

def test_broken_labels(harness):
    harness.calibrate(Careful, "labels/broken.jsonl")
"""

GOOD = [f"good {n}" for n in range(1, 7)]
BAD = [f"bad {n}" for n in range(7, 11)]


def judges(body: dict[str, Any]) -> Reply:
    judge, reply = body["messages"][0]["content"], body["messages"][-1]["content"]
    verdict = True if judge.startswith("Yes") else reply.startswith("good")
    return Reply(content=json.dumps({"pass": verdict}))


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Any:
    labels = pytester.path / "labels"
    labels.mkdir()
    rows = [{"id": text, "input": text, "label": text in GOOD} for text in GOOD + BAD]
    (labels / "replies.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    broken = ['{"input": "good 1", "label": "pass"}', '{"input": "bad 7", "label": "maybe"}']
    (labels / "broken.jsonl").write_text("\n".join(broken) + "\n")
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    pytester.makepyfile(test_judges=TESTS)
    with LoopbackServer(handler=judges) as server:
        pytester.makeconftest(CONFTEST.format(url=server.url))
        yield pytester


def test_thresholds_pass_and_fail_tests_and_the_report_shows_each(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-v", "--harness-report=r.json")
    result.assert_outcomes(passed=1, failed=2)
    text = result.stdout.str()
    assert "the panel's accuracy 0.600 is below min_accuracy=0.8" in text
    # The broken file: its path and line, and what to write.
    assert "labels/broken.jsonl:2" in text
    assert "'maybe'" in text
    table = text[text.index("pytest-harness judge calibration") :].splitlines()
    assert table[1].split() == [
        "test",
        "tribunal",
        "scored",
        "accuracy",
        "kappa",
        "flagged",
        "outcome",
    ]
    rows = {line.split()[0]: line.split()[1:] for line in table[3:5]}
    assert rows["test_judges.py::test_careful"] == [
        "Careful",
        "10/10",
        "100.0%",
        "1",
        "-",
        "pass",
    ]
    assert rows["test_judges.py::test_yes_man"] == [
        "YesMan",
        "10/10",
        "60.0%",
        "0",
        "-",
        "fail",
    ]
    data = {
        r["test"].split("::")[1]: r
        for r in json.loads((suite.path / "r.json").read_text())["calibrations"]
    }
    assert set(data) == {"test_careful", "test_yes_man"}  # no calibration from broken labels
    yes_man = data["test_yes_man"]
    assert yes_man["panel"]["confusion"] == {
        "pass": {"pass": 6, "fail": 0},
        "fail": {"pass": 4, "fail": 0},
    }
    assert (yes_man["min_accuracy"], yes_man["outcome"]) == (0.8, "fail")
    assert data["test_careful"]["agreement"]["percent_agreement"] == 100.0
    # Two identical judges: 6 items pass/pass, 4 fail/fail, nothing off the diagonal.
    assert data["test_careful"]["agreement"]["krippendorff_alpha"] == 1.0
    tribunals = json.loads((suite.path / "r.json").read_text())["tribunals"]
    assert tribunals == []  # the 30 panels of the calibrations are not reported one by one
