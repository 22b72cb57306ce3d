"""Replaying a calibration of 200 labelled items x 3 judges from its cassette.

A temporary project holds three judges (``Agent`` classes on a scripted loopback model), a
tribunal of them, a labelled set of 200 items (JSONL) and two tests: one calls
``harness.calibrate(Panel, "labels.jsonl")``, the other the same with the ``padding`` probe
(each judge asked again, alone, on every item: 1,200 calls in all). Both are recorded once
with ``--harness-live``, then replayed offline. Each round runs one test in a fresh
``pytest`` process; the figures are the test's own duration (set-up, call, teardown; the
first model call imports litellm, about 1.5 s of it) and the whole process's wall time,
median over the rounds.

Run::

    python benchmarks/calibration.py [--rounds 5]

Target: the plain calibration replays in under 10 s. The script always exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

from pytest_harness.testing import LoopbackServer, Reply

CONFTEST = """
from pytest_harness import Agent, Tribunal

class Strict(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = {{"type": "object", "properties": {{"pass": {{"type": "boolean"}}}}}}
    structured = True
    instructions = "Strict"

class Kind(Strict):
    instructions = "Kind"

class Fair(Strict):
    instructions = "Fair"

class Panel(Tribunal):
    agents = [Strict, Kind, Fair]
    strategy = "majority"
"""
TESTS = """
def test_plain(harness):
    from conftest import Panel
    assert harness.calibrate(Panel, "labels.jsonl").items == 200

def test_padding(harness):
    from conftest import Panel
    assert harness.calibrate(Panel, "labels.jsonl", probes=["padding"]).items == 200
"""
REPORT = """
import json

def pytest_runtest_logreport(report):
    with open("durations.jsonl", "a") as stream:
        stream.write(json.dumps([report.nodeid, report.when, report.duration]) + "\\n")
"""


def judge(body: dict[str, Any]) -> Reply:
    name, text = body["messages"][0]["content"], body["messages"][-1]["content"]
    number = int(text.split()[1])
    verdict = {"Strict": number % 3 == 0, "Kind": True, "Fair": number % 2 == 0}[name]
    return Reply(content=json.dumps({"pass": verdict}))


def record(root: Path) -> None:
    rows = [{"input": f"reply {n} to the customer", "label": n % 2 == 0} for n in range(200)]
    (root / "labels.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    (root / "test_calibration.py").write_text(TESTS)
    (root / "durations_plugin.py").write_text(REPORT)
    (root / "pytest.ini").write_text("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    with LoopbackServer(handler=judge) as server:
        (root / "conftest.py").write_text(CONFTEST.format(url=server.url))
        subprocess.run(pytest_command("--harness-live"), cwd=root, check=True, capture_output=True)


def pytest_command(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        *args,
    ]


def replay(root: Path, test: str) -> tuple[float, float]:
    """One fresh process replaying ``test``: (the test's seconds, the process's seconds)."""
    (root / "durations.jsonl").unlink(missing_ok=True)
    started = time.perf_counter()
    command = pytest_command("-p", "durations_plugin", f"test_calibration.py::{test}")
    subprocess.run(command, cwd=root, check=True, capture_output=True, env=_env(root))
    wall = time.perf_counter() - started
    lines = (root / "durations.jsonl").read_text().splitlines()
    return sum(json.loads(line)[2] for line in lines), wall


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    rows, runs = [], []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        record(root)
        for test, calls in (("test_plain", 600), ("test_padding", 1200)):
            measured = [replay(root, test) for _ in range(args.rounds)]
            own = statistics.median(m[0] for m in measured)
            wall = statistics.median(m[1] for m in measured)
            verdict = ("OK" if own < 10 else "OVER") if test == "test_plain" else ""
            rows.append([test, calls, f"{own:.2f}", f"{wall:.2f}", verdict])
            runs.append(f"{test}: " + ", ".join(f"{m[0]:.2f}" for m in measured))
    print(f"Replaying a calibration of 200 items x 3 judges, {args.rounds} rounds (median s)")
    headers = ["test", "model calls", "test's duration", "process wall", "target < 10 s"]
    print(tabulate(rows, headers=headers))
    print("rounds (test's duration, s):", "; ".join(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
