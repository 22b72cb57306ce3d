"""Running a panel: judges as tasks on one loop, the deadline, the hooks, and the verdict.

A ``Plan`` (a tribunal's declarations for one run) goes in; ``run_judges`` returns the
judges' ``Outcome`` and ``reach_verdict`` the same with its ``Verdict``. The verdict rules
(unanimous, majority, at_least, fraction, mean) are ``Strategy`` values.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from pytest_harness._agent import Agent, AgentResult, totals
from pytest_harness._aio import abandoned, in_daemon_thread, maybe_await
from pytest_harness._local.route import LOCAL_MODEL
from pytest_harness._model import seam as _model
from pytest_harness._pytest_glue import scope
from pytest_harness._statistics import percent_agreement
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

VOTE_KEYS = ("verdict", "pass", "passed", "result", "score")
REASON_KEYS = ("reason", "reasoning", "explanation", "rationale", "why")

Evaluator: TypeAlias = Callable[[Any], Any]  # one judge's result -> its vote
Process: TypeAlias = Callable[[list[Any]], Any]  # every result -> the verdict's value


@dataclass(frozen=True, slots=True, kw_only=True)
class Vote:
    """One judge's vote in a verdict.

    ``score`` and ``threshold`` are the judge's numeric score and the score it passes at,
    when its reply has them (the ready-made judges of ``pytest_harness.judges`` do), else
    None; verdict drift compares them between recordings.
    """

    agent: str
    model: str | None
    vote: Any
    passed: bool | None
    reason: str | None
    time: float | None
    tokens: int
    cost: float | None
    score: float | None = None
    threshold: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeFailure:
    """A judge that produced no vote, and why."""

    agent: str
    error: BaseException

    def describe(self) -> str:
        return describe(self.error)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """A panel's decision with everything behind it. Truthy when it passes.

    Attributes:
        tribunal: the tribunal's name.
        value: what the strategy or ``process`` function returned.
        passed: ``bool(value)``.
        rule: the rule in words (strategy, ``process`` function, ``may_fail``).
        votes: one per successful judge, in panel order.
        errors: the judges that failed.
        agreement: share of judge pairs that voted alike (None with fewer than two votes).
        tokens: total tokens of every judge that answered.
        cost: total USD cost (None when no judge's model has a known price).
        execution_time: wall seconds of the whole panel.
    """

    tribunal: str
    value: Any
    passed: bool
    rule: str
    votes: tuple[Vote, ...] = ()
    errors: tuple[JudgeFailure, ...] = ()
    agreement: float | None = None
    tokens: int = 0
    cost: float | None = None
    execution_time: float | None = None

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        state = "passed" if self.passed else "failed"
        errors = f", {len(self.errors)} judge error(s)" if self.errors else ""
        return f"<Verdict {self.tribunal} {state}: {self.tally} votes{errors}; {self.rule}>"

    @property
    def tally(self) -> str:
        """Passing votes over votes cast, for example ``"2/3"``."""
        return f"{sum(1 for v in self.votes if v.passed)}/{len(self.votes)}"

    @property
    def reasons(self) -> dict[str, str | None]:
        return {vote.agent: vote.reason for vote in self.votes}


async def decide(
    tribunal: str,
    results: list[Any],
    *,
    judged: Sequence[Any],
    errors: Sequence[Mapping[str, Any]],
    strategy: Strategy | None,
    evaluate: Evaluator | None,
    process: Process | None,
    may_fail: int | None,
    execution_time: float | None,
) -> Verdict:
    """The verdict over ``results`` (after ``before_verdict``) of a panel's judges.

    Args:
        tribunal: the tribunal's name.
        results: what the verdict is computed from.
        judged: every successful judge's result (for tokens and cost).
        errors: ``{"agent": name, "error": exception}`` per failed judge.
        strategy / evaluate: the rule and the per-judge evaluator (default: unanimous over
            ``default_vote``).
        process: a function of all results that decides instead of the strategy.
        may_fail: the judge errors tolerated, shown in the rule.
        execution_time: the panel's wall seconds.
    """
    strategy = strategy or unanimous()
    evaluate = evaluate or default_vote
    shown_only = process is not None
    votes = [_vote(result, strategy, evaluate, shown_only=shown_only) for result in results]
    if process is not None:
        value = await maybe_await(process(results))
        rule = f"process: {getattr(process, '__name__', 'function')}"
    else:
        value = strategy.decide([vote.vote for vote in votes])
        rule = strategy.describe()
    if may_fail is not None:
        rule += f"; may_fail={may_fail}"
    usage, cost = totals(judged)
    return Verdict(
        tribunal=tribunal,
        value=value,
        passed=bool(value),
        rule=rule,
        votes=tuple(votes),
        errors=tuple(JudgeFailure(agent=e["agent"], error=e["error"]) for e in errors),
        agreement=percent_agreement([v.passed for v in votes if v.passed is not None]),
        tokens=usage.total_tokens if usage is not None else 0,
        cost=cost,
        execution_time=execution_time,
    )


def _vote(result: Any, strategy: Strategy, evaluate: Evaluator, *, shown_only: bool) -> Vote:
    if not shown_only:
        vote: Any = evaluate(result)
        passed: bool | None = strategy.vote_passes(vote)
    else:
        try:  # with a process function, votes are only shown, so a missing one is fine
            vote = evaluate(result)
            passed = strategy.vote_passes(vote)
        except Exception:
            vote, passed = None, None
    processed = getattr(result, "processed", None)
    fields = processed if isinstance(processed, Mapping) else {}
    return Vote(
        agent=getattr(result, "agent", "") or type(result).__name__,
        model=getattr(result, "model", None),
        vote=vote,
        passed=passed,
        reason=reason_of(result),
        time=getattr(result, "execution_time", None),
        tokens=getattr(result, "tokens", 0) or 0,
        cost=getattr(result, "cost", None),
        score=_number(fields.get("score")),
        threshold=_number(fields.get("threshold")),
    )


def _number(value: Any) -> float | None:
    """A numeric field of a judge's parsed reply (``score``, ``threshold``), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def default_vote(result: Any) -> Any:
    """A judge's vote when the tribunal declares no evaluator: the first vote-like field."""
    processed = getattr(result, "processed", None)
    if isinstance(processed, Mapping):
        for key in VOTE_KEYS:
            if key in processed:
                return processed[key]
    raise ConfigError(
        f"cannot tell the vote of judge {getattr(result, 'agent', '?')}: its output "
        f"{processed!r:.120} has none of the fields {', '.join(VOTE_KEYS)}. Declare an "
        "evaluator: @rule('majority') def passed(result): return ..."
    )


def reason_of(result: Any) -> str | None:
    processed = getattr(result, "processed", None)
    if isinstance(processed, Mapping):
        for key in REASON_KEYS:
            if isinstance(processed.get(key), str):
                return str(processed[key])
    return None


@dataclass(frozen=True, slots=True)
class Strategy:
    """A rule turning votes into a pass/fail verdict. Build one with the functions below."""

    name: str
    threshold: float | None = None

    def vote_passes(self, vote: Any) -> bool:
        """Whether one vote counts as passing (for ``mean``: its score reaches the minimum)."""
        if self.name == "mean":
            return _score(vote) >= (self.threshold or 0)
        return passes(vote)

    def decide(self, votes: Sequence[Any]) -> bool:
        passing = sum(1 for vote in votes if self.vote_passes(vote))
        count = len(votes)
        if self.name == "unanimous":
            return count > 0 and passing == count
        if self.name == "majority":
            return passing > count / 2
        if self.name == "at_least":
            return passing >= (self.threshold or 0)
        if self.name == "fraction":
            return count > 0 and passing / count >= (self.threshold or 0)
        scores = [_score(vote) for vote in votes]
        return bool(scores) and sum(scores) / len(scores) >= (self.threshold or 0)

    def describe(self) -> str:
        """The rule in words, for failure messages and reports."""
        return {
            "unanimous": "unanimous: every vote must pass",
            "majority": "majority: more than half of the votes must pass",
            "at_least": f"at_least({_num(self.threshold)}): at least {_num(self.threshold)} "
            "votes must pass",
            "fraction": f"fraction({_num(self.threshold)}): at least {_num(self.threshold)} of "
            "the votes must pass",
            "mean": f"mean({_num(self.threshold)}): the mean score must be at least "
            f"{_num(self.threshold)}",
        }[self.name]


def unanimous() -> Strategy:
    return Strategy("unanimous")


def majority() -> Strategy:
    return Strategy("majority")


def at_least(k: int) -> Strategy:
    """At least ``k`` passing votes."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"at_least(k) expects a whole number k >= 1, got k={k!r}")
    return Strategy("at_least", k)


def fraction(minimum: float) -> Strategy:
    """A share of at least ``minimum`` (0 < minimum <= 1) of passing votes."""
    if isinstance(minimum, bool) or not isinstance(minimum, (int, float)):
        raise ConfigError(f"fraction(min) expects a number, got min={minimum!r}")
    if not 0 < minimum <= 1:
        raise ConfigError(f"fraction(min) expects 0 < min <= 1, got min={minimum!r}")
    return Strategy("fraction", float(minimum))


def mean(minimum: float) -> Strategy:
    """A mean numeric vote (a score) of at least ``minimum``."""
    if isinstance(minimum, bool) or not isinstance(minimum, (int, float)):
        raise ConfigError(f"mean(min) expects a number, got min={minimum!r}")
    return Strategy("mean", float(minimum))


_BUILDERS: dict[str, Callable[..., Strategy]] = {
    "unanimous": unanimous,
    "majority": majority,
    "at_least": at_least,
    "fraction": fraction,
    "mean": mean,
}
VALID_STRATEGIES = tuple(_BUILDERS)


def strategy(spec: str | Strategy, *args: Any) -> Strategy:
    """Resolve a strategy given by name (with its argument) or as a ``Strategy``.

    Raises:
        ValueError (ConfigError): unknown name, or wrong arguments.
    """
    if isinstance(spec, Strategy):
        if args:
            raise ConfigError(f"strategy {spec.name} is already built; drop the extra {args!r}")
        return spec
    builder = _BUILDERS.get(spec) if isinstance(spec, str) else None
    if builder is None:
        valid = ", ".join(VALID_STRATEGIES)
        raise ConfigError(f"unknown verdict strategy {spec!r}. Valid strategies: {valid}")
    try:
        return builder(*args)
    except TypeError:
        wanted = {"at_least": "(k)", "fraction": "(min)", "mean": "(min)"}.get(spec, "()")
        raise ConfigError(
            f"verdict strategy {spec!r} takes {wanted}, got arguments {args!r}"
        ) from None


def passes(vote: Any) -> bool:
    """A vote's truth: its truthiness, or for text a yes-like word (\"true\", \"pass\")."""
    return bool(vote) if not isinstance(vote, str) else vote.strip().lower() in _YES


_YES = frozenset({"true", "yes", "pass", "passed", "ok", "1"})


def _score(vote: Any) -> float:
    if isinstance(vote, (int, float)):
        return float(vote)
    raise ConfigError(
        f"the mean(min) strategy needs numeric votes (scores), got {vote!r}: make the "
        "evaluator return a number"
    )


def _num(value: float | None) -> str:
    return f"{value:g}" if value is not None else "?"


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
class TribunalEvent:
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


DEFAULT_TIMEOUT = 7.0  # seconds for the whole panel, unless the tribunal sets its own
# The default when a judge runs on the embedded model: its one llama.cpp server answers the
# judges one after another, on the CPU.
LOCAL_TIMEOUT = 180.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A tribunal's declarations for one run, as plain data."""

    name: str
    judges: tuple[Any, ...]
    hooks: Mapping[str, Sequence[Hook]]
    strategy: Strategy | None
    evaluate: Evaluator | None
    process: Process | None
    timeout: float | None
    may_fail: int | None
    streams: Mapping[str, Callable[..., Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What one run of a panel produced (a ``Tribunal`` shows its last one).

    Attributes:
        results: each judge's result, in panel order (judges that failed are not in it).
        errors: ``{"agent": name, "error": exception}`` for each judge that failed.
        agent_execution_times: ``{"agent": name, "time": seconds}`` for each judge.
        execution_time: wall seconds of the judges' run (None: not run).
        verdict: the verdict (None: not reached).
    """

    results: tuple[Any, ...] = ()
    errors: tuple[dict[str, Any], ...] = ()
    agent_execution_times: tuple[dict[str, Any], ...] = ()
    execution_time: float | None = None
    verdict: Verdict | None = None


async def run_judges(plan: Plan) -> Outcome:
    """Run every judge concurrently (hooks ``before_call`` to ``after_call``); no verdict yet.

    Raises:
        CassetteMiss, ConfigError, ...: an error of the test's set-up rather than a judge's.
    """
    if not scope.current().replay:  # a replayed judge's call needs no litellm
        _model.load()  # the import blocks the loop: it must not count against the deadline
    await fire(plan, "before_call")
    _emit(plan, "tribunal", TribunalEvent(kind="started", tribunal=plan.name))
    started = time.perf_counter()
    tasks: list[asyncio.Task[Any]] = []
    starts: list[float] = []
    for index, judge in enumerate(plan.judges):
        await fire(plan, "before_agent", judge, index)
        starts.append(time.perf_counter())
        tasks.append(asyncio.ensure_future(_judge(plan, judge, index)))
    pending = await _wait(plan, tasks, started)
    execution_time = round(time.perf_counter() - started, 3)
    results: list[Any] = []
    errors: list[dict[str, Any]] = []
    times: list[dict[str, Any]] = []
    for index, (task, judge) in enumerate(zip(tasks, plan.judges, strict=True)):
        name = _name(judge)
        if task in pending:
            elapsed = round(time.perf_counter() - starts[index], 3)
            error: BaseException | None = _timed_out(plan, judge, name)
            result: Any = None
            _agent_event(plan, "timed_out", name, index, time=elapsed, error=error)
        else:
            result, error, elapsed = task.result()
        times.append({"agent": name, "time": elapsed})
        if error is None:
            results.append(result)
            await fire(plan, "after_agent", result, index)
        else:
            errors.append({"agent": name, "error": error})
            await fire(plan, "agent_error", name, error, index)
    await fire(plan, "after_call", results, errors)
    return Outcome(
        results=tuple(results),
        errors=tuple(errors),
        agent_execution_times=tuple(times),
        execution_time=execution_time,
    )


async def reach_verdict(plan: Plan, judged: Outcome) -> Outcome:
    """``judged`` with its verdict (hooks ``before_verdict`` and ``after_verdict``).

    Raises:
        AllAgentsFailed: every judge failed, or more than ``may_fail`` did.
    """
    _check_failures(plan, judged)
    chosen = await transform(plan, "before_verdict", list(judged.results))
    verdict = await decide(
        plan.name,
        chosen,
        judged=judged.results,
        errors=judged.errors,
        strategy=plan.strategy,
        evaluate=plan.evaluate,
        process=plan.process,
        may_fail=plan.may_fail,
        execution_time=judged.execution_time,
    )
    await fire(plan, "after_verdict", verdict)
    _emit(plan, "tribunal", TribunalEvent(kind="finished", tribunal=plan.name, verdict=verdict))
    return replace(judged, verdict=verdict)


def announce_failure(plan: Plan, error: BaseException) -> None:
    """Tell the ``tribunal`` stream that the run failed, and why."""
    _emit(plan, "tribunal", TribunalEvent(kind="failed", tribunal=plan.name, error=error))


async def _wait(plan: Plan, tasks: list[asyncio.Task[Any]], started: float) -> set[Any]:
    """Wait for the judges until the deadline; the tasks cut off by it (cancelled)."""
    pending = set(tasks)  # every judge, should the panel itself be cancelled while waiting
    try:
        _, pending = await asyncio.wait(tasks, timeout=plan.timeout)
        if pending and _model.imported_since(started):
            # A replayed judge's call took the HTTP path and imported litellm inside the
            # deadline (its import and its first call's set-up, seconds under load): the
            # judges get their time again, from now.
            _, pending = await asyncio.wait(pending, timeout=plan.timeout)
    finally:
        for task in pending:  # past the deadline (cancelling a finished one does nothing)
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    pending |= set(filter(abandoned, tasks))  # cut off at the deadline when recorded
    for task in tasks:
        if task not in pending and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return pending


def _timed_out(plan: Plan, judge: Any, name: str) -> AgentTimeout:
    return AgentTimeout(
        f"Agent {name} timed out after {plan.timeout:g}s, the timeout of panel "
        f"{plan.name} ({DEFAULT_TIMEOUT:g} s unless the tribunal sets one; "
        f"{LOCAL_TIMEOUT:g} s for the embedded model). {_timeout_fix(plan, judge)}"
    )


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
    if not isinstance(value, AgentResult) and callable(getattr(value, "result", None)):
        value = value.result()
    return value


def _check_failures(plan: Plan, outcome: Outcome) -> None:
    """``AllAgentsFailed`` when every judge failed, or more than ``may_fail`` did."""
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
    callback = plan.streams.get("agent")
    if callback is not None:  # two events per judge: made only when someone listens
        callback(TribunalEvent(kind=kind, tribunal=plan.name, agent=agent, index=index, **fields))


def _emit(plan: Plan, stream: str, event: TribunalEvent) -> None:
    callback = plan.streams.get(stream)
    if callback is not None:
        callback(event)


def _name(judge: Any) -> str:
    return str(getattr(judge, "name", None) or type(judge).__name__)


def _timeout_fix(plan: Plan, judge: Any) -> str:
    """What to do about a judge that timed out: raise the timeout; first, when its reply
    had no token limit (its params set none, and it did not run on the embedded model,
    which sets one), give it one."""
    raise_it = f"timeout = ... on the Tribunal class, or {plan.name}(..., timeout=...)"
    params = getattr(judge, "params", None)
    limited = not isinstance(judge, Agent) or (
        isinstance(params, Mapping)
        and any(params.get(k) is not None for k in ("max_tokens", "max_completion_tokens"))
    )
    if limited or _resolved(judge) in (None, LOCAL_MODEL):
        return f"Raise it: {raise_it}; None for no limit"
    return (
        "The reply had no token limit (its params set no max_tokens), so the model could "
        f'write on past the deadline: set params = {{"max_tokens": ...}} on {judge.name}, '
        f"or raise the timeout ({raise_it})"
    )


def _resolved(judge: Agent) -> str | None:
    try:
        return judge.resolved_model()
    except ConfigError:
        return None
