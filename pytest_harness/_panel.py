"""Running a tribunal's panel: judges as tasks on one loop, the deadline, hooks, the verdict.

Every judge starts at once (``before_agent`` fires as each is started); the panel then waits
for all of them, but at most ``timeout`` seconds in all. A judge still running at the
deadline is cancelled and becomes an ``AgentTimeout`` error; the others count. Results and
errors are then visited in panel order (as the seed does), firing ``after_agent`` or
``agent_error`` for each.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_harness import _runtime, model
from pytest_harness.agent import Agent, Result, totals
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
from pytest_harness.verdicts import (
    JudgeFailure,
    Verdict,
    Vote,
    default_vote,
    percent_agreement,
    reason_of,
    unanimous,
)

if TYPE_CHECKING:
    from pytest_harness.tribunal import Tribunal

UNSET: Any = object()  # "not given": None is a meaningful timeout / may_fail
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
    """What the ``agent`` and ``tribunal`` streams receive.

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


async def run(tribunal: Tribunal) -> None:
    """Run the panel, fill the tribunal's results, errors, times and verdict."""
    judges = [_instantiate(tribunal, spec) for spec in tribunal.agents]
    if not judges:
        raise ConfigError(
            f"{tribunal.name} has no judges: declare `agents = [...]` on the class or pass "
            "agents=[...]"
        )
    model.load()  # the import blocks the loop: it must not count against the deadline
    await fire(tribunal, "before_call")
    _emit(tribunal, "tribunal", Event(kind="started", tribunal=tribunal.name))
    started = time.perf_counter()
    try:
        await _run_judges(tribunal, judges, started)
        _check_failures(tribunal)
        verdict_input = await transform(tribunal, "before_verdict", list(tribunal.results))
        tribunal.verdict = await _verdict(tribunal, verdict_input)
    except BaseException as error:
        _emit(tribunal, "tribunal", Event(kind="failed", tribunal=tribunal.name, error=error))
        _runtime.tribunal_done(tribunal, error)
        raise
    await fire(tribunal, "after_verdict", tribunal.verdict)
    _emit(
        tribunal,
        "tribunal",
        Event(kind="finished", tribunal=tribunal.name, verdict=tribunal.verdict),
    )
    _runtime.tribunal_done(tribunal, None)


async def _run_judges(tribunal: Tribunal, judges: list[Any], started: float) -> None:
    tasks: list[asyncio.Task[Any]] = []
    starts: list[float] = []
    for index, judge in enumerate(judges):
        await fire(tribunal, "before_agent", judge, index)
        starts.append(time.perf_counter())
        tasks.append(asyncio.ensure_future(_judge(tribunal, judge, index)))
    try:
        _, pending = await asyncio.wait(tasks, timeout=tribunal.timeout)
    finally:
        for task in tasks:
            task.cancel()  # no-op for finished ones; also when the panel itself is cancelled
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if task not in pending and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    tribunal.execution_time = round(time.perf_counter() - started, 3)
    tribunal.results, tribunal.errors, tribunal.agent_execution_times = [], [], []
    for index, (task, judge) in enumerate(zip(tasks, judges, strict=True)):
        name = _name(judge)
        if task in pending:
            elapsed = round(time.perf_counter() - starts[index], 3)
            error: BaseException | None = AgentTimeout(
                f"Agent {name} timed out after {tribunal.timeout}s"
            )
            result: Any = None
            _agent_event(tribunal, "timed_out", name, index, time=elapsed, error=error)
        else:
            result, error, elapsed = task.result()
        tribunal.agent_execution_times.append({"agent": name, "time": elapsed})
        if error is None:
            tribunal.results.append(result)
            await fire(tribunal, "after_agent", result, index)
        else:
            tribunal.errors.append({"agent": name, "error": error})
            await fire(tribunal, "agent_error", name, error, index)
    await fire(tribunal, "after_call", tribunal.results, tribunal.errors)


async def _judge(tribunal: Tribunal, judge: Any, index: int) -> tuple[Any, Any, float]:
    """One judge's (result, error, seconds); never raises an ordinary exception."""
    from pytest_harness.tribunal import Tribunal

    name = _name(judge)
    _agent_event(tribunal, "started", name, index)
    started = time.perf_counter()
    try:
        if isinstance(judge, Agent):
            token = tribunal.token_stream
            on_token = (lambda delta: token(name, delta)) if token is not None else None
            value: Any = await judge.acall(on_token=on_token)
        elif isinstance(judge, Tribunal):
            value = (await judge.acall()).result()
        elif hasattr(judge, "acall"):
            value = await judge.acall()
        else:
            value = await asyncio.to_thread(judge.call)
        if not isinstance(value, Result) and callable(getattr(value, "result", None)):
            value = value.result()
    except _NOT_THE_JUDGES_FAULT:
        raise  # a cassette miss, a blocked connection, a setup mistake: the test must say so
    except Exception as error:
        elapsed = round(time.perf_counter() - started, 3)
        _agent_event(tribunal, "failed", name, index, time=elapsed, error=error)
        return None, error, elapsed
    elapsed = round(time.perf_counter() - started, 3)
    _agent_event(tribunal, "finished", name, index, time=elapsed, result=value)
    return value, None, elapsed


