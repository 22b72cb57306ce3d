"""Replay cost of a cassette per model call, and the time to load a large cassette.

Cassettes of N interactions (N in 10, 100, 200, 1,000) are recorded in a temporary directory
through the real model seam against a ``LoopbackServer`` on 127.0.0.1: N distinct prompts of
realistic size (a ~400-character system message and a user message holding the index, so
request bodies are about 1 KB), each answered ``answer <i>``. The server is then stopped.

1. Replay per call. A ``CassetteSlot`` in replay mode (``none``) is opened (the load is not
   timed), then ``complete()`` is timed call by call for K distinct recorded prompts
   (K = min(N, 50); a replay is consumed once played), after which the slot is closed and a
   fresh one opened for the next batch. Batches of the different N are interleaved so that
   machine noise hits them alike; a warm-up batch per N comes first and is not counted.
   Reported per N: median and p90 wall ms per call, the median process CPU ms per call (less
   sensitive to other load on a shared machine) and the ratio of the median to N=10's. For
   scale, the same seam against the live loopback server without any cassette.
2. Load. ``store.load(...)`` of the 1,000-interaction file (median over rounds),
   its size, and for scale ``json.loads`` and PyYAML's ``CSafeLoader`` on the same text (the
   latter takes seconds, so at most 3 rounds).

Run::

    python benchmarks/replay.py [--calls 300] [--rounds 7] [--quick]

Targets: replay <= 3.5 ms per call at 200 interactions and flat in size (1,000 interactions
at most 1.2x the cost of 10); loading 1,000 interactions < 0.1 s.
The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias

import yaml
from tabulate import tabulate

from pytest_harness._cassettes import bodies, store
from pytest_harness._cassettes.scrub import Redaction
from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._model.seam import complete
from pytest_harness._pytest_glue import scope
from pytest_harness.testing import LoopbackServer, Reply

SIZES = (10, 100, 200, 1000)
BATCH = 50  # calls per opened cassette (fewer when the cassette is smaller)
WARMUP_CALLS = 5
PER_CALL_TARGET_MS = 3.5
PER_CALL_TARGET_N = 200
FLAT_TARGET = 1.2
LOAD_TARGET_S = 0.1
LOAD_N = 1000
BARE_CALLS = 100

Timing: TypeAlias = tuple[float, float]  # (wall ms, process CPU ms) of one call

SYSTEM = (
    "You are a careful assistant for a test suite. Answer in one short sentence, in plain "
    "English, without lists, code blocks or markdown. If the question is ambiguous, pick the "
    "most common reading and answer it; never ask a follow-up question. Keep numbers exact, "
    "keep names as given, and do not add any greeting or closing remark. When you do not "
    "know, say so in five words or fewer. Do not mention that you are a model or assistant."
)
USER = (
    "Question #{index}: a customer wrote to support about order {index} and asked whether "
    "the parcel can still be redirected to a neighbour while it is in transit. The order "
    "was placed on a weekday, paid by card, and shipped with the standard carrier from the "
    "central warehouse. The customer also asked whether the delivery window can be moved "
    "to the evening and whether a signature will be needed at the door. Give the answer "
    "the support agent should send back."
)
INDEX = re.compile(r"Question #(\d+):")


def messages(index: int) -> list[dict[str, str]]:
    """The chat messages of prompt ``index``."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER.format(index=index)},
    ]


def answer(body: dict[str, Any]) -> Reply:
    """The loopback server's reply: ``answer <i>`` for prompt ``i``."""
    found = INDEX.search(str(body["messages"][-1]["content"]))
    return Reply(content=f"answer {found.group(1) if found else '?'}")


def make_slot(path: Path, mode: str) -> CassetteSlot:
    return CassetteSlot(path=path, mode=mode, nodeid="bench", run_id="bench")


def call(index: int, server_params: dict[str, Any]) -> Timing:
    """Make one model call for prompt ``index`` in the scope in force; return its ms."""
    cpu, start = time.process_time(), time.perf_counter()
    response = complete(messages(index), model="openai/loopback", **server_params)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if response.content != f"answer {index}":
        raise RuntimeError(f"prompt {index} got {response.content!r}")
    return wall * 1000, cpu * 1000


def record(path: Path, size: int) -> tuple[dict[str, Any], list[Timing]]:
    """Record ``size`` interactions into ``path``; return the server params and live ms/call."""
    with LoopbackServer(handler=answer) as server:
        params = server.params
        slot = make_slot(path, "all")
        times: list[Timing] = []
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            for index in range(size):
                times.append(call(index, params))
        if slot.close(keep=True) is None:
            raise RuntimeError(f"nothing was recorded into {path}")
    return params, times


def bare_seam(calls: int) -> list[Timing]:
    """ms per call of the seam against the live loopback server, no cassette."""
    with LoopbackServer(handler=answer) as server, scope.activate(scope.Scope(degenerate="off")):
        for index in range(WARMUP_CALLS):
            call(index, server.params)
        return [call(index, server.params) for index in range(calls)]


def replay_batch(path: Path, params: dict[str, Any], indices: list[int]) -> list[Timing]:
    """Open a fresh replay slot (not timed) and time one call per index."""
    slot = make_slot(path, "none")
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
        slot.open()
        try:
            return [call(index, params) for index in indices]
        finally:
            slot.close(keep=False)


