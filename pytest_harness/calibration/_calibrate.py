"""Running a calibration: a tribunal over every labelled item, then each bias probe."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pytest_harness import _aio
from pytest_harness._agent import Agent
from pytest_harness._pytest_glue import scope
from pytest_harness._report.text import judge_labels
from pytest_harness.calibration import _labels as labels
from pytest_harness.calibration import _probes as probing
from pytest_harness.calibration._labels import Labelled
from pytest_harness.calibration._probes import Probe
from pytest_harness.calibration._result import (
    Agreement,
    Calibration,
    ProbeResult,
    Score,
    check_thresholds,
)
from pytest_harness.errors import AllAgentsFailed, ConfigError, describe
from pytest_harness.tribunal import Tribunal

CONCURRENCY = 8


def calibrate(
    tribunal: type[Tribunal],
    labelled: Any,
    *,
    probes: Any = (),
    max_flip_rate: float = 0.1,
    base: Path | None = None,
    concurrency: int = CONCURRENCY,
    min_accuracy: float | None = None,
    min_kappa: float | None = None,
) -> Calibration:
    """Run ``tribunal`` over a labelled set and score it (sync facade of ``acalibrate``)."""
    return _aio.run_sync(
        acalibrate(
            tribunal,
            labelled,
            probes=probes,
            max_flip_rate=max_flip_rate,
            base=base,
            concurrency=concurrency,
            min_accuracy=min_accuracy,
            min_kappa=min_kappa,
        )
    )


async def acalibrate(
    tribunal: type[Tribunal],
    labelled: Any,
    *,
    probes: Any = (),
    max_flip_rate: float = 0.1,
    base: Path | None = None,
    concurrency: int = CONCURRENCY,
    min_accuracy: float | None = None,
    min_kappa: float | None = None,
) -> Calibration:
    """Run ``tribunal`` over a labelled set, then the probes; score it all.

    Args:
        tribunal: a Tribunal class; its judges must be classes (built per item).
        labelled: a .jsonl or .csv path, or a list (see ``labels.load``).
        probes: probe names (``examples``, ``position``, ``padding``) or instances.
        max_flip_rate: a judge flipping on more than this share of items is flagged.
        base: the folder a relative path is read from.
        concurrency: items run at a time (default 8); items whose requests could be
            identical run one after another, so a cassette replays them in order.
        min_accuracy: The panel's lowest passing accuracy, kept in the result (its
            ``failures()`` and record); calibrating never fails on it by itself
            (``assert_calibrated`` does).
        min_kappa: The panel's lowest passing Cohen's kappa, kept as ``min_accuracy`` is.

    Raises:
        ConfigError: a bad argument, judge or probe; ``LabelError`` for a bad labelled set.
    """
    specs = judges_of(tribunal)
    chosen = probing.resolve(probes)
    _check_arguments(max_flip_rate, concurrency)
    check_thresholds(min_accuracy, min_kappa)
    items = labels.load(labelled, base=base)
    names = judge_labels(spec.__name__ for spec in specs)
    kept = {
        topic: heard for topic, heard in scope.current().listeners.items() if topic != "tribunal"
    }
    with scope.override(listeners=kept):
        jobs = [_panel_job(tribunal, item, len(specs)) for item in items]
        asked = await in_groups(jobs, concurrency)
        found: list[ProbeResult] = []
        for probe in chosen:
            flips = await _probe(tribunal, probe, specs, items, asked, concurrency)
            found += _results(probe.name, names, flips, max_flip_rate)
    calibration = Calibration(
        tribunal=tribunal.__name__,
        source=labels.source_name(labelled),
        items=len(items),
        panel=Score.of("panel", items, [a.panel for a in asked], _why(items, asked, None)),
        judges=tuple(
            Score.of(name, items, [a.votes[at] for a in asked], _why(items, asked, at))
            for at, name in enumerate(names)
        ),
        agreement=Agreement.of([[v for v in a.votes if v is not None] for a in asked]),
        probes=tuple(found),
        max_flip_rate=max_flip_rate,
        min_accuracy=min_accuracy,
        min_kappa=min_kappa,
    )
    scope.emit("calibration", calibration)
    return calibration


def judges_of(tribunal: Any) -> list[Any]:
    """The tribunal class's judges, each a class (built with each item's input)."""
    if not (isinstance(tribunal, type) and issubclass(tribunal, Tribunal)):
        raise ConfigError(
            f"calibrate expects a Tribunal class (built once per labelled item), got "
            f"{tribunal!r:.80} (type={type(tribunal).__name__})"
        )
    specs = list(tribunal.agents)
    if not specs:
        raise ConfigError(f"{tribunal.__name__} has no judges: declare `agents = [...]`")
    for at, spec in enumerate(specs):
        if not (isinstance(spec, type) and issubclass(spec, (Agent, Tribunal))):
            raise ConfigError(
                f"{tribunal.__name__}.agents[{at}] is {spec!r:.80}: a calibration asks each "
                "judge about every item, so list judges as classes (Agent or Tribunal "
                "subclasses), not instances built with one input"
            )
    return specs


def _panel_job(tribunal: type[Tribunal], item: Labelled, n: int) -> Job[Asked]:
    return key(None, item.input, item.context), lambda: ask(
        tribunal, item.input, item.context, None, n
    )


async def _probe(
    tribunal: type[Tribunal],
    probe: Probe,
    specs: Sequence[Any],
    items: Sequence[Labelled],
    asked: Sequence[Asked],
    limit: int,
) -> list[tuple[list[str], int]]:
    """Per judge: the ids of the items it flipped on under ``probe``, and the items counted.

    Each judge is asked alone, on each item the probe applies to where it voted before.
    """
    units: list[tuple[int, int]] = []
    jobs: list[Job[Asked]] = []
    for at, spec in enumerate(specs):
        for index, item in enumerate(items):
            if asked[index].votes[at] is None or not probe.applies(spec, item):
                continue
            changed = probe.input(item)
            units.append((at, index))
            jobs.append(
                (
                    key(id(spec), changed, item.context),
                    _alone(tribunal, probe, spec, changed, item),
                )
            )
    perturbed = await in_groups(jobs, limit)
    found: list[tuple[list[str], int]] = [([], 0) for _ in specs]
    for (at, index), again in zip(units, perturbed, strict=True):
        original, vote = asked[index].votes[at], again.votes[0]
        if original is None or vote is None:
            continue  # the perturbed question got no vote: nothing to compare
        flipped, counted = found[at]
        if vote != probe.expected(original):
            flipped.append(items[index].id)
        found[at] = (flipped, counted + 1)
    return found


def _alone(
    tribunal: type[Tribunal], probe: Probe, spec: Any, changed: Any, item: Labelled
) -> Callable[[], Awaitable[Asked]]:
    """Starts a one-judge panel of the tribunal class: the perturbed judge on ``changed``."""
    return lambda: ask(tribunal, changed, item.context, [probe.judge(spec)], 1)


def _results(
    probe: str, names: Sequence[str], found: Sequence[tuple[list[str], int]], max_rate: float
) -> list[ProbeResult]:
    results = []
    for name, (flipped, counted) in zip(names, found, strict=True):
        rate = len(flipped) / counted if counted else None
        results.append(
            ProbeResult(
                judge=name,
                probe=probe,
                flips=len(flipped),
                applicable=counted,
                rate=rate,
                flagged=rate is not None and rate > max_rate,
                items=tuple(flipped),
            )
        )
    return results


def _why(items: Sequence[Labelled], asked: Sequence[Asked], at: int | None) -> dict[str, str]:
    return {item.id: a.errors[at] for item, a in zip(items, asked, strict=True) if at in a.errors}


def _check_arguments(max_flip_rate: Any, concurrency: Any) -> None:
    if isinstance(max_flip_rate, bool) or not isinstance(max_flip_rate, (int, float)):
        raise ConfigError(f"max_flip_rate={max_flip_rate!r}: give a share from 0 to 1")
    if not 0 <= max_flip_rate <= 1:
        raise ConfigError(f"max_flip_rate={max_flip_rate!r} is out of range: give 0 to 1")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency={concurrency!r}: give a whole number of 1 or more")


_T = TypeVar("_T")
Job = tuple[str, Callable[[], Awaitable[_T]]]  # (key, start): see in_groups


@dataclass(frozen=True, slots=True)
class Asked:
    """What one panel run gave: the verdict's pass/fail, each judge's, and why not.

    ``errors`` maps a judge's position (None: the panel) to why it gave nothing.
    """

    panel: bool | None
    votes: tuple[bool | None, ...]
    errors: dict[int | None, str]


async def ask(tribunal: type[Tribunal], input: Any, context: Any, agents: Any, n: int) -> Asked:
    """Run the tribunal once (with ``agents`` instead of its own when given)."""
    panel = tribunal(input=input, context=context, agents=agents)
    declared, panel.may_fail = panel.may_fail, None
    answered: list[int] = []
    failed: dict[int | None, str] = {}
    panel.on("after_agent", lambda result, index: answered.append(index))
    panel.on("agent_error", lambda name, error, index: failed.update({index: describe(error)}))
    try:
        await panel.acall()
    except AllAgentsFailed as error:
        failed[None] = describe(error).splitlines()[0]
        return Asked(panel=None, votes=(None,) * n, errors=failed)
    verdict = panel.verdict
    assert verdict is not None  # acall() returned: the verdict was reached
    votes, errors = _votes(verdict.votes, answered, n)
    passed: bool | None = bool(verdict.passed)
    if declared is not None and len(failed) > declared:
        passed = None
        errors[None] = f"{len(failed)} of the judges failed, more than may_fail={declared}"
    return Asked(panel=passed, votes=tuple(votes), errors={**failed, **errors})


def _votes(
    cast: Sequence[Any], answered: Sequence[int], n: int
) -> tuple[list[bool | None], dict[int | None, str]]:
    """Each judge's pass/fail by panel position (None: no vote), and why not."""
    votes: list[bool | None] = [None] * n
    if len(cast) != len(answered):  # a before_verdict hook changed the results
        why = "its vote is unknown: a before_verdict hook changed the panel's results"
        return votes, dict.fromkeys(answered, why)
    errors: dict[int | None, str] = {}
    for at, vote in zip(answered, cast, strict=True):
        votes[at] = vote.passed
        if vote.passed is None:
            errors[at] = f"no vote: the tribunal's evaluator read none in {vote.vote!r:.60}"
    return votes, errors


