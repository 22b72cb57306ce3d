"""A replayed panel of judges against the same model calls made bare, and a whole replayed
3-judge tribunal assertion.

Judges are ``benchmarks/tribunal.py``'s (``Agent`` classes with a small JSON output schema,
``model = "openai/loopback"``), recorded against a ``LoopbackServer`` on 127.0.0.1, which is
then stopped.

1. A panel of 16 judges in replay: ``Tribunal.call()`` beside a bare ``asyncio.gather`` of
   the same 16 model calls (each judge's own messages and parameters, through
   ``acomplete``), each replayed from its own cassette (a fresh ``CassetteSlot`` in mode
   ``none`` with a test's ``TrafficWatch``, opened untimed). The gather runs on the loop
   ``call()`` runs on (the sync facade's, ``_aio.run_sync``): under ``asyncio.run`` each
   round would also pay for a new event loop (0.2-1 ms here), on the bare side only.
   Each round prints the ratio panel / bare; the summary gives the median.
2. A 3-judge tribunal assertion in replay, whole: ``assert_verdict`` (the panel, the
   verdict, and the report record a test keeps, ``_report.tribunals.record``), in ms; for
   scale, one OpenAI SDK call over an in-memory ``httpx.MockTransport``
   (``replay_app.floor_client``), measured in the same rounds.

Run::

    python benchmarks/replay_panel.py [--rounds 15] [--quick]

Targets: the panel within 1.05x of the bare gather; the 3-judge assertion under 1 ms.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from replay_app import floor_batch, floor_client
from replay_app import record as record_app
from tabulate import tabulate
from tribunal import INPUT, REPLAY_JUDGES, at_once, make_slot, panel_judges, tribunal, verdict_of

from pytest_harness import _aio
from pytest_harness._agent import Agent
from pytest_harness._model import seam as model
from pytest_harness._pytest_glue import scope
from pytest_harness._pytest_glue.item import TrafficWatch
from pytest_harness._report import tribunals as report
from pytest_harness.testing import LoopbackServer
from pytest_harness.tribunal import Tribunal, assert_verdict

PANEL_TARGET = 1.05
ASSERT_TARGET_MS = 1.0
WARMUP = 5


@contextmanager
def replaying(path: Path, mode: str = "none", listeners: Any = None) -> Iterator[None]:
    """A slot on ``path`` with a test's traffic watch, opened untimed and in force."""
    watch = TrafficWatch("bench")
    slot = make_slot(path, mode)
    slot.on_response = watch.seen
    slot.open()
    active = scope.Scope(
        call_hooks=(slot,), degenerate="fail", replay=mode == "none", listeners=listeners or {}
    )
    try:
        with scope.activate(active):
            yield
    finally:
        slot.close(keep=mode != "none")


def calls_of(judges: list[type[Agent]], params: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """Each judge's model call: its messages and keyword arguments."""
    calls = []
    for judge_class in judges:
        agent = judge_class(input=INPUT, params=params)
        kwargs: dict[str, Any] = {"model": agent.resolved_model(), **agent.params}
        if agent.temperature is not None:
            kwargs.setdefault("temperature", agent.temperature)
        calls.append((agent.messages(schema_in_prompt=True), kwargs))
    return calls


def gather(calls: list[tuple[Any, dict[str, Any]]]) -> None:
    async def all_of() -> list[Any]:
        return await asyncio.gather(*(model.acomplete(m, **k) for m, k in calls))

    if len(_aio.run_sync(all_of())) != len(calls):
        raise RuntimeError("the bare gather lost a call")


class Record:
    """What a test keeps of a tribunal: its report record (``ItemReports`` does this)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def add(self, done: Any) -> None:
        self.records.append(report.record(done.tribunal, done.error, "bench", sample=None))


def assertion(path: Path, params: dict[str, Any]) -> float:
    kept = Record()
    with replaying(path, listeners={"tribunal": (kept.add,)}):
        start = time.perf_counter_ns()
        assert_verdict(Tribunal(input=INPUT, params=params, agents=REPLAY_JUDGES))
        wall = time.perf_counter_ns() - start
    if len(kept.records) != 1:
        raise RuntimeError("the tribunal's record was not kept")
    return wall / 1e6


def timed(path: Path, function: Callable[[], object]) -> float:
    with replaying(path):
        gc.collect()
        start = time.perf_counter_ns()
        function()
        return (time.perf_counter_ns() - start) / 1e6


def record(folder: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    paths = {name: folder / f"{name}.yaml" for name in ("panel", "bare", "assertion")}
    with LoopbackServer(handler=at_once) as server:
        params = server.params
        with replaying(paths["panel"], "all"):
            verdict_of(tribunal(panel_judges(), params).call())
        with replaying(paths["bare"], "all"):
            gather(calls_of(panel_judges(), params))
        with replaying(paths["assertion"], "all"):
            assert_verdict(Tribunal(input=INPUT, params=params, agents=REPLAY_JUDGES))
    return params, paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="--rounds 5")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="harness-panel-") as tmp:
        params, paths = record(Path(tmp))
        url, app = record_app(Path(tmp))
        floor = floor_client(app[10], url)
        judges = panel_judges()  # defined once, as a suite's judge classes are
        calls = calls_of(judges, params)
        panel = lambda: verdict_of(tribunal(judges, params).call())  # noqa: E731
        kinds: dict[str, Callable[[], float]] = {
            "panel": lambda: timed(paths["panel"], panel),
            "bare": lambda: timed(paths["bare"], lambda: gather(calls)),
            "assertion": lambda: assertion(paths["assertion"], params),
            "floor": lambda: statistics.median(w for w, _ in floor_batch(floor, list(range(10)))),
        }
        for _ in range(WARMUP):
            for measure in kinds.values():
                measure()
        found: list[dict[str, float]] = []
        for number in range(rounds):
            order = list(kinds.items()) if number % 2 == 0 else list(kinds.items())[::-1]
            figures = {name: measure() for name, measure in order}
            found.append(figures)
            panel_ms, bare_ms = figures["panel"], figures["bare"]
            print(
                f"round {number + 1}: panel {panel_ms:.2f} ms / bare {bare_ms:.2f} ms "
                f"= {panel_ms / bare_ms:.3f}x; assertion {figures['assertion']:.2f} ms "
                f"(SDK in-memory call {figures['floor']:.2f} ms)"
            )
    ratio = statistics.median(f["panel"] / f["bare"] for f in found)
    asserted = statistics.median(f["assertion"] for f in found)
    rows = [
        [
            "16-judge panel / bare gather",
            f"{ratio:.3f}x",
            f"<= {PANEL_TARGET}x",
            "OK" if ratio <= PANEL_TARGET else "OVER",
        ],
        [
            "3-judge assert_verdict, ms",
            f"{asserted:.2f}",
            f"< {ASSERT_TARGET_MS}",
            "OK" if asserted < ASSERT_TARGET_MS else "OVER",
        ],
        ["SDK in-memory call, ms", f"{statistics.median(f['floor'] for f in found):.2f}", "", ""],
    ]
    print()
    print(tabulate(rows, headers=["figure (median of rounds)", "value", "target", "verdict"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