def measure_replay(
    cassettes: dict[int, tuple[Path, dict[str, Any]]], calls: int, rng: random.Random
) -> dict[int, list[Timing]]:
    """Per N, the ms of at least ``calls`` replayed calls, batches interleaved across N."""
    batches = {n: math.ceil(calls / min(n, BATCH)) for n in cassettes}
    for n, (path, params) in cassettes.items():  # warm-up, not counted
        replay_batch(path, params, rng.sample(range(n), min(n, WARMUP_CALLS)))
    times: dict[int, list[Timing]] = {n: [] for n in cassettes}
    for round_ in range(max(batches.values())):
        for n, (path, params) in cassettes.items():
            if round_ < batches[n]:
                gc.collect()
                times[n] += replay_batch(path, params, rng.sample(range(n), min(n, BATCH)))
    return times


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(timings: list[Timing]) -> tuple[float, float, float]:
    """Median wall ms, p90 wall ms and median CPU ms of some calls."""
    wall = [w for w, _ in timings]
    return statistics.median(wall), percentile(wall, 0.9), statistics.median(c for _, c in timings)


def timed(function: Callable[[], object], rounds: int) -> float:
    """Median seconds of ``function()`` over ``rounds`` runs."""
    results = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        function()
        results.append(time.perf_counter() - start)
    return statistics.median(results)


def load_cassette(path: Path) -> store.HarnessCassette:
    cassette = store.load(path, mode="none", ignore=(), redaction=Redaction(), rerecord_hint=str)
    if len(cassette.data) != LOAD_N:
        raise RuntimeError(f"loaded {len(cassette.data)} interactions from {path}")
    return cassette


def replay_table(times: dict[int, list[Timing]], bare: list[Timing]) -> list[list[object]]:
    base = summary(times[min(times)])[0]
    rows: list[list[object]] = []
    for n, timings in times.items():
        median, p90, cpu = summary(timings)
        ratio = median / base
        target, verdict = "", ""
        if n == PER_CALL_TARGET_N:
            target = f"<= {PER_CALL_TARGET_MS} ms"
            verdict = "OK" if median <= PER_CALL_TARGET_MS else "OVER"
        elif n == max(times):
            target = f"<= {FLAT_TARGET}x"
            verdict = "OK" if ratio <= FLAT_TARGET else "OVER"
        rows.append([n, len(timings), median, p90, cpu, ratio, target, verdict])
    rows.append(["live, no cassette", len(bare), *summary(bare)])
    return rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="replayed calls measured per N")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the load timings")
    parser.add_argument("--quick", action="store_true", help="--calls 60 --rounds 3")
    parser.add_argument("--seed", type=int, default=0, help="seed of the prompt order")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.calls, args.rounds = 60, 3
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="harness-replay-") as tmp:
        cassettes: dict[int, tuple[Path, dict[str, Any]]] = {}
        for n in SIZES:
            path = Path(tmp) / f"c{n}.yaml"
            params, _ = record(path, n)
            cassettes[n] = (path, params)
        bare = bare_seam(BARE_CALLS if not args.quick else 30)
        times = measure_replay(cassettes, args.calls, rng)

        big = cassettes[LOAD_N][0]
        text = big.read_text(encoding="utf-8")
        first = json.loads(text)["interactions"][0]["request"]["body"]
        body_bytes = len(bodies.body_bytes(first) or b"")
        load_s = timed(lambda: load_cassette(big), args.rounds)
        json_s = timed(lambda: json.loads(text), args.rounds)
        yaml_rounds = min(args.rounds, 3)
        yaml_s = timed(lambda: yaml.load(text, Loader=yaml.CSafeLoader), yaml_rounds)

    rows = replay_table(times, bare)
    print(
        f"Replay per model call (request body {body_bytes} bytes; up to {BATCH} calls per "
        f"opened cassette, open/load not timed)"
    )
    headers = [
        "interactions",
        "calls",
        "median (ms)",
        "p90 (ms)",
        "CPU median (ms)",
        "median vs N=10",
        "target",
        "verdict",
    ]
    print(tabulate(rows, headers=headers, floatfmt=".2f"))
    print()
    load_verdict = "OK" if load_s < LOAD_TARGET_S else "OVER"
    load_rows = [
        ["cassettes.store.load()", load_s * 1000, f"< {LOAD_TARGET_S * 1000:.0f}", load_verdict],
        ["json.loads (scale)", json_s * 1000, "", ""],
        [f"yaml CSafeLoader (scale, {yaml_rounds} rounds)", yaml_s * 1000, "", ""],
    ]
    size_mb = len(text.encode()) / 1e6
    print(f"Loading {LOAD_N} interactions ({size_mb:.2f} MB), median of {args.rounds} rounds")
    print(tabulate(load_rows, headers=["what", "ms", "target (ms)", "verdict"], floatfmt=".1f"))
    over = [str(row[0]) for row in rows if row[-1] == "OVER"]
    over += ["load"] if load_verdict == "OVER" else []
    print("OVER target: " + ", ".join(over) if over else "All targets met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