def _check_failures(tribunal: Tribunal) -> None:
    errors, may_fail = tribunal.errors, tribunal.may_fail
    if not errors:
        return
    every = not tribunal.results
    if not every and (may_fail is None or len(errors) <= may_fail):
        return
    listed = "\n".join(f"  {entry['agent']}: {describe(entry['error'])}" for entry in errors)
    what = (
        f"all {len(errors)} judges failed"
        if every
        else f"{len(errors)} of {len(errors) + len(tribunal.results)} judges failed "
        f"(may_fail={may_fail})"
    )
    raise AllAgentsFailed(f"{tribunal.name}: {what}:\n{listed}", errors=list(errors))


async def _verdict(tribunal: Tribunal, results: list[Any]) -> Verdict:
    strategy = tribunal._strategy or unanimous()
    evaluate = tribunal._evaluate or default_vote
    process = tribunal._process
    votes = []
    for result in results:
        if process is None:
            vote: Any = evaluate(result)
            passed: bool | None = strategy.vote_passes(vote)
        else:
            try:  # with a process function, votes are only shown, so a missing one is fine
                vote = evaluate(result)
                passed = strategy.vote_passes(vote)
            except Exception:
                vote, passed = None, None
        votes.append(_vote(result, vote, passed))
    if process is not None:
        value = await _maybe_await(process(results))
        rule = f"process: {getattr(process, '__name__', 'function')}"
    else:
        value = strategy.decide([vote.vote for vote in votes])
        rule = strategy.describe()
    if tribunal.may_fail is not None:
        rule += f"; may_fail={tribunal.may_fail}"
    usage, cost = totals(tribunal.results)
    return Verdict(
        tribunal=tribunal.name,
        value=value,
        passed=bool(value),
        rule=rule,
        votes=tuple(votes),
        errors=tuple(JudgeFailure(agent=e["agent"], error=e["error"]) for e in tribunal.errors),
        agreement=percent_agreement([v.passed for v in votes if v.passed is not None]),
        tokens=usage.total_tokens if usage is not None else 0,
        cost=cost,
        execution_time=tribunal.execution_time,
    )


def _vote(result: Any, vote: Any, passed: bool | None) -> Vote:
    return Vote(
        agent=getattr(result, "agent", "") or type(result).__name__,
        model=getattr(result, "model", None),
        vote=vote,
        passed=passed,
        reason=reason_of(result),
        time=getattr(result, "execution_time", None),
        tokens=getattr(result, "tokens", 0) or 0,
        cost=getattr(result, "cost", None),
    )


async def fire(tribunal: Tribunal, event: str, *args: Any) -> None:
    for hook in tribunal._hooks.get(event, ()):
        await _maybe_await(hook(*args))


async def transform(tribunal: Tribunal, event: str, value: Any) -> Any:
    """Pass ``value`` through the event's hooks; each return value replaces it (None keeps)."""
    for hook in tribunal._hooks.get(event, ()):
        returned = await _maybe_await(hook(value))
        if returned is not None:
            value = returned
    return value


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _agent_event(tribunal: Tribunal, kind: str, agent: str, index: int, **fields: Any) -> None:
    _emit(
        tribunal,
        "agent",
        Event(kind=kind, tribunal=tribunal.name, agent=agent, index=index, **fields),
    )


def _emit(tribunal: Tribunal, stream: str, event: Event) -> None:
    callback = tribunal.streams.get(stream)
    if callback is not None:
        callback(event)


def _instantiate(tribunal: Tribunal, spec: Any) -> Any:
    from pytest_harness.tribunal import Tribunal

    if isinstance(spec, type) and issubclass(spec, (Agent, Tribunal)):
        return spec(
            input=tribunal.input,
            context=tribunal.context,
            params=tribunal.params,
            memory=tribunal.memory,
        )
    if isinstance(spec, (Agent, Tribunal)) or hasattr(spec, "acall") or hasattr(spec, "call"):
        return spec
    raise ConfigError(
        f"{tribunal.name}: a judge must be an Agent or Tribunal class or instance (or have "
        f"call()/acall()), got {spec!r} (type={type(spec).__name__})"
    )


def _name(judge: Any) -> str:
    return str(getattr(judge, "name", None) or type(judge).__name__)
