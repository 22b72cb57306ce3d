"""A replay is the recording: calls that failed or timed out while recorded fail so again.

Real pytest runs (``pytester``) against a scripted loopback server: a sampled tribunal test
records while some of its judges' calls time out (the panel's deadline cancels them: no
reply is ever recorded), or fail (a 500 the seam does not retry, a call's own timeout, a
400); the server is then stopped, and the replay must give every sample the outcome it had
when recorded, with the same messages and the same rate.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_harness._cassettes import interactions, read
from pytest_harness.errors import CallAbandoned, CassetteError, ReplayedFailure, describe
from pytest_harness.testing import LoopbackServer, Reply

pytest_plugins = ["pytester"]

PANEL = """
import pytest
from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule

PARAMS = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"{extra}}}
OUTPUT = {{"type": "object", "properties": {{"pass": {{"type": "boolean"}}}}, "required": ["pass"]}}

class Polite(Agent):
    model = "openai/loopback"
    params = PARAMS
    output = OUTPUT
    instructions = "Is the reply polite?"

class OnTopic(Agent):
    model = "openai/loopback"
    params = PARAMS
    output = OUTPUT
    instructions = "Is the reply on topic?"

class Panel(Tribunal):
    agents = {agents}
    timeout = {timeout}

    @rule("unanimous", may_fail=0)
    def passed(result):
        return result.processed["pass"]

@pytest.mark.harness(samples=5, pass_rate=0.2)
def test_panel(harness):
    harness.assert_verdict(Panel, "Thanks, it ships today.")
"""


class Judges:
    """Answers each judge by its instructions: ``OnTopic``'s n-th request gets ``script[n]``
    (a passing vote when it has none), every other request a passing vote."""

    def __init__(self, script: dict[int, Reply]) -> None:
        self.script = script
        self.on_topic = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if "on topic" not in json.dumps(body.get("messages")):
            return Reply(content=json.dumps({"pass": True}))
        with self.lock:
            self.on_topic += 1
            number = self.on_topic
        return self.script.get(number, Reply(content=json.dumps({"pass": True})))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", *args)


def per_sample(pytester: pytest.Pytester, report: str) -> tuple[Any, list[Any]]:
    """A report's sampled row (passes, failures) and each sample's tribunal (outcome,
    errors)."""
    data = json.loads((pytester.path / report).read_text())
    (row,) = data["samples"]
    tribunals = [(t["sample"], t["outcome"], t["errors"]) for t in data["tribunals"]]
    return (row["passes"], row["failures"]), tribunals


def record_then_replay(
    pytester: pytest.Pytester, judges: Judges, *, edited: bool = False, **suite: str
) -> tuple[pytest.RunResult, pytest.RunResult]:
    """Record the suite, then replay it with the server gone (``edited``: from a cassette
    edited by hand, whose checksum no longer holds: the harness's calls then replay by
    their HTTP match, not by their seam keys)."""
    with LoopbackServer(handler=judges) as server:
        pytester.makepyfile(test_panel=PANEL.format(url=server.url, **suite))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        recorded = run(pytester, "--harness-live", "--harness-report=live.json")
    if edited:
        path = pytester.path / "cassettes/test_panel/test_panel.yaml"
        path.write_text(json.dumps(json.loads(path.read_text()), indent=1))
    replayed = run(pytester, "--harness-report=replay.json")
    return recorded, replayed


def cassette(pytester: pytest.Pytester, test: str = "test_panel") -> list[dict[str, Any]]:
    path = pytester.path / f"cassettes/{test}/{test}.yaml"
    interactions: list[dict[str, Any]] = json.loads(path.read_text())["interactions"]
    return interactions


@pytest.mark.parametrize("edited", [False, True], ids=["as-written", "edited-by-hand"])
def test_a_judge_that_timed_out_while_recording_times_out_again_in_its_samples(
    pytester: pytest.Pytester, edited: bool
) -> None:
    late = Reply(content=json.dumps({"pass": True}), delay=4)
    recorded, replayed = record_then_replay(
        pytester,
        Judges({2: late, 4: late}),
        edited=edited,
        extra="",
        agents="[Polite, OnTopic]",
        timeout="1",
    )
    recorded.assert_outcomes(passed=1)
    replayed.assert_outcomes(passed=1)
    live, replay = per_sample(pytester, "live.json"), per_sample(pytester, "replay.json")
    (passes, failures), tribunals = live
    assert passes == 3
    assert [f["sample"] for f in failures] == [2, 4]
    assert [outcome for _, outcome, _ in tribunals] == ["pass", "error", "pass", "error", "pass"]
    (timed_out,) = tribunals[1][2]
    assert timed_out["agent"] == "OnTopic"
    assert timed_out["error"].startswith("AgentTimeout: Agent OnTopic timed out after 1s")
    assert replay == live  # every sample as recorded: outcomes, messages, the rate
    assert "3/5 passed (60%" in replayed.stdout.str()
    failed = [i for i in cassette(pytester) if "failure" in i]
    assert [i["failure"]["kind"] for i in failed] == ["abandoned", "abandoned"]
    assert all("on topic" in json.dumps(i["request"]["body"]) for i in failed)


@pytest.mark.parametrize("edited", [False, True], ids=["as-written", "edited-by-hand"])
def test_calls_that_failed_while_recording_fail_again_in_their_samples(
    pytester: pytest.Pytester, edited: bool
) -> None:
    """A 500 not retried (nothing recorded: a retried call's fault never is), the call's own
    timeout (nothing recorded), a 400 (recorded as the HTTP reply it was)."""
    script = {
        2: Reply(status=500, error="the model is overloaded"),
        3: Reply(content=json.dumps({"pass": True}), delay=4),
        5: Reply(status=400, error="the request is malformed"),
    }
    recorded, replayed = record_then_replay(
        pytester,
        Judges(script),
        edited=edited,
        extra=', "timeout": 1, "num_retries": 0, "max_retries": 0',
        agents="[OnTopic]",
        timeout="30",
    )
    recorded.assert_outcomes(passed=1)
    replayed.assert_outcomes(passed=1)
    live, replay = per_sample(pytester, "live.json"), per_sample(pytester, "replay.json")
    (passes, failures), tribunals = live
    assert (passes, [f["sample"] for f in failures]) == (2, [2, 3, 5])
    errors = [errors[0]["error"] for _, _, errors in tribunals if errors]
    assert errors[0].startswith("InternalServerError: ")
    assert "the model is overloaded" in errors[0]
    assert errors[1].startswith("Timeout: ")
    assert errors[2].startswith("BadRequestError: ")
    assert replay == live
    kinds = [i["failure"]["type"] for i in cassette(pytester) if "failure" in i]
    assert kinds == ["InternalServerError", "Timeout"]  # the 400 is its recorded reply


FAILED_CALL = {
    "request": {"method": "POST", "uri": "http://127.0.0.1:0/v1/chat/completions", "body": ""},
    "failure": {"kind": "abandoned", "after_s": 30.0, "type": "CancelledError", "message": ""},
    "seam": "0" * 64,
}


def test_a_failure_edited_by_hand_still_reads_and_a_wrong_one_is_named(tmp_path: Path) -> None:
    path = tmp_path / "edited.yaml"
    path.write_text(json.dumps({"version": 1, "interactions": [FAILED_CALL]}))
    (stored,) = read.read(path)["interactions"]
    failure = interactions.failure(stored)
    assert failure == interactions.Failure("abandoned", 30.0, "CancelledError", "")
    assert isinstance(failure.error(), CallAbandoned)

    wrong = {**FAILED_CALL, "failure": {"kind": "lost"}}
    path.write_text(json.dumps({"version": 1, "interactions": [wrong]}))
    with pytest.raises(CassetteError, match=r"interaction 1 of 1: failure must be a mapping"):
        read.read(path)


def test_a_replayed_error_reads_as_the_recorded_one() -> None:
    failure = interactions.Failure("error", 1.0, "Timeout", "litellm.Timeout: took too long")
    error = failure.error()
    assert isinstance(error, ReplayedFailure)
    assert describe(error) == "Timeout: litellm.Timeout: took too long"


TEAM = """
import json, pathlib, sys
import pytest
from pytest_harness import Agent
from pytest_harness.team import SharedState

PARAMS = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}

