"""Instructions per replayed model call: the replay benchmark's figure, free of machine noise.

On a shared machine the wall time of one replayed call (``replay.py``) moves by more than the
changes worth measuring. ``valgrind --tool=callgrind`` counts instructions instead, the
same from run to run. A cassette of 200 interactions is recorded (as ``replay.py`` does:
realistic prompts, ``answer <i>`` replies); then fresh processes under callgrind make 5
warm-up calls and K more, for K = 0 and K = CALLS. The figure per call is the difference
over CALLS. The heap is frozen after the warm-up (``gc.freeze()``): otherwise whether one
full collection of litellm's heap (tens of millions of instructions) falls among the counted
calls decides the result.

The floor, measured the same way in the same run: a call of the seam to the live loopback
server without any cassette (that server runs in the counted process too).

Run::

    python benchmarks/replay_instructions.py [--calls 100]

Needs valgrind; takes about 10 minutes. Always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import gc
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from replay import answer, complete, make_slot, messages, record
from tabulate import tabulate

from pytest_harness._pytest_glue import scope
from pytest_harness.testing import LoopbackServer

SIZE = 200
WARMUP = 5
REPLAY_BASE = "http://127.0.0.1:9/v1"  # nothing listens there: replay answers first


def child(kind: str, folder: Path, calls: int) -> None:
    """Warm up, freeze the heap, then make ``calls`` calls (run under callgrind)."""
    if kind == "replay":
        slot = make_slot(folder / "c.yaml", "none")
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            _calls({"api_base": REPLAY_BASE, "api_key": "loopback-not-a-secret"}, calls)
        slot.close(keep=False)
        return
    with LoopbackServer(handler=answer) as server, scope.activate(scope.Scope(degenerate="off")):
        _calls(server.params, calls)


def _calls(params: dict[str, str], calls: int) -> None:
    for index in range(WARMUP):
        complete(messages(index), model="openai/loopback", **params)
    gc.collect()
    gc.freeze()
    for index in range(WARMUP, WARMUP + calls):
        complete(messages(index), model="openai/loopback", **params)


def instructions(kind: str, folder: Path, calls: int) -> int:
    command = [sys.executable, __file__, "--child", kind, str(folder), str(calls)]
    valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    result = subprocess.run([*valgrind, *command], capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", result.stderr)
    if result.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return int(found.group(1))


def per_call(kind: str, folder: Path, calls: int) -> float:
    return (instructions(kind, folder, calls) - instructions(kind, folder, 0)) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--child", nargs=3, metavar=("KIND", "DIR", "CALLS"), help="internal")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], Path(args.child[1]), int(args.child[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured (apt-get install valgrind)")
        return 0
    with tempfile.TemporaryDirectory(prefix="harness-replay-instr-") as tmp:
        record(Path(tmp) / "c.yaml", SIZE)
        replay = per_call("replay", Path(tmp), args.calls)
        live = per_call("live", Path(tmp), args.calls)
    rows = [
        [f"replay, {SIZE} interactions", replay / 1e6, replay / live],
        ["live loopback, no cassette (floor)", live / 1e6, 1.0],
    ]
    print(f"Instructions per model call ({args.calls} calls after {WARMUP} warm-up calls)")
    print(tabulate(rows, headers=["call", "M instructions", "vs floor"], floatfmt=".3f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
