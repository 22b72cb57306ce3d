"""Collecting a test parametrized by 50 recorded scenarios, against a literal list.

A temporary project holds a shared-state team (its conftest) and two test files of one test
each: one ``@pytest.mark.scenarios(Team, input=...)`` whose cassette holds 50 recorded
scenarios, and one ``@pytest.mark.parametrize("scenario", [...the same 50...])``. In each
round a fresh process warms pytest up, then runs ``pytest --collect-only`` in-process on
each file (alternating which goes first); the figure is the difference, median over the
rounds. Both collect the same 50 ids. The cassette is written as a recording run writes it
(its metadata holds the scenarios; replay reads them without running the team).

Run::

    python benchmarks/scenarios.py [--rounds 21]

Target: at most 200 ms more than the literal list. The script always exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

SCENARIOS = [f"Customer message number {n}: my parcel is late" for n in range(50)]
CONFTEST = """
from pytest_harness import Agent
from pytest_harness.team import SharedState

class Writer(Agent):
    model = "openai/gpt-4o-mini"

class Messages(SharedState):
    members = (Writer,)
    max_cycles = 2
"""
MARKED = """
import pytest
from conftest import Messages

@pytest.mark.scenarios(Messages, input="late parcels")
def test_reply(scenario):
    pass
"""
LITERAL = """
import pytest

@pytest.mark.parametrize("scenario", {scenarios!r})
def test_reply(scenario):
    pass
"""
ROUND = """
import contextlib, io, sys, time
import pytest

def collect(name):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        started = time.perf_counter()
        args = ["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
        code = pytest.main([*args, name])
        elapsed = (time.perf_counter() - started) * 1000
    if code != 0 or out.getvalue().count("::test_reply[") != 50:
        raise SystemExit(out.getvalue())
    return elapsed

collect("test_literal.py")  # warm pytest up
order = ["test_marked.py", "test_literal.py"] if {flip} else ["test_literal.py", "test_marked.py"]
times = {{name: collect(name) for name in order}}
print(times["test_marked.py"], times["test_literal.py"])
"""


def project(root: Path) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_marked.py").write_text(MARKED)
    (root / "test_literal.py").write_text(LITERAL.format(scenarios=SCENARIOS))
    sys.path.insert(0, str(root))
    from conftest import Messages  # type: ignore[import-not-found]

    from pytest_harness._scenarios import Request

    path = Request(Messages, "late parcels", None).path(root / "cassettes")
    path.parent.mkdir(parents=True)
    metadata = {"run": "benchmark", "scenarios": SCENARIOS, "team": "Messages"}
    path.write_text(json.dumps({"version": 1, "metadata": metadata, "interactions": []}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        project(root)
        rounds = []
        for number in range(args.rounds):
            code = ROUND.format(flip=number % 2 == 0)
            out = subprocess.run(
                [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
            ).stdout.split()
            rounds.append((float(out[0]), float(out[1])))
    marked = statistics.median(m for m, _ in rounds)
    literal = statistics.median(lit for _, lit in rounds)
    added = statistics.median(m - lit for m, lit in rounds)
    print(f"Collecting one test with 50 scenarios, {args.rounds} rounds (median ms)")
    verdict = "OK" if added <= 200 else "OVER"
    print(
        tabulate(
            [[f"{marked:.1f}", f"{literal:.1f}", f"{added:.1f}", verdict]],
            headers=["scenarios marker", "literal list (floor)", "added", "target <= 200 ms"],
        )
    )
    print("rounds (ms), added:", ", ".join(f"{m - lit:.1f}" for m, lit in rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