class Fast(Agent):
    model = "openai/loopback"
    params = PARAMS
    instructions = "I am Fast."

class Slow(Fast):
    instructions = "I am Slow."

class Team(SharedState):
    members = [Fast, SharedState.member(Slow, timeout=1)]
    max_cycles = 2

@pytest.mark.harness
def test_team(harness):
    result = Team().invoke("Find edge cases.")
    turns = [(t.member, t.cycle, t.error) for t in result.errors]
    loaded = "litellm" in sys.modules
    pathlib.Path("turns.json").write_text(json.dumps([turns, result.cycles, loaded]))
"""


def test_a_team_member_cut_off_while_recording_is_cut_off_again(
    pytester: pytest.Pytester,
) -> None:
    """Slow's first turn ran past its own timeout while recording: its call was abandoned.
    The replay cuts it off in that turn again, at once (from the cassette: no litellm is
    loaded to send it), and lets its second turn answer."""
    slow = iter([Reply(delay=4), Reply(content="nothing new")])

    def answer(body: dict[str, Any]) -> Reply:
        return next(slow) if "You are Slow" in json.dumps(body["messages"]) else Reply()

    with LoopbackServer(handler=answer) as server:
        pytester.makepyfile(test_team=TEAM.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        run(pytester, "--harness-live").assert_outcomes(passed=1)
    turns, cycles, _ = json.loads((pytester.path / "turns.json").read_text())
    (turn,) = turns
    assert turn[:2] == ["Slow", 1]
    assert "did not finish within its timeout of 1 s" in turn[2]
    (failed,) = [i["failure"] for i in cassette(pytester, "test_team") if "failure" in i]
    assert failed["kind"] == "abandoned"
    run(pytester).assert_outcomes(passed=1)  # the server is gone
    replayed = json.loads((pytester.path / "turns.json").read_text())
    assert replayed == [turns, cycles, False]
