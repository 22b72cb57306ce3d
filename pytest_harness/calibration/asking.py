"""Asking a tribunal once, and many times at once: what one panel run gave, per judge.

``ask`` runs a tribunal class on one input and reads the verdict's pass/fail and each
judge's vote by panel position (from the panel's ``after_agent`` / ``agent_error`` hooks),
with why a judge or the panel gave nothing. The panel runs with ``may_fail=None`` and the
class's own ``may_fail`` is applied afterwards, so a judge's vote counts even on an item
where another judge's failure cost the panel its verdict.

``in_groups`` runs many such asks at once, a few keys at a time, the asks of one key one
after another: a cassette answers identical requests in recorded order, so requests that
may be identical must be made in the same order when recording and replaying.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_harness.errors import AllAgentsFailed, describe
from pytest_harness.tribunal.declare import Tribunal

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
    votes, errors = _votes(panel.verdict.votes, answered, n)
    passed: bool | None = bool(panel.verdict.passed)
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
