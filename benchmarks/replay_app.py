"""Replay cost of an application's own OpenAI SDK call through a cassette, against a floor.

Code under test often calls the OpenAI SDK itself (``openai.OpenAI(...).chat.completions
.create``), not through the harness's model seam; its HTTP traffic is replayed by the same
cassette. Cassettes of N interactions (N in 10, 200, 1,000) are recorded in a temporary
directory, with a ``CassetteSlot`` in mode ``all`` open, by N distinct SDK calls to a
``LoopbackServer`` on 127.0.0.1: the prompts of ``replay.py`` (a ~400-character system
message and a user message holding the index, about 1 KB of request body), each answered
``answer <i>``. The server is then stopped: nothing listens at its URL.

1. Per call, side by side. Replay: a ``CassetteSlot`` in mode ``none`` is opened (not
   timed) with a test's ``TrafficWatch`` (every reply recognised, checked, counted), then
   one reused ``openai.OpenAI(base_url=<server url>, max_retries=0)`` client
   makes K = 10 distinct recorded calls (a replay is consumed once played), each timed; the
   slot is then closed. Floor: the same SDK call, with the same request, through a client
   whose ``httpx.MockTransport`` hands back the recorded response from memory (cassettes
   leave in-process transports alone; floor batches also run with no cassette open, and
   the script checks the transport is the original). Each round runs one
   batch of every kind for every N (in alternating order), so machine noise hits all alike;
   a warm-up batch of each comes first and is not counted. The collector is off during a
   batch; the heap built before the rounds is frozen so that the collection before each
   batch is short. Reported per N: median wall ms per call of replay and floor, the
   difference and the ratio, and the same from process CPU time (less sensitive to other
   load on a shared machine).
2. Flat in size: the median replay cost at N=1,000 over that at N=10.
3. Order: at N=1,000, each round's K sampled prompts also replayed in recorded order and in
   reverse order (two more batches of the round); the ratio reversed / recorded.
4. Load: ``store.load(...)`` of the 1,000-interaction file, median over rounds.
5. The trajectory: after each replay batch, ``harness.trajectory``'s reading of the batch's
   traffic (requests, answers, tool calls and results) is timed apart, per call.

Run::

    python benchmarks/replay_app.py [--calls 400] [--rounds 7] [--quick]

Targets: replay at most 0.5 ms per call above the floor at 200 interactions; flat in size
(1,000 interactions at most 1.2x the cost of 10); order-free (reversed at most 1.1x
recorded); loading 1,000 interactions < 100 ms.
The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

import httpx
import openai
from replay import answer, load_cassette, make_slot, messages
from tabulate import tabulate

from pytest_harness._cassettes import bodies
from pytest_harness._pytest_glue.item import TrafficWatch
from pytest_harness.testing import LoopbackServer

SIZES = (10, 200, 1000)
BATCH = 10  # calls per opened cassette: K, the same for every N (the smallest is 10)
WARMUP_CALLS = 5
DIFF_TARGET_MS = 0.5
DIFF_TARGET_N = 200
FLAT_TARGET = 1.2
ORDER_TARGET = 1.1
ORDER_N = 1000
LOAD_TARGET_MS = 100.0
LOAD_N = 1000
MODEL = "loopback"
API_KEY = "sk-bench"

Timing: TypeAlias = tuple[float, float]  # (wall ms, process CPU ms) of one call
PRISTINE_MOCK = httpx.MockTransport.handle_request  # a cassette must never patch it


def call(client: openai.OpenAI, index: int) -> Timing:
    """Make one SDK call for prompt ``index``; return its wall and CPU ms."""
    prompt = messages(index)
    cpu, start = time.process_time_ns(), time.perf_counter_ns()
    response = client.chat.completions.create(model=MODEL, messages=prompt)  # type: ignore[arg-type]
    wall, cpu = time.perf_counter_ns() - start, time.process_time_ns() - cpu
    if response.choices[0].message.content != f"answer {index}":
        raise RuntimeError(f"prompt {index} got {response.choices[0].message.content!r}")
    return wall / 1e6, cpu / 1e6


def record(folder: Path) -> tuple[str, dict[int, Path]]:
    """Record a cassette per size against one loopback server; return its URL and the files."""
    paths: dict[int, Path] = {}
    with LoopbackServer(handler=answer) as server:
        client = openai.OpenAI(base_url=server.url, api_key=API_KEY, max_retries=0)
        for n in SIZES:
            paths[n] = folder / f"app{n}.yaml"
            slot = make_slot(paths[n], "all")
            slot.open()
            for index in range(n):
                call(client, index)
            if slot.close(keep=True) is None:
                raise RuntimeError(f"nothing was recorded into {paths[n]}")
        return server.url, paths


def floor_client(path: Path, url: str) -> openai.OpenAI:
    """A client answered in memory with the responses recorded in ``path``."""
    recorded: dict[bytes, tuple[int, list[tuple[str, str]], bytes]] = {}
    for interaction in json.loads(path.read_text(encoding="utf-8"))["interactions"]:
        request, response = interaction["request"], interaction["response"]
        headers = [(k, v) for k, values in response["headers"].items() for v in values]
        body = bodies.body_bytes(response["body"]) or b""
        asked = bodies.body_bytes(request["body"]) or b""
        recorded[asked] = (response["status"]["code"], headers, body)

    def handler(request: httpx.Request) -> httpx.Response:
        status, headers, body = recorded[request.content]
        return httpx.Response(status, headers=headers, content=body)

    transport = httpx.MockTransport(handler)
    http_client = httpx.Client(transport=transport)
    return openai.OpenAI(base_url=url, api_key=API_KEY, max_retries=0, http_client=http_client)


def timed_batch(client: openai.OpenAI, indices: list[int]) -> list[Timing]:
    """Time one call per index, the garbage collector off."""
    gc.collect()
    gc.disable()
    try:
        return [call(client, index) for index in indices]
    finally:
        gc.enable()


TRAJECTORIES: list[Timing] = []  # reading each replay batch's trajectory, per call


def replay_batch(path: Path, client: openai.OpenAI, indices: list[int]) -> list[Timing]:
    """Open a fresh replay slot (not timed), time the calls, close it.

    The slot shows every reply to a test's traffic watch, as in a test: each replayed
    response is recognised, checked and counted inside the timed call, and kept for the
    test's trajectory. After the calls, the trajectory is read as ``harness.trajectory``
    reads it (timed apart, per call, into ``TRAJECTORIES``).
    """
    watch = TrafficWatch("bench")
    slot = make_slot(path, "none")
    slot.on_response = watch.seen
    slot.on_tool_run = watch.tool_run
    slot.open()
    try:
        timings = timed_batch(client, indices)
    finally:
        slot.close(keep=False)
    cpu, start = time.process_time_ns(), time.perf_counter_ns()
    trajectory = watch.trajectory()
    wall, cpu = time.perf_counter_ns() - start, time.process_time_ns() - cpu
    if len(trajectory.requests) != len(indices):
        raise RuntimeError(f"the trajectory holds {len(trajectory.requests)} requests")
    TRAJECTORIES.append((wall / 1e6 / len(indices), cpu / 1e6 / len(indices)))
    return timings


def floor_batch(client: openai.OpenAI, indices: list[int]) -> list[Timing]:
    if httpx.MockTransport.handle_request is not PRISTINE_MOCK:
        raise RuntimeError("a cassette is still open: the floor would go through vcrpy")
    return timed_batch(client, indices)


Results: TypeAlias = dict[str, list[Timing]]


def measure(url: str, paths: dict[int, Path], calls: int, rng: random.Random) -> dict[int, Results]:
    """Per N, the timings of replay and floor (and at ORDER_N, recorded/reversed order)."""
    app = openai.OpenAI(base_url=url, api_key=API_KEY, max_retries=0)
    floors = {n: floor_client(path, url) for n, path in paths.items()}
    runs: list[tuple[int, str, Callable[[list[int]], list[Timing]]]] = []
    for n, path in paths.items():
        runs.append((n, "replay", functools.partial(replay_batch, path, app)))
        runs.append((n, "floor", functools.partial(floor_batch, floors[n])))
    big = functools.partial(replay_batch, paths[ORDER_N], app)
    runs.append((ORDER_N, "recorded", lambda indices: big(sorted(indices))))
    runs.append((ORDER_N, "reversed", lambda indices: big(sorted(indices, reverse=True))))
    for n, _, run in runs:  # warm-up, not counted
        run(rng.sample(range(n), min(n, WARMUP_CALLS)))
    results: dict[int, Results] = {n: {} for n in paths}
    gc.collect()
    gc.freeze()  # the collection before each batch then skips the long-lived heap
    try:
        for round_ in range(math.ceil(calls / BATCH)):
            ordered = runs if round_ % 2 == 0 else runs[::-1]
            samples = {n: rng.sample(range(n), BATCH) for n in paths}
            for n, kind, run in ordered:
                results[n].setdefault(kind, []).extend(run(samples[n]))
    finally:
        gc.unfreeze()
    return results


def medians(timings: list[Timing]) -> tuple[float, float]:
    """Median wall ms and median CPU ms of some calls."""
    return statistics.median(w for w, _ in timings), statistics.median(c for _, c in timings)


def timed_ms(function: Callable[[], object], rounds: int) -> float:
    """Median ms of ``function()`` over ``rounds`` runs."""
    results = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter_ns()
        function()
        results.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(results)


def verdict(ok: bool) -> str:
    return "OK" if ok else "OVER"


def per_call_rows(results: dict[int, Results]) -> list[list[object]]:
    rows: list[list[object]] = []
    for n, result in results.items():
        replay, replay_cpu = medians(result["replay"])
        floor, floor_cpu = medians(result["floor"])
        target, ok = "", ""
        if n == DIFF_TARGET_N:
            target, ok = f"<= +{DIFF_TARGET_MS} ms", verdict(replay - floor <= DIFF_TARGET_MS)
        wall = [replay, floor, replay - floor, replay / floor]
        cpu = [replay_cpu, floor_cpu, replay_cpu - floor_cpu]
        rows.append([n, len(result["replay"]), *wall, *cpu, target, ok])
    return rows


def check_rows(results: dict[int, Results], load_ms: float) -> list[list[object]]:
    """Flat in size, order and load: (check, wall, CPU, target, verdict)."""
    small, big = results[min(results)]["replay"], results[max(results)]["replay"]
    recorded, reversed_ = results[ORDER_N]["recorded"], results[ORDER_N]["reversed"]
    flat = [b / s for b, s in zip(medians(big), medians(small), strict=True)]
    order = [r / o for r, o in zip(medians(reversed_), medians(recorded), strict=True)]
    load_target, load_ok = f"< {LOAD_TARGET_MS:.0f}", verdict(load_ms < LOAD_TARGET_MS)
    flat_ok, order_ok = verdict(flat[0] <= FLAT_TARGET), verdict(order[0] <= ORDER_TARGET)
    return [
        [f"replay N={max(results)} / N={min(results)}", *flat, f"<= {FLAT_TARGET}x", flat_ok],
        [f"N={ORDER_N}: reversed / recorded order", *order, f"<= {ORDER_TARGET}x", order_ok],
        [f"store.load(), {LOAD_N} interactions (ms)", load_ms, "", load_target, load_ok],
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="replayed calls measured per N")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the load timing")
    parser.add_argument("--quick", action="store_true", help="--calls 100 --rounds 3")
    parser.add_argument("--seed", type=int, default=0, help="seed of the prompt samples")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.calls, args.rounds = 100, 3
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="harness-replay-app-") as tmp:
        url, paths = record(Path(tmp))
        results = measure(url, paths, args.calls, rng)
        text = paths[LOAD_N].read_text(encoding="utf-8")
        first = json.loads(text)["interactions"][0]["request"]["body"]
        body_bytes = len(bodies.body_bytes(first) or b"")
        load_ms = timed_ms(lambda: load_cassette(paths[LOAD_N]), args.rounds)

    print(
        f"OpenAI SDK call replayed from a cassette vs the same call on an in-memory "
        f"httpx.MockTransport (request body {body_bytes} bytes; {BATCH} calls per "
        f"opened cassette, open/load not timed)"
    )
    headers = [
        "interactions",
        "calls",
        "replay (ms)",
        "floor (ms)",
        "diff (ms)",
        "ratio",
        "replay CPU (ms)",
        "floor CPU (ms)",
        "CPU diff (ms)",
        "target",
        "verdict",
    ]
    rows = per_call_rows(results)
    print(tabulate(rows, headers=headers, floatfmt=".3f"))
    print()
    checks = check_rows(results, load_ms)
    size_mb = len(text.encode()) / 1e6
    print(
        f"Size, order and load (medians; the {LOAD_N}-interaction file is {size_mb:.2f} MB, "
        f"load over {args.rounds} rounds; verdicts on wall time)"
    )
    check_headers = ["check", "wall", "CPU", "target", "verdict"]
    print(tabulate(checks, headers=check_headers, floatfmt=".2f"))
    over = [f"per call at N={row[0]}" for row in rows if row[-1] == "OVER"]
    over += [str(row[0]) for row in checks if row[-1] == "OVER"]
    read, read_cpu = medians(TRAJECTORIES)
    print(
        f"\nharness.trajectory read after each replayed batch (not in the figures above): "
        f"{read:.3f} ms wall, {read_cpu:.3f} ms CPU per call (median of {len(TRAJECTORIES)} "
        "batches)"
    )
    print("OVER target: " + ", ".join(over) if over else "All targets met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
