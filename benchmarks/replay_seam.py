"""A replayed harness-made model call against the OpenAI SDK's own in-memory call.

The harness makes model calls of its own (a judge, an agent step, ``complete()``); in
replay they are answered from the test's cassette. This puts one beside the cheapest call
an application can make: the OpenAI SDK's ``chat.completions.create`` over an
``httpx.MockTransport`` that hands back the recorded reply from memory (no socket, no
cassette, no plugin).

Cassettes of N interactions (N in 10, 200, 1,000) are recorded through the real model seam
(``complete``) against a ``LoopbackServer`` on 127.0.0.1: the prompts of ``replay.py`` (a
~400-character system message and a user message holding the index, about 1 KB of request
body), each answered ``answer <i>``; the floor's replies are recorded by the SDK itself
(``replay_app.record``). The server is then stopped.

Each round, for every N: a replay batch in recorded order, one in reversed order (K = 10
sampled prompts, a fresh ``CassetteSlot`` in mode ``none`` opened untimed with a test's
``TrafficWatch``, as in a test: every reply recognised, checked, counted), and a floor batch
of the same prompts; at N=200 also a batch of the full path (the same cassette with the
seam calls' keys taken out, as a cassette recorded before keys were kept: litellm builds
each request and vcrpy matches it). Batches alternate in order round by round; the
collector is off during a batch. Each round prints its ratios (median replay ms per call
over median floor ms per call); the summary gives the median over rounds.

Run::

    python benchmarks/replay_seam.py [--rounds 15] [--quick]

Target: a replayed harness-made call at most 0.5x the SDK's in-memory call at every N, in
recorded and reversed order. The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from replay import answer, make_slot, messages
from replay_app import floor_batch, floor_client
from replay_app import record as record_app
from tabulate import tabulate

from pytest_harness._model.seam import complete
from pytest_harness._pytest_glue import scope
from pytest_harness._pytest_glue.item import TrafficWatch
from pytest_harness.testing import LoopbackServer

SIZES = (10, 200, 1000)
BATCH = 10
TARGET = 0.5
FULL_N = 200
MODEL = "openai/loopback"


def call(index: int, params: dict[str, Any]) -> float:
    """One harness-made call for prompt ``index`` in the scope in force; its wall ms."""
    start = time.perf_counter_ns()
    response = complete(messages(index), model=MODEL, **params)
    wall = time.perf_counter_ns() - start
    if response.content != f"answer {index}":
        raise RuntimeError(f"prompt {index} got {response.content!r}")
    return wall / 1e6


def record(folder: Path) -> tuple[dict[str, Any], dict[int, Path]]:
    """Record a seam cassette per size; return the server params and the files."""
    paths: dict[int, Path] = {}
    with LoopbackServer(handler=answer) as server:
        for n in SIZES:
            paths[n] = folder / f"seam{n}.yaml"
            slot = make_slot(paths[n], "all")
            with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
                for index in range(n):
                    call(index, server.params)
            if slot.close(keep=True) is None:
                raise RuntimeError(f"nothing was recorded into {paths[n]}")
        return server.params, paths


def without_keys(path: Path) -> Path:
    """A copy of the cassette without the seam calls' keys (replayed by HTTP match only)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for interaction in data["interactions"]:
        if interaction.pop("seam", None) is None:
            raise RuntimeError(f"{path}: an interaction without a seam key")
    copy = path.with_name(f"{path.stem}-nokeys.yaml")
    copy.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return copy


def replay_batch(path: Path, params: dict[str, Any], indices: list[int]) -> list[float]:
    """Open a fresh replay slot with a test's traffic watch (untimed), time the calls."""
    watch = TrafficWatch("bench")
    slot = make_slot(path, "none")
    slot.on_response = watch.seen
    slot.on_tool_run = watch.tool_run
    slot.open()
    active = scope.Scope(call_hooks=(slot,), degenerate="fail", replay=True)
    gc.collect()
    gc.disable()
    try:
        with scope.activate(active):
            return [call(index, params) for index in indices]
    finally:
        gc.enable()
        slot.close(keep=False)


def floor_ms(client: Any, indices: list[int]) -> list[float]:
    return [wall for wall, _ in floor_batch(client, indices)]


Run = Callable[[list[int]], list[float]]


def plan(
    params: dict[str, Any], seam: dict[int, Path], app: dict[int, Path], url: str
) -> list[tuple[int, str, Run]]:
    runs: list[tuple[int, str, Run]] = []
    for n in SIZES:
        batch = functools.partial(replay_batch, seam[n], params)
        runs.append((n, "recorded", lambda ix, b=batch: b(sorted(ix))))
        runs.append((n, "reversed", lambda ix, b=batch: b(sorted(ix, reverse=True))))
        runs.append((n, "floor", functools.partial(floor_ms, floor_client(app[n], url))))
    full = functools.partial(replay_batch, without_keys(seam[FULL_N]), params)
    runs.append((FULL_N, "full path", lambda ix: full(sorted(ix))))
    return runs


def measure(
    runs: list[tuple[int, str, Run]], rounds: int, rng: random.Random
) -> list[dict[tuple[int, str], float]]:
    """Per round, the median ms per call of every (N, kind)."""
    for n, _, run in runs:  # warm-up, not counted
        run(rng.sample(range(n), 5))
    found = []
    for round_ in range(rounds):
        ordered = runs if round_ % 2 == 0 else runs[::-1]
        samples = {n: rng.sample(range(n), BATCH) for n in SIZES}
        found.append({(n, kind): statistics.median(run(samples[n])) for n, kind, run in ordered})
    return found


def ratios(found: list[dict[tuple[int, str], float]]) -> dict[tuple[int, str], list[float]]:
    """Per (N, kind) other than the floor, each round's ms over that round's floor at N."""
    out: dict[tuple[int, str], list[float]] = {}
    for medians in found:
        for (n, kind), ms in medians.items():
            if kind != "floor":
                out.setdefault((n, kind), []).append(ms / medians[(n, "floor")])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="--rounds 5")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="harness-seam-") as tmp:
        params, seam = record(Path(tmp))
        url, app = record_app(Path(tmp))
        runs = plan(params, seam, app, url)
        found = measure(runs, rounds, random.Random(args.seed))
    by_kind = ratios(found)
    for number, medians in enumerate(found, 1):
        shown = ", ".join(
            f"N={n} {kind} {medians[(n, kind)] / medians[(n, 'floor')]:.2f}x"
            for n, kind, _ in runs
            if kind != "floor"
        )
        print(f"round {number}: {shown}")
    print()
    rows = []
    for (n, kind), values in by_kind.items():
        floor = statistics.median(m[(n, "floor")] for m in found)
        replay = statistics.median(m[(n, kind)] for m in found)
        ratio = statistics.median(values)
        verdict = "" if kind == "full path" else ("OK" if ratio <= TARGET else "OVER")
        rows.append([n, kind, replay, floor, ratio, f"<= {TARGET}x" if verdict else "", verdict])
    headers = [
        "interactions",
        "replayed call",
        "ms/call",
        "SDK in-memory ms/call",
        "median ratio",
        "target",
        "verdict",
    ]
    print(tabulate(rows, headers=headers, floatfmt=".3f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