async def in_groups(jobs: Sequence[Job[_T]], limit: int) -> list[_T]:
    """Each job's result, ``limit`` keys at a time; jobs of one key run in the given order.

    The first error of a job cancels the rest and is raised.
    """
    if not jobs:
        return []
    groups: dict[str, list[int]] = {}
    for index, (key, _) in enumerate(jobs):
        groups.setdefault(key, []).append(index)
    results: dict[int, _T] = {}
    gate = asyncio.Semaphore(limit)

    async def chain(indices: list[int]) -> None:
        async with gate:
            for index in indices:
                results[index] = await jobs[index][1]()

    tasks = [asyncio.ensure_future(chain(indices)) for indices in groups.values()]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if task in done and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return [results[index] for index in range(len(jobs))]


def key(judge: int | None, input: Any, context: Any) -> str:
    """Which requests may be identical: same judge (None: the panel), input and context."""
    try:
        return json.dumps([judge, input, context], sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr([judge, input, context])


def assert_calibrated(
    tribunal: type[Tribunal],
    labelled: Any,
    *,
    min_accuracy: float | None = None,
    min_kappa: float | None = None,
    **options: Any,
) -> Calibration:
    """Calibrate ``tribunal`` on ``labelled`` and fail on a shortfall.

    Args:
        min_accuracy: the panel's accuracy must reach this share (0 to 1).
        min_kappa: the panel's Cohen's kappa must reach this (-1 to 1); an undefined kappa
            fails it.
        options: ``calibrate``'s (``probes``, ``max_flip_rate``, ``base``, ``concurrency``).

    Returns:
        The Calibration, when nothing failed.

    Raises:
        AssertionError: a threshold was missed or a judge was flagged (the message says
            which, with the tables).
    """
    __tracebackhide__ = True
    calibration = calibrate(
        tribunal, labelled, min_accuracy=min_accuracy, min_kappa=min_kappa, **options
    )
    return check(calibration)


async def aassert_calibrated(
    tribunal: type[Tribunal], labelled: Any, **options: Any
) -> Calibration:
    """Async ``assert_calibrated``: same arguments, same outcome."""
    __tracebackhide__ = True
    return check(await acalibrate(tribunal, labelled, **options))


def check(calibration: Calibration) -> Calibration:
    """``calibration`` if it meets its thresholds and no judge is flagged, else fail."""
    __tracebackhide__ = True
    failures = calibration.failures()
    if failures:
        raise AssertionError(failure_message(calibration, failures))
    return calibration


def failure_message(calibration: Calibration, failures: list[str]) -> str:
    """The failures, one per line, then the calibration's tables."""
    head = f"{calibration.tribunal} calibration failed:"
    return "\n".join([head, *(f"- {failure}" for failure in failures), "", calibration.table()])
