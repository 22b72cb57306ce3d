"""A request the Retry middleware retried while recording replays (replay never retries)."""

from __future__ import annotations

import json

import pytest

from pytest_harness.testing import LoopbackServer, Reply

SUITE = """
import os
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._middleware import defaults

def test_agent():
    params = {"api_base": os.environ["URL"], "api_key": "loopback-not-a-secret"}
    run = Orchestrator("openai/loopback", [], params=params).run("hi")
    assert run.output == "recovered"
    print("EVENTS", [e.kind for e in run.events])
"""


def test_a_retried_request_records_its_answer_not_its_fault(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LoopbackServer() as server:
        server.queue(Reply(status=429, headers={"Retry-After": "0"}), Reply(content="recovered"))
        monkeypatch.setenv("URL", server.url)
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        pytester.makepyfile(test_agent=SUITE)
        recorded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "--harness-live")
        recorded.assert_outcomes(passed=1)
        assert "EVENTS ['retry']" in recorded.stdout.str()
        assert len(server.requests) == 2
    cassette = pytester.path / "cassettes/test_agent/test_agent.yaml"
    codes = [
        i["response"]["status"]["code"] for i in json.loads(cassette.read_text())["interactions"]
    ]
    assert codes == [200]  # the 429 was a fault on the way, not the answer
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")  # server gone
    replayed.assert_outcomes(passed=1)
    assert "EVENTS []" in replayed.stdout.str()  # replay plays the answer, no retry
