"""Samples are samples on the embedded model: each its own seed, a temperature above 0.

Real pytest runs (``pytester``) with ``--harness-model=local``, where a ``LoopbackServer``
stands in for llama.cpp (the conftest hands the route a ``LocalServer`` whose process is a
placeholder and whose endpoint is the real endpoint process, in front of the loopback
server): what reaches it shows the temperature and seed of each call, the harness's own
(a judge) and the application's (the OpenAI SDK, through the endpoint). The cassette then
replays sample by sample, and a sampled test whose samples all got one answer says so.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_harness._datasets.sampling import Sampling
from pytest_harness._local import endpoint
from pytest_harness._local.route import REPLAY_BASE, make_route

pytest_plugins = ["pytester"]

CONFTEST = """
import json, subprocess, sys, tempfile
from pathlib import Path

from pytest_harness._local import route, server
from pytest_harness.testing import LoopbackServer, Reply


class StandIn(server.LocalServer):
    # The endpoint process as the plugin starts it, in front of a loopback server that
    # plays llama.cpp; a sleeping process stands for llama.cpp's own.
    def __init__(self, upstream):
        super().__init__(Path("no-model.gguf"))
        self.upstream = upstream

    def start(self, timeout=60.0):
        self._port = self.upstream.port
        self._process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        self._log_dir = Path(tempfile.mkdtemp())
        self._start_endpoint(timeout)
        return self


def answer(body):
    said = json.dumps(body.get("messages"))
    if "Judge the reply" in said:
        return Reply(content=json.dumps({"pass": True}))
    if "vary" in said:
        return Reply(content=f"answer {body.get('seed')}")
    return Reply(content="the same answer")


UPSTREAM = LoopbackServer(handler=answer).start()
route._server = StandIn(UPSTREAM).start()


def pytest_sessionfinish(session):
    Path("upstream.json").write_text(json.dumps(UPSTREAM.requests))
"""

SUITE = """
import openai
import pytest
from pytest_harness import Agent, Tribunal

class Judge(Agent):
    model = "openai/gpt-4o-mini"
    instructions = "Judge the reply."
    output = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}

class Panel(Tribunal):
    agents = [Judge]

def ask(text, **params):
    reply = openai.OpenAI().chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}], **params
    )
    return reply.choices[0].message.content

@pytest.mark.harness(samples=3)
def test_sampled(harness):
    harness.assert_verdict(Panel, "It ships today.")
    ask("Where is my order?")
    ask("Where is my order, chosen?", temperature=0.3, seed=7)

@pytest.mark.harness(samples=3)
def test_varied(harness):
    ask("vary it")

def test_once(harness):
    harness.assert_verdict(Panel, "It ships today.")
    ask("Where is my order?")
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def sent(pytester: pytest.Pytester, text: str) -> list[tuple[Any, Any]]:
    """The (temperature, seed) of each request that reached the stand-in with ``text``."""
    requests = json.loads((pytester.path / "upstream.json").read_text())
    found = [r for r in requests if text in json.dumps(r.get("messages"))]
    return [(r.get("temperature"), r.get("seed")) for r in found]


def test_each_sample_reaches_the_embedded_model_with_its_own_seed_and_replays_so(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_local=SUITE)
    live = run(pytester, "-v", "--harness-live", "--harness-model=local")
    live.assert_outcomes(passed=3)
    sampled = [(0.8, 43), (0.8, 44), (0.8, 45)]
    judged = sent(pytester, "Judge the reply")
    assert judged == [*sampled, (0, 42)]  # the harness's calls: test_sampled's, test_once's
    assert sent(pytester, "Where is my order?") == [*sampled, (0, 42)]  # the application's
    assert sent(pytester, "chosen") == [(0.3, 7)] * 3  # the test's own values win
    assert sent(pytester, "vary it") == sampled
    lines = live.stdout.str()
    assert "test_sampled PASSED (3/3 passed (100%, 95% CI 43.9%-100%), needs 3, all 3 " in lines
    assert "samples answered alike)" in lines
    assert "test_varied PASSED (3/3 passed (100%, 95% CI 43.9%-100%), needs 3)" in lines

    (pytester.path / "upstream.json").unlink()
    replayed = run(pytester, "-v")  # sample by sample, each with the seed it was recorded with
    replayed.assert_outcomes(passed=3)
    assert json.loads((pytester.path / "upstream.json").read_text()) == []  # nothing sent
    assert "needs 3, all 3 samples answered alike)" in replayed.stdout.str()


def test_identical_answers_are_said_in_the_summary_and_the_report() -> None:
    sampling = Sampling(5, 0.8, ran=5, alike=True)
    assert sampling.summary() == (
        "5/5 passed (100%, 95% CI 56.6%-100%), needs 4, all 5 samples answered alike"
    )
    assert sampling.record("t")["alike"] is True
    assert "answered alike" not in Sampling(5, 0.8, ran=5).summary()


def test_samples_are_alike_only_when_each_got_the_same_answers() -> None:
    def sampled(*answers: tuple[str, ...]) -> Sampling:
        sampling, given = Sampling(len(answers), 0.5), iter(answers)
        sampling.run(
            lambda: None,
            starting=lambda number: None,
            problem=lambda: None,
            explain=str,
            answered=lambda: next(given),
        )
        return sampling

    assert sampled(("a", "b"), ("b", "a"), ("a", "b")).alike  # in any order
    assert not sampled(("a",), ("a",), ("b",)).alike
    assert not sampled((), ()).alike  # no answer at all: nothing to compare
    assert not sampled(("a",)).alike  # one sample is no copy of another


def test_a_sample_gets_its_own_seed_and_the_callers_values_win() -> None:
    route = make_route(REPLAY_BASE, sample=3)
    asked = {"model": "local", "messages": [{"role": "user", "content": "hi"}]}
    assert (route(asked)["temperature"], route(asked)["seed"]) == (0.8, 45)
    chosen = route({**asked, "temperature": 0.2, "seed": 1})
    assert (chosen["temperature"], chosen["seed"]) == (0.2, 1)
    unsampled = make_route(REPLAY_BASE)(asked)
    assert (unsampled["temperature"], unsampled["seed"]) == (0, 42)


def test_the_endpoint_gives_the_applications_calls_the_sample_it_was_told() -> None:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    sampled, _ = endpoint.adapt(body, sample=2)
    assert (sampled["temperature"], sampled["seed"]) == (0.8, 44)
    plain, _ = endpoint.adapt(body)
    assert (plain["temperature"], plain["seed"]) == (0, 42)
