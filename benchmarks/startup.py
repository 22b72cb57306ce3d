"""Start-up cost of the pytest-harness plugin: what it adds to ``pytest --collect-only``.

The suite is 200 trivial tests (20 files x 10 tests) with an empty ``pytest.ini``, in a
temporary directory, run with bytecode caching on and off (``PYTHONDONTWRITEBYTECODE=1``).
The plugin loads through its ``pytest11`` entry point, as users get it; every other pytest
plugin is blocked (``-p no:NAME``), so the floor is pytest's own start-up, and "without the
plugin" is ``-p no:harness``. Two figures, each against that floor:

1. Wall time (noisy on a shared machine): in a fresh process per round, ``pytest.main``
   without the plugin, with it, and without it again; the figure is the median over rounds
   of ``with - mean(without)``.
2. Instructions (with valgrind installed): callgrind's count of
   ``python -m pytest --collect-only ...`` with the plugin minus without. It does not move
   with the machine's load; compare two versions back to back.

Run::

    python benchmarks/startup.py [--rounds 31] [--no-instructions]

Target: the plugin adds at most 5 ms (wall-time median) without bytecode caching.
The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path

from tabulate import tabulate

FILES = 20
TESTS_PER_FILE = 10
TARGET_MS = 5.0
OTHERS = [
    arg
    for entry in entry_points(group="pytest11")
    if entry.name != "harness"
    for arg in ("-p", f"no:{entry.name}")
]
ARGS = ["--collect-only", "-q", "-p", "no:cacheprovider", *OTHERS]
WITHOUT = ["-p", "no:harness"]
# One round of the wall-time measurement, in a fresh process (prints: added floor, in ms).
ROUND = """
import contextlib, gc, io, sys, time
import pytest

def run(*extra):
    with contextlib.redirect_stdout(io.StringIO()):
        gc.collect()
        started = time.perf_counter()
        code = pytest.main([*{args}, *extra])
        elapsed = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"pytest exited {{code}}")
    return elapsed * 1000

for _ in range(3):
    run("-p", "no:harness")
before = run("-p", "no:harness")
with_plugin = run()
after = run("-p", "no:harness")
assert "pytest_harness.plugin" in sys.modules
print(with_plugin, (before + after) / 2)
"""


def write_suite(root: Path) -> None:
    """Write the trivial suite and an empty pytest config into ``root``."""
    (root / "pytest.ini").write_text("[pytest]\n")
    for index in range(FILES):
        body = "".join(f"def test_{n}():\n    assert 1\n\n\n" for n in range(TESTS_PER_FILE))
        (root / f"test_{index:02d}.py").write_text(body.rstrip() + "\n")


def environment(tmp: Path, caching: bool) -> dict[str, str]:
    """The inherited environment for one condition, with ``PYTHONHASHSEED=0``."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if caching:
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def python(code: str, root: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"{code}\nexited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result.stdout


def instructions(pytest_args: list[str], root: Path, env: dict[str, str]) -> int:
    """Instructions executed by ``python -m pytest *pytest_args`` under callgrind."""
    valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command = [*valgrind, sys.executable, "-m", "pytest", *pytest_args]
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", result.stderr)
    if result.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return int(found.group(1))


def measure_instructions(root: Path, env: dict[str, str]) -> tuple[int, int]:
    """(floor, added) instructions."""
    floor = instructions([*ARGS, *WITHOUT], root, env)
    with_plugin = instructions(ARGS, root, env)
    return floor, with_plugin - floor


def measure_wall(root: Path, env: dict[str, str], rounds: int) -> list[tuple[float, float]]:
    """(with, without) ms of every round."""
    code = ROUND.format(args=ARGS)
    return [
        (float(with_ms), float(without))
        for with_ms, without in (python(code, root, env).split() for _ in range(rounds))
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31, help="wall-time rounds per condition")
    parser.add_argument(
        "--no-instructions", action="store_true", help="skip the callgrind measurement"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    counting = not args.no_instructions and shutil.which("valgrind") is not None
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="harness-startup-") as tmp:
        root = Path(tmp) / "suite"
        root.mkdir()
        write_suite(root)
        for name, caching in (("bytecode caching on", True), ("PYTHONDONTWRITEBYTECODE=1", False)):
            env = environment(Path(tmp), caching)
            python(f"import pytest\npytest.main({ARGS})", root, env)  # warms the bytecode cache
            rounds = measure_wall(root, env, args.rounds)
            added = [with_ms - without for with_ms, without in rounds]
            floor_ms = statistics.median(without for _, without in rounds)
            median = statistics.median(added)
            row: list[object] = [name, floor_ms, median, 100 * median / floor_ms]
            if counting:
                floor_i, added_i = measure_instructions(root, env)
                row += [added_i / 1e6, 100 * added_i / floor_i]
            verdict = "" if caching else ("OK" if median <= TARGET_MS else "OVER")
            rows.append([*row, "" if caching else f"<= {TARGET_MS:g}", verdict])
            print(f"{name}: added ms per round: {', '.join(f'{a:.1f}' for a in added)}")
    headers = ["condition", "floor (ms)", "added (ms)", "added/floor %"]
    if counting:
        headers += ["added (M instr.)", "of floor instr. %"]
    print(f"\npytest --collect-only on {FILES * TESTS_PER_FILE} tests, {args.rounds} rounds")
    print(tabulate(rows, headers=[*headers, "target (ms)", "verdict"], floatfmt=".2f"))
    if not counting:
        print("(instruction counts skipped: valgrind not found or --no-instructions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
