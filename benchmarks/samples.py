"""Replaying a sampled test (``samples=20``) against twenty single tests replaying one call each.

A temporary project holds two test files over the same judge (an ``Agent`` on a scripted
loopback model): ``test_sampled.py`` has one test marked ``samples=20`` whose body makes one
judge call, so its cassette holds twenty identical requests; ``test_single.py`` has the same
body parametrized twenty times, one cassette each. Both are recorded once with
``--harness-live``, then replayed offline. In each round a fresh process warms pytest up and
runs both files in-process (alternating which goes first); the figure is the sum of the
tests' set-up, call and teardown durations, median over the rounds, and their ratio.

Run::

    python benchmarks/samples.py [--rounds 11]

Target: the sampled test costs at most 1.1x the twenty single tests. The script always
exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tabulate import tabulate

from pytest_harness.testing import LoopbackServer, Reply

JUDGE = """
from pytest_harness import Agent

class Judge(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = {{"type": "object", "properties": {{"pass": {{"type": "boolean"}}}}}}
    instructions = "Judge the reply."
"""
SAMPLED = """
import pytest
from conftest import Judge

@pytest.mark.harness(samples=20)
def test_reply(harness):
    assert harness.ask(Judge, "Thanks, it ships today.").processed["pass"]
"""
SINGLE = """
import pytest
from conftest import Judge

@pytest.mark.parametrize("n", range(20))
def test_reply(harness, n):
    assert harness.ask(Judge, "Thanks, it ships today.").processed["pass"]
"""
ROUND = """
import contextlib, io
import pytest

class Durations:
    def __init__(self):
        self.total = 0.0
    def pytest_runtest_logreport(self, report):
        self.total += report.duration

def replay(name):
    durations = Durations()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", name],
                           plugins=[durations])
    if code != 0:
        raise SystemExit(out.getvalue())
    return durations.total * 1000

replay("test_single.py")  # warm up: imports, litellm, the cassettes' first reads
order = ["test_sampled.py", "test_single.py"] if {flip} else ["test_single.py", "test_sampled.py"]
times = {{name: replay(name) for name in order}}
print(times["test_sampled.py"], times["test_single.py"])
"""


def record(root: Path) -> None:
    """Write the project and record both files against a scripted loopback judge."""

    def judge(body: dict[str, Any]) -> Reply:
        return Reply(content=json.dumps({"pass": True}))

    with LoopbackServer(handler=judge) as server:
        (root / "pytest.ini").write_text("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        (root / "conftest.py").write_text(JUDGE.format(url=server.url))
        (root / "test_sampled.py").write_text(SAMPLED)
        (root / "test_single.py").write_text(SINGLE)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--harness-live"]
        subprocess.run(command, cwd=root, capture_output=True, check=True)
    sampled = json.loads((root / "cassettes/test_sampled/test_reply.yaml").read_text())
    if len(sampled["interactions"]) != 20:
        raise SystemExit("the sampled test's cassette should hold 20 recordings")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        record(root)
        rounds = []
        for number in range(args.rounds):
            code = ROUND.format(flip=number % 2 == 0)
            out = subprocess.run(
                [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
            ).stdout.split()
            rounds.append((float(out[0]), float(out[1])))
    sampled = statistics.median(s for s, _ in rounds)
    single = statistics.median(one for _, one in rounds)
    ratio = statistics.median(s / one for s, one in rounds)
    print(f"Replaying 20 samples vs 20 single tests, {args.rounds} rounds (median ms)")
    verdict = "OK" if ratio <= 1.1 else "OVER"
    print(
        tabulate(
            [[f"{sampled:.1f}", f"{single:.1f}", f"{ratio:.2f}", verdict]],
            headers=["samples=20", "20 single tests (floor)", "ratio", "target <= 1.1"],
        )
    )
    print("rounds (ratio):", ", ".join(f"{s / one:.2f}" for s, one in rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
