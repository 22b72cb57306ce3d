"""Running a panel: judges as tasks on one loop, the deadline, the hooks, the verdict.

``run(plan, outcome)`` takes what a tribunal declared, frozen into a ``Plan`` (judges,
hooks, verdict rule, timeout, streams), and fills an ``Outcome`` (results, errors, times,
verdict) as it goes, so hooks and the tribunal see them while the panel runs.

Every judge starts at once (``before_agent`` fires as each is started); the panel then waits
for all of them, but at most ``timeout`` seconds in all. A judge still running at the
deadline is cancelled and becomes an ``AgentTimeout`` error; the others count. Results and
errors are then visited in panel order (as the seed does), firing ``after_agent`` or
``agent_error`` for each.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from pytest_harness import _litellm, scope
from pytest_harness._aio import in_daemon_thread, maybe_await
from pytest_harness.agent import Agent, Result
from pytest_harness.errors import (
    AgentTimeout,
    AllAgentsFailed,
    CassetteError,
    CassetteMiss,
    ConfigError,
    LocalModelError,
    NetworkBlocked,
    describe,
)
from pytest_harness.tribunal.strategies import Strategy
from pytest_harness.tribunal.verdicts import Evaluator, Verdict, decide

Hook: TypeAlias = Callable[..., Any]
# Errors of the test's set-up rather than of a judge: they fail the panel at once, unchanged
# (a cassette miss must say how to re-record, not be counted against may_fail).
_NOT_THE_JUDGES_FAULT = (
    CassetteMiss,
    CassetteError,
    NetworkBlocked,
    ConfigError,
    LocalModelError,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """What a tribunal's ``agent`` and ``tribunal`` streams receive.

    ``kind`` is ``started``, ``finished``, ``failed`` (error set) or, for a judge,
    ``timed_out``; ``verdict`` is set on a tribunal's ``finished``.
    """

    kind: str
    tribunal: str
    agent: str | None = None
    index: int | None = None
    time: float | None = None
    result: Any = None
    error: BaseException | None = None
    verdict: Verdict | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A tribunal's declarations for one run, as plain data."""

    name: str
    judges: tuple[Any, ...]
    hooks: Mapping[str, Sequence[Hook]]
    strategy: Strategy | None
    evaluate: Evaluator | None
    process: Callable[[list[Any]], Any] | None
    timeout: float | None
    may_fail: int | None
    streams: Mapping[str, Callable[..., Any]]


@dataclass(frozen=True, slots=True)
class TribunalDone:
    """What a run reports to the scope's listeners (topic ``"tribunal"``) when it ends.

    Attributes:
        tribunal: the tribunal (the run's outcome); ``verdict`` is None without a verdict.
        error: what the run raised (``AllAgentsFailed``, a cassette miss, ...), or None.
    """

    tribunal: Any
    error: BaseException | None


class Outcome(Protocol):
    """Where a run writes what it produced, as it goes (a ``Tribunal`` is one)."""

    results: list[Any]
    errors: list[dict[str, Any]]
    agent_execution_times: list[dict[str, Any]]
    execution_time: float | None
    verdict: Verdict | None


async def run(plan: Plan, outcome: Outcome) -> None:
    """Run the panel; fill ``outcome`` with results, errors, times and the verdict.

    Raises:
        AllAgentsFailed: every judge failed, or more than ``may_fail`` did.
    """
    if not plan.judges:
        raise ConfigError(
            f"{plan.name} has no judges: declare `agents = [...]` on the class or pass agents=[...]"
        )
    _litellm.load()  # the import blocks the loop: it must not count against the deadline
    await fire(plan, "before_call")
    _emit(plan, "tribunal", Event(kind="started", tribunal=plan.name))
    started = time.perf_counter()
    try:
        await _run_judges(plan, outcome, started)
        _check_failures(plan, outcome)
        chosen = await transform(plan, "before_verdict", list(outcome.results))
        outcome.verdict = await decide(
            plan.name,
            chosen,
            judged=outcome.results,
            errors=outcome.errors,
            strategy=plan.strategy,
            evaluate=plan.evaluate,
            process=plan.process,
            may_fail=plan.may_fail,
            execution_time=outcome.execution_time,
        )
    except BaseException as error:
        _emit(plan, "tribunal", Event(kind="failed", tribunal=plan.name, error=error))
        scope.emit("tribunal", TribunalDone(outcome, error))
        raise
    await fire(plan, "after_verdict", outcome.verdict)
    _emit(plan, "tribunal", Event(kind="finished", tribunal=plan.name, verdict=outcome.verdict))
    scope.emit("tribunal", TribunalDone(outcome, None))


