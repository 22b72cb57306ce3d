"""How many package modules one replayed ``complete()`` walks through, and how many hops.

A harness test (``@pytest.mark.harness``) calls ``complete()`` twice with the same prompt; it
is recorded with ``--harness-live`` against a ``LoopbackServer``, then replayed with plain
``pytest`` in a subprocess. In the replay the first call warms every lazy import and the
second runs under ``sys.setprofile``, inside the test, with the plugin's listeners in force.
Every Python call whose code lives in the package counts:

- modules: the package modules whose functions ran (the design's goal: at most 8);
- hops: calls from a function of one package module into a function of another.

Run::

    python benchmarks/module_walk.py [--list]

``--list`` prints the modules and the hops between them. The script always exits 0: it is a
report, not a gate.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import pytest_harness
from pytest_harness.testing import LoopbackServer, Reply

ROOT = Path(pytest_harness.__file__).parent
GOAL = 8


def module_of(frame: FrameType | None) -> str | None:
    """The package module a frame's code belongs to, or None outside the package."""
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename)
    if ROOT not in path.parents:
        return None
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def walk(call: Any) -> tuple[Counter[str], Counter[tuple[str, str]]]:
    """(calls per module, calls per (caller module, callee module)) while ``call()`` runs."""
    modules: Counter[str] = Counter()
    hops: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = module_of(frame)
        if callee is None:
            return
        modules[callee] += 1
        caller = module_of(frame.f_back)
        if caller is not None and caller != callee:
            hops[(caller, callee)] += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return modules, hops


TEST = """
import json, os, sys

import pytest

sys.path.insert(0, {bench!r})
from module_walk import walk  # noqa: E402

from pytest_harness import complete  # noqa: E402

PARAMS = json.loads(os.environ["WALK_PARAMS"])
MESSAGES = [{{"role": "user", "content": "What is the capital of France?"}}]


@pytest.mark.harness(cassette="walk")
def test_walk():
    call = lambda: complete(MESSAGES, model="openai/loopback", **PARAMS)  # noqa: E731
    call()  # warms every lazy import
    modules, hops = walk(call)
    with open(os.environ["WALK_OUT"], "w") as out:
        json.dump({{"modules": modules, "hops": [[*k, v] for k, v in hops.items()]}}, out)
"""


def run_in_pytest(folder: Path) -> tuple[dict[str, int], list[list[Any]]]:
    """Record the test against a loopback server, then replay it; the replay's walk."""
    import json
    import os
    import subprocess

    (folder / "test_walk.py").write_text(TEST.format(bench=str(Path(__file__).parent)))
    out = folder / "walk-out.json"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    command += ["-W", "ignore::UserWarning", "test_walk.py"]
    with LoopbackServer() as server:
        server.queue(*[Reply(content="Paris")] * 2)
        env = {**os.environ, "WALK_PARAMS": json.dumps(server.params), "WALK_OUT": str(out)}
        recorded = subprocess.run(
            [*command, "--harness-live"], cwd=folder, env=env, text=True, capture_output=True
        )
    if recorded.returncode != 0:
        raise SystemExit("recording failed:\n" + recorded.stdout + recorded.stderr)
    replayed = subprocess.run(command, cwd=folder, env=env, text=True, capture_output=True)
    if replayed.returncode != 0:
        raise SystemExit("replay failed:\n" + replayed.stdout + replayed.stderr)
    data = json.loads(out.read_text())
    return data["modules"], data["hops"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the modules and hops")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        modules, hops = run_in_pytest(Path(folder))
    total = sum(count for *_, count in hops)
    print(
        f"one replayed complete() in a harness test: {len(modules)} package modules "
        f"(goal: at most {GOAL}), {total} hops between modules ({len(hops)} distinct)"
    )
    if options.list:
        for name, count in sorted(modules.items()):
            print(f"  {count:5d} calls  {name}")
        for caller, callee, count in sorted(hops):
            print(f"  {count:5d} hops   {caller} -> {callee}")


if __name__ == "__main__":
    main()
