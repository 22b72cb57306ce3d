"""Start-up cost of the pytest-harness plugin.

Measures how much the plugin adds to ``python -m pytest --collect-only -q`` on a suite of 200
trivial tests (20 files x 10 tests) in a temporary directory with an empty ``pytest.ini``.
Each round runs pytest once with the plugin (auto-loaded through its ``pytest11`` entry
point) and once with ``-p no:harness``, alternating which goes first; the figure is the median
over rounds of the paired difference, after warm-up rounds. Two conditions:

- bytecode caching on: the inherited environment minus any ``PYTHONDONTWRITEBYTECODE``, with
  ``PYTHONPYCACHEPREFIX`` set to a folder in the temporary directory, so caches are written
  and reused without leaving ``__pycache__`` folders in the source tree;
- ``PYTHONDONTWRITEBYTECODE=1`` (and no prefix): no ``.pyc`` is written, so neither pytest's
  assertion-rewrite cache nor the bytecode of modules without a cached ``.pyc`` helps.

Run::

    python benchmarks/startup.py [--rounds 7]

Targets: added time <= 10 ms with caching on, <= 20 ms with ``PYTHONDONTWRITEBYTECODE=1``.
The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

FILES = 20
TESTS_PER_FILE = 10
WARMUP_ROUNDS = 2
COMMAND = [sys.executable, "-m", "pytest", "--collect-only", "-q"]
CONDITIONS = [
    # (name, bytecode caching, target for the added time in ms)
    ("bytecode caching on", True, 10.0),
    ("PYTHONDONTWRITEBYTECODE=1", False, 20.0),
]


def write_suite(root: Path) -> None:
    """Write the trivial suite and an empty pytest config into ``root``."""
    (root / "pytest.ini").write_text("[pytest]\n")
    for index in range(FILES):
        body = "".join(f"def test_{n}():\n    assert 1\n\n\n" for n in range(TESTS_PER_FILE))
        (root / f"test_{index:02d}.py").write_text(body.rstrip() + "\n")


def run_once(root: Path, env: dict[str, str], plugin: bool) -> float:
    """Run pytest once and return its wall time in ms; raise with the output on failure."""
    command = COMMAND if plugin else [*COMMAND, "-p", "no:harness"]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    elapsed = (time.perf_counter() - start) * 1000
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {result.returncode}\n"
            f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
        )
    return elapsed


def run_round(root: Path, env: dict[str, str], plugin_first: bool) -> tuple[float, float]:
    """Run both sides once, in the given order; return (with, without) in ms."""
    order = (True, False) if plugin_first else (False, True)
    times = {plugin: run_once(root, env, plugin) for plugin in order}
    return times[True], times[False]


def environment(root: Path, caching: bool) -> dict[str, str]:
    """The inherited environment for one condition, with ``PYTHONHASHSEED=0``."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if caching:
        env["PYTHONPYCACHEPREFIX"] = str(root.parent / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def measure(env: dict[str, str], root: Path, rounds: int) -> tuple[float, float, float]:
    """Return the medians of (with, without, with - without) over paired rounds, in ms."""
    for index in range(WARMUP_ROUNDS):
        run_round(root, env, plugin_first=index % 2 == 0)
    pairs = [run_round(root, env, plugin_first=index % 2 == 0) for index in range(rounds)]
    with_plugin = statistics.median(w for w, _ in pairs)
    without = statistics.median(wo for _, wo in pairs)
    added = statistics.median(w - wo for w, wo in pairs)
    return with_plugin, without, added


def report_row(name: str, figures: tuple[float, float, float], target: float) -> list[object]:
    verdict = "OK" if figures[2] <= target else "OVER"
    return [name, *figures, f"<= {target:.0f}", verdict]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="measured rounds per condition")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="harness-startup-") as tmp:
        root = Path(tmp) / "suite"
        root.mkdir()
        write_suite(root)
        for name, caching, target in CONDITIONS:
            env = environment(root, caching)
            figures = measure(env, root, args.rounds)
            rows.append(report_row(name, figures, target))
    headers = ["condition", "with (ms)", "without (ms)", "added (ms)", "target (ms)", "verdict"]
    print(f"pytest --collect-only on {FILES * TESTS_PER_FILE} tests, {args.rounds} paired rounds")
    print(tabulate(rows, headers=headers, floatfmt=".1f"))
    over = [row[0] for row in rows if row[-1] == "OVER"]
    print("OVER target: " + ", ".join(over) if over else "All conditions within target.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
