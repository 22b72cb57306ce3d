"""The agent loop's own costs: concurrent tool batches, and loop overhead per replayed request.

1. Batches. A scripted model (``LoopbackServer``) asks for a batch of B tools that each sleep
   0.5 s (B = 1 and 8; async tools on the loop, and sync tools in worker threads), then
   answers. The batch time is from the first tool's start to the last one's end. Targets:
   8 tools within 0.6 s, and within 1.2x of one tool.
2. Overhead. A run of R requests (each asking for one trivial tool, then an answer) is
   recorded into a cassette, then replayed: (a) by the orchestrator; (b) request by request
   through the bare seam (``model.request`` + ``model.asend``, same messages and tools), the
   floor. Runs alternate; per request, the medians of (a) and (b) and their difference.
   The loop runs with the bare pipeline (``count_usage`` only). Target: at most 1 ms.
3. Middleware. The same replay by the orchestrator with the default middleware stack
   (tracing, doom loop, compaction, usage, validation, retry) against the bare pipeline.
   Target: at most 0.5 ms per request.

Run::

    python benchmarks/orchestrator.py [--rounds 15] [--quick]

The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._model import seam as model
from pytest_harness._pytest_glue import scope
from pytest_harness.orchestrator import Orchestrator, count_usage, tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

NAP = 0.5
REQUESTS = 10


@tool
async def nap() -> str:
    """Sleep half a second on the loop."""
    await asyncio.sleep(NAP)
    return "rested"


@tool
def nap_in_thread() -> str:
    """Sleep half a second in a worker thread."""
    time.sleep(NAP)
    return "rested"


@tool
def ping(n: int) -> int:
    """Echo n."""
    return n


def batch_seconds(name: str, size: int) -> float:
    def answer(body: dict[str, Any]) -> Reply:
        if any(m["role"] == "tool" for m in body["messages"]):
            return Reply(content="done")
        return Reply(content=None, tool_calls=[ToolCallSpec(name=name) for _ in range(size)])

    with LoopbackServer(answer) as server:
        agent = Orchestrator(server.model, [nap, nap_in_thread], params=server.params)
        with scope.activate(scope.Scope(degenerate="off")):
            run = agent.run("rest")
    return max(c.ended for c in run.tool_calls) - min(c.started for c in run.tool_calls)


def stepper(body: dict[str, Any]) -> Reply:
    done = sum(m["role"] == "tool" for m in body["messages"])
    if done >= REQUESTS - 1:
        return Reply(content="finished")
    return Reply(content=None, tool_calls=[ToolCallSpec(name="ping", arguments={"n": done})])


def record(path: Path) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
    """Record one run; return the server params and the messages of each request."""
    with LoopbackServer(stepper) as server:
        slot = CassetteSlot(path=path, mode="all", nodeid="bench", run_id="bench")
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            run = Orchestrator(server.model, [ping], params=server.params).run("go")
        slot.close(keep=True)
        sent = [body["messages"] for body in server.requests]
    if run.requests != REQUESTS:
        raise RuntimeError(f"recorded {run.requests} requests, expected {REQUESTS}")
    return server.params, sent


def replayed(path: Path, work: Any) -> float:
    """Seconds per request of ``work()`` in a fresh replay slot (opening not timed)."""
    slot = CassetteSlot(path=path, mode="none", nodeid="bench", run_id="bench")
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
        slot.open()
        gc.disable()
        try:
            started = time.perf_counter()
            work()
            return (time.perf_counter() - started) / REQUESTS
        finally:
            gc.enable()
            slot.close(keep=False)


def overhead(rounds: int) -> tuple[list[float], list[float], list[float]]:
    """Per-request seconds: the bare loop, the bare seam, the loop with the default stack."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.yaml"
        params, sent = record(path)
        specs = [ping.spec()]

        def orchestrated() -> None:
            Orchestrator("openai/loopback", [ping], params=params, middleware=[count_usage]).run(
                "go"
            )

        def defaults() -> None:
            Orchestrator("openai/loopback", [ping], params=params).run("go")

        def bare() -> None:
            async def all_requests() -> None:
                for messages in sent:
                    built = model.request(messages, model="openai/loopback", tools=specs, **params)
                    await model.asend(built)

            asyncio.run(all_requests())

        loop_times: list[float] = []
        seam_times: list[float] = []
        stack_times: list[float] = []
        works = [(loop_times, orchestrated), (seam_times, bare), (stack_times, defaults)]
        for _, work in works:
            replayed(path, work)  # warm-up
        for round_ in range(rounds):
            for times, work in works[round_ % 3 :] + works[: round_ % 3]:
                times.append(replayed(path, work))
    return loop_times, seam_times, stack_times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else args.rounds

    rows = []
    for name in ("nap", "nap_in_thread"):
        one, eight = batch_seconds(name, 1), batch_seconds(name, 8)
        verdict = "OK" if eight <= 0.6 and eight / one <= 1.2 else "OVER"
        rows.append([name, f"{one:.3f}", f"{eight:.3f}", f"{eight / one:.2f}", verdict])
    print(f"Tool batches (each tool sleeps {NAP} s); targets: 8 tools <= 0.6 s, <= 1.2x one")
    print(tabulate(rows, headers=["tool", "1 tool (s)", "8 tools (s)", "ratio", "verdict"]))

    loop_times, seam_times, stack_times = overhead(rounds)
    loop_ms = statistics.median(loop_times) * 1000
    seam_ms = statistics.median(seam_times) * 1000
    extra = loop_ms - seam_ms
    print(f"\nReplayed run of {REQUESTS} requests, {rounds} rounds (median ms per request)")
    print(
        tabulate(
            [[f"{loop_ms:.3f}", f"{seam_ms:.3f}", f"{extra:.3f}", "OK" if extra <= 1 else "OVER"]],
            headers=["orchestrator", "bare seam (floor)", "overhead", "target <= 1 ms"],
        )
    )
    print("rounds (ms/request), orchestrator:", ", ".join(f"{t * 1000:.2f}" for t in loop_times))
    print("rounds (ms/request), bare seam:   ", ", ".join(f"{t * 1000:.2f}" for t in seam_times))
    stack_ms = statistics.median(stack_times) * 1000
    added = stack_ms - loop_ms
    print(f"\nDefault middleware stack over the bare loop ({rounds} rounds, median ms/request)")
    print(
        tabulate(
            [
                [
                    f"{stack_ms:.3f}",
                    f"{loop_ms:.3f}",
                    f"{added:.3f}",
                    "OK" if added <= 0.5 else "OVER",
                ]
            ],
            headers=["default stack", "bare loop (floor)", "added", "target <= 0.5 ms"],
        )
    )
    print("rounds (ms/request), default stack:", ", ".join(f"{t * 1000:.2f}" for t in stack_times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