async def _run_judges(plan: Plan, outcome: Outcome, started: float) -> None:
    tasks: list[asyncio.Task[Any]] = []
    starts: list[float] = []
    for index, judge in enumerate(plan.judges):
        await fire(plan, "before_agent", judge, index)
        starts.append(time.perf_counter())
        tasks.append(asyncio.ensure_future(_judge(plan, judge, index)))
    try:
        _, pending = await asyncio.wait(tasks, timeout=plan.timeout)
    finally:
        for task in tasks:
            task.cancel()  # no-op for finished ones; also when the panel itself is cancelled
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if task not in pending and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    outcome.execution_time = round(time.perf_counter() - started, 3)
    outcome.results, outcome.errors, outcome.agent_execution_times = [], [], []
    for index, (task, judge) in enumerate(zip(tasks, plan.judges, strict=True)):
        name = _name(judge)
        if task in pending:
            elapsed = round(time.perf_counter() - starts[index], 3)
            error: BaseException | None = AgentTimeout(
                f"Agent {name} timed out after {plan.timeout}s"
            )
            result: Any = None
            _agent_event(plan, "timed_out", name, index, time=elapsed, error=error)
        else:
            result, error, elapsed = task.result()
        outcome.agent_execution_times.append({"agent": name, "time": elapsed})
        if error is None:
            outcome.results.append(result)
            await fire(plan, "after_agent", result, index)
        else:
            outcome.errors.append({"agent": name, "error": error})
            await fire(plan, "agent_error", name, error, index)
    await fire(plan, "after_call", outcome.results, outcome.errors)


async def _judge(plan: Plan, judge: Any, index: int) -> tuple[Any, Any, float]:
    """One judge's (result, error, seconds); never raises an ordinary exception."""
    name = _name(judge)
    _agent_event(plan, "started", name, index)
    started = time.perf_counter()
    try:
        value = await _verdict_of(plan, judge, name)
    except _NOT_THE_JUDGES_FAULT:
        raise  # a cassette miss, a blocked connection, a setup mistake: the test must say so
    except Exception as error:
        elapsed = round(time.perf_counter() - started, 3)
        _agent_event(plan, "failed", name, index, time=elapsed, error=error)
        return None, error, elapsed
    elapsed = round(time.perf_counter() - started, 3)
    _agent_event(plan, "finished", name, index, time=elapsed, result=value)
    return value, None, elapsed


async def _verdict_of(plan: Plan, judge: Any, name: str) -> Any:
    """Call one judge: an Agent (streaming tokens when asked), a tribunal, anything callable."""
    if isinstance(judge, Agent):
        token = plan.streams.get("token")
        on_token = (lambda delta: token(name, delta)) if token is not None else None
        value: Any = await judge.acall(on_token=on_token)
    elif hasattr(judge, "acall"):
        value = await judge.acall()  # a nested tribunal returns itself: its result() is used
    else:  # a thread that holds nothing at exit, should the judge hang past the timeout
        value = await in_daemon_thread(judge.call, name=f"harness-judge {name}")
    if not isinstance(value, Result) and callable(getattr(value, "result", None)):
        value = value.result()
    return value


def _check_failures(plan: Plan, outcome: Outcome) -> None:
    errors, may_fail = outcome.errors, plan.may_fail
    if not errors:
        return
    every = not outcome.results
    if not every and (may_fail is None or len(errors) <= may_fail):
        return
    listed = "\n".join(f"  {entry['agent']}: {describe(entry['error'])}" for entry in errors)
    what = (
        f"all {len(errors)} judges failed"
        if every
        else f"{len(errors)} of {len(errors) + len(outcome.results)} judges failed "
        f"(may_fail={may_fail})"
    )
    raise AllAgentsFailed(f"{plan.name}: {what}:\n{listed}", errors=list(errors))


async def fire(plan: Plan, event: str, *args: Any) -> None:
    """Call the event's hooks in order (coroutine hooks are awaited)."""
    for hook in plan.hooks.get(event, ()):
        await maybe_await(hook(*args))


async def transform(plan: Plan, event: str, value: Any) -> Any:
    """Pass ``value`` through the event's hooks; each return value replaces it (None keeps)."""
    for hook in plan.hooks.get(event, ()):
        returned = await maybe_await(hook(value))
        if returned is not None:
            value = returned
    return value


def _agent_event(plan: Plan, kind: str, agent: str, index: int, **fields: Any) -> None:
    _emit(plan, "agent", Event(kind=kind, tribunal=plan.name, agent=agent, index=index, **fields))


def _emit(plan: Plan, stream: str, event: Event) -> None:
    callback = plan.streams.get(stream)
    if callback is not None:
        callback(event)


def _name(judge: Any) -> str:
    return str(getattr(judge, "name", None) or type(judge).__name__)
