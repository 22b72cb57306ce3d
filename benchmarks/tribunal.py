"""Tribunal cost: how concurrent a panel of judges is, and what a replayed tribunal adds.

Judges are ``Agent`` classes with a small JSON output schema (``{"pass": bool, "reason":
str}``) and ``model = "openai/loopback"``, answered by a ``LoopbackServer`` on 127.0.0.1
(a ``ThreadingHTTPServer``: concurrent requests are served in parallel). litellm does not
know that model to take a ``response_format``, so each judge puts the schema in its system
prompt.

1. Panel concurrency. A ``Tribunal`` of 16 judges whose model calls each take 0.5 s (the
   server answers ``Reply(content=..., delay=0.5)``). One untimed panel first warms litellm
   up (its import and first-call setup). Reported, as the median over rounds: the panel's
   own ``execution_time``, the wall time around ``call()`` (which adds the event loop's
   set-up and tear-down), the slowest judge's own time (``agent_execution_times``), and the
   ratios of each to the slowest judge and to the 0.5 s delay. For scale, 16 bare
   ``litellm.acompletion`` calls under ``asyncio.gather`` against the same server (after an
   untimed warm-up gather): the gather alone, and the wall time around ``asyncio.run``.
   (The server listens with a backlog of 128: with ``socketserver``'s default of 5, 16
   connections opened at once overflow it and the surplus clients retry a second later.)
2. Replay overhead. A tribunal of 3 differently-instructed judges (no delay) is recorded
   into a cassette in a temporary directory (a ``CassetteSlot`` in mode ``all``); the three
   model calls the judges make are recorded with ``complete()`` into a second cassette,
   from each judge's own messages and parameters (the script checks that both cassettes
   hold the same three request bodies). With the server stopped, each replay opens fresh
   replay slots (not timed), then times the tribunal's ``call()`` and, separately, the three
   bare ``complete()`` calls made one after the other. The order of the two alternates
   between replays; a few warm-up replays come first and are not counted. Reported: median
   and p90 wall ms and median process CPU ms of each, and the overhead = tribunal - bare
   (the difference of the medians, and the median of the per-replay differences).

Run::

    python benchmarks/tribunal.py [--rounds 7] [--replays 100] [--quick]

Targets: panel wall time <= 0.55 s (within 1.1x of the 0.5 s slowest judge); median replay
overhead of a 3-judge tribunal over its three bare calls <= 5 ms.
The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

from tabulate import tabulate

from pytest_harness._agent import Agent
from pytest_harness._cassettes import bodies, matching
from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._model import seam as model
from pytest_harness._pytest_glue import scope
from pytest_harness.testing import LoopbackServer, Reply
from pytest_harness.tribunal import Tribunal

PANEL_SIZE = 16
DELAY_S = 0.5
PANEL_TARGET_S = 0.55
OVERHEAD_TARGET_MS = 5.0
WARMUP_REPLAYS = 5
MODEL = "openai/loopback"
SCHEMA = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["pass", "reason"],
    "additionalProperties": False,
}
ANSWER = json.dumps({"pass": True, "reason": "The reply is polite, helpful and correct."})
INPUT = (
    "Customer: My parcel has not arrived yet, can I still redirect it to a neighbour?\n"
    "Support: Yes. While the parcel is in transit you can redirect it from the tracking page; "
    "choose 'Deliver to a neighbour' and enter their address. No signature is needed."
)
QUALITIES = ("polite", "helpful", "factually correct")

Timing: TypeAlias = tuple[float, float]  # (wall ms, process CPU ms)


def judge(name: str, quality: str) -> type[Agent]:
    """A judge class asking whether a support reply is ``quality``."""
    instructions = (
        f"You review one exchange between a customer and a support agent. Decide whether "
        f"the support agent's reply is {quality}. Set pass to true only if it clearly is, "
        "and give a one-sentence reason."
    )
    attributes = {"model": MODEL, "instructions": instructions, "output": SCHEMA}
    return type(name, (Agent,), {**attributes, "temperature": 0})


def panel_judges() -> list[type[Agent]]:
    return [judge(f"Judge{i:02d}", QUALITIES[i % len(QUALITIES)]) for i in range(PANEL_SIZE)]


REPLAY_JUDGES = [judge(q.split()[-1].capitalize(), q) for q in QUALITIES]


def delayed(body: dict[str, Any]) -> Reply:
    return Reply(content=ANSWER, delay=DELAY_S)


def at_once(body: dict[str, Any]) -> Reply:
    return Reply(content=ANSWER)


def make_slot(path: Path, mode: str) -> CassetteSlot:
    return CassetteSlot(path=path, mode=mode, nodeid="bench", run_id="bench")


def tribunal(agents: list[type[Agent]], params: dict[str, Any]) -> Tribunal:
    return Tribunal(input=INPUT, params=params, agents=agents)


def verdict_of(panel: Tribunal) -> Tribunal:
    """The panel, once checked that every judge answered and voted."""
    if panel.errors or not panel.verdict.passed:
        raise RuntimeError(f"{panel!r} failed: {panel.errors or panel.verdict}")
    return panel


def clocked(function: Callable[[], object]) -> Timing:
    """Wall and process CPU ms of ``function()`` (after a garbage collection)."""
    gc.collect()
    cpu, start = time.process_time(), time.perf_counter()
    function()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall * 1000, cpu * 1000


# 1. Panel concurrency ---------------------------------------------------------------------


def panel_round(params: dict[str, Any]) -> dict[str, float]:
    """One 16-judge panel: its execution_time, the wall around call(), the slowest judge (s)."""
    panel = tribunal(panel_judges(), params)
    wall, _ = clocked(lambda: verdict_of(panel.call()))
    assert panel.execution_time is not None
    slowest = max(entry["time"] for entry in panel.agent_execution_times)
    return {"execution_time": panel.execution_time, "wall": wall / 1000, "slowest": slowest}


async def gather_bare(params: dict[str, Any]) -> float:
    """16 concurrent ``litellm.acompletion`` calls; return the seconds of the gather alone."""
    litellm = model.lib()
    messages = [{"role": "user", "content": INPUT}]
    started = time.perf_counter()
    await asyncio.gather(
        *(
            litellm.acompletion(model=MODEL, messages=messages, caching=False, **params)
            for _ in range(PANEL_SIZE)
        )
    )
    return time.perf_counter() - started


def bare_round(params: dict[str, Any]) -> dict[str, float]:
    gc.collect()
    started = time.perf_counter()
    inner = asyncio.run(gather_bare(params))
    return {"gather": inner, "wall": time.perf_counter() - started}


def measure_panel(rounds: int) -> dict[str, float]:
    """Median figures of the panel and of the bare gather, rounds alternating, after warm-up."""
    panels, bares = [], []
    with LoopbackServer(handler=delayed) as server:
        panel_round(server.params)
        bare_round(server.params)
        for _ in range(rounds):
            panels.append(panel_round(server.params))
            bares.append(bare_round(server.params))
    figures = {key: statistics.median(r[key] for r in panels) for key in panels[0]}
    figures.update({f"bare_{key}": statistics.median(r[key] for r in bares) for key in bares[0]})
    return figures


def panel_row(what: str, seconds: float, slowest: float, target: bool) -> list[object]:
    verdict = ("OK" if seconds <= PANEL_TARGET_S else "OVER") if target else ""
    shown = f"<= {PANEL_TARGET_S} s" if target else ""
    return [what, seconds, seconds / slowest, seconds / DELAY_S, shown, verdict]


def panel_rows(figures: dict[str, float]) -> list[list[object]]:
    slowest = figures["slowest"]
    return [
        panel_row("Tribunal.execution_time", figures["execution_time"], slowest, True),
        panel_row("wall around Tribunal.call()", figures["wall"], slowest, True),
        panel_row("slowest judge (its own time)", slowest, slowest, False),
        panel_row("bare: asyncio.gather alone", figures["bare_gather"], slowest, False),
        panel_row("bare: wall around asyncio.run", figures["bare_wall"], slowest, False),
    ]


# 2. Replay overhead -----------------------------------------------------------------------


@contextmanager
def cassette(path: Path, mode: str) -> Iterator[CassetteSlot]:
    """A slot opened on ``path`` and in force for model calls until the block ends."""
    slot = make_slot(path, mode)
    slot.open()
    try:
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            yield slot
    except BaseException:
        slot.close(keep=False)
        raise
    if slot.close(keep=True) is None and mode != "none":
        raise RuntimeError(f"nothing was recorded into {path}")


def bare_calls(params: dict[str, Any]) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """The messages and keyword arguments of the model call each replay judge makes."""
    calls = []
    for judge_class in REPLAY_JUDGES:
        agent = judge_class(input=INPUT, params=params)
        if agent.uses_response_format(agent.resolved_model()):
            raise RuntimeError(f"{MODEL} takes response_format: the bare calls would differ")
        kwargs: dict[str, Any] = {"model": agent.resolved_model(), **agent.params}
        if agent.temperature is not None:
            kwargs.setdefault("temperature", agent.temperature)
        calls.append((agent.messages(schema_in_prompt=True), kwargs))
    return calls


def run_bare(calls: list[tuple[list[dict[str, Any]], dict[str, Any]]]) -> None:
    for messages, kwargs in calls:
        if model.complete(messages, **kwargs).content != ANSWER:
            raise RuntimeError("a bare call got an unexpected answer")


def recorded_bodies(path: Path) -> list[str]:
    interactions = json.loads(path.read_text(encoding="utf-8"))["interactions"]
    return sorted(
        matching.canonical_body(bodies.body_bytes(i["request"]["body"])) for i in interactions
    )


def record(folder: Path) -> tuple[Path, Path, dict[str, Any]]:
    """Record the tribunal and its bare calls; return both cassettes and the server params."""
    panel_path, bare_path = folder / "tribunal.yaml", folder / "bare.yaml"
    with LoopbackServer(handler=at_once) as server:
        params = server.params
        with cassette(panel_path, "all"):
            verdict_of(tribunal(REPLAY_JUDGES, params).call())
        with cassette(bare_path, "all"):
            run_bare(bare_calls(params))
    if recorded_bodies(panel_path) != recorded_bodies(bare_path):
        raise RuntimeError("the bare calls do not send what the tribunal's judges send")
    return panel_path, bare_path, params


def replay_once(paths: tuple[Path, Path], params: dict[str, Any], flip: bool) -> list[Timing]:
    """Time one replayed tribunal and its three bare calls, each in a fresh slot."""
    calls = bare_calls(params)

    def timed_panel() -> Timing:
        with cassette(paths[0], "none"):
            return clocked(lambda: verdict_of(tribunal(REPLAY_JUDGES, params).call()))

    def timed_bare() -> Timing:
        with cassette(paths[1], "none"):
            return clocked(lambda: run_bare(calls))

    if flip:
        bare = timed_bare()
        return [timed_panel(), bare]
    panel = timed_panel()
    return [panel, timed_bare()]


def measure_replay(folder: Path, replays: int) -> tuple[list[Timing], list[Timing]]:
    panel_path, bare_path, params = record(folder)
    for index in range(WARMUP_REPLAYS):
        replay_once((panel_path, bare_path), params, flip=index % 2 == 1)
    panels, bares = [], []
    for index in range(replays):
        panel, bare = replay_once((panel_path, bare_path), params, flip=index % 2 == 1)
        panels.append(panel)
        bares.append(bare)
    return panels, bares


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def replay_row(what: str, timings: list[Timing]) -> list[object]:
    wall = [w for w, _ in timings]
    cpu = statistics.median(c for _, c in timings)
    return [what, statistics.median(wall), percentile(wall, 0.9), cpu, "", ""]


def overhead_row(what: str, overhead: float) -> list[object]:
    verdict = "OK" if overhead <= OVERHEAD_TARGET_MS else "OVER"
    return [what, overhead, "", "", f"<= {OVERHEAD_TARGET_MS:.0f} ms", verdict]


def replay_table(panels: list[Timing], bares: list[Timing]) -> list[list[object]]:
    median_panel = statistics.median(w for w, _ in panels)
    median_bare = statistics.median(w for w, _ in bares)
    paired = statistics.median(p - b for (p, _), (b, _) in zip(panels, bares, strict=True))
    return [
        replay_row(f"Tribunal.call(), {len(REPLAY_JUDGES)} judges", panels),
        replay_row(f"{len(REPLAY_JUDGES)} x complete(), one after the other", bares),
        overhead_row("overhead (difference of medians)", median_panel - median_bare),
        overhead_row("overhead (median of paired differences)", paired),
    ]


# Report -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the 16-judge panel")
    parser.add_argument("--replays", type=int, default=100, help="replays of the tribunal")
    parser.add_argument("--quick", action="store_true", help="--rounds 3 --replays 20")
    return parser.parse_args(argv)


def panel_table(rounds: int) -> list[list[object]]:
    return panel_rows(measure_panel(rounds))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.rounds, args.replays = 3, 20
    panel = panel_table(args.rounds)
    with tempfile.TemporaryDirectory(prefix="harness-tribunal-") as tmp:
        replay = replay_table(*measure_replay(Path(tmp), args.replays))

    print(
        f"Panel of {PANEL_SIZE} judges, each model call delayed {DELAY_S} s by the server "
        f"(median of {args.rounds} rounds)"
    )
    headers = ["what", "median (s)", "vs slowest judge", f"vs {DELAY_S} s"]
    print(tabulate(panel, headers=[*headers, "target", "verdict"], floatfmt=".3f"))
    print()
    print(
        f"Replay of a {len(REPLAY_JUDGES)}-judge tribunal ({args.replays} replays, a fresh "
        "slot per replay, opened before timing)"
    )
    headers = ["what", "median (ms)", "p90 (ms)", "CPU median (ms)", "target", "verdict"]
    print(tabulate(replay, headers=headers, floatfmt=".2f"))
    over = [str(row[0]) for row in panel if row[-1] == "OVER"]
    over += [str(row[0]) for row in replay if row[-1] == "OVER"]
    print("OVER target: " + ", ".join(over) if over else "All targets met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
