"""Tribunals as assertions: ``assert_verdict``, and ``get_verdict`` that only returns it.

A failing verdict raises ``AssertionError`` whose message is the tribunal's vote table (judge,
model, vote, reason, time, tokens), the rule, and any judge errors. A panel where every judge
failed (or more than ``may_fail``) also fails the assertion, with the errors in view.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_harness._agent import AgentResult
from pytest_harness._report.text import REASON_WIDTH, clip, seconds, tabulate
from pytest_harness.errors import AllAgentsFailed, ConfigError, describe
from pytest_harness.tribunal._panel import Verdict, Vote
from pytest_harness.tribunal._tribunal import Tribunal


def assert_verdict(
    tribunal: type[Tribunal] | Tribunal,
    input: Any = None,
    *,
    context: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    memory: Any = None,
    **options: Any,
) -> Verdict:
    """Run a tribunal over ``input`` and fail unless its verdict passes.

    Args:
        tribunal: a Tribunal class (run with ``input``, ``context``, ``params``, ``memory``
            and ``options`` such as ``timeout`` or ``may_fail``), or a ready instance.
        input: what the judges judge; an agent's ``AgentResult`` stands for its text.

    Returns:
        The passing Verdict.

    Raises:
        AssertionError: the verdict failed, or too many judges failed to give one.
    """
    __tracebackhide__ = True
    panel = panel_for(tribunal, input, context=context, params=params, memory=memory, **options)
    try:
        panel.call()
    except AllAgentsFailed as error:
        raise AssertionError(failure_message(panel, error)) from None
    verdict = panel.verdict
    if verdict is None or not verdict:
        raise AssertionError(failure_message(panel))
    return verdict


def get_verdict(
    tribunal: type[Tribunal] | Tribunal,
    input: Any = None,
    *,
    context: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    memory: Any = None,
    **options: Any,
) -> Verdict:
    """Run a tribunal over ``input`` and return its ``Verdict``, passing or not.

    The same arguments as ``assert_verdict``; nothing is asserted.

    Raises:
        AllAgentsFailed: every judge failed, or more than the panel's ``may_fail``.
    """
    panel = panel_for(tribunal, input, context=context, params=params, memory=memory, **options)
    verdict = panel.call().verdict
    assert verdict is not None  # call() returns once the verdict is reached
    return verdict


def panel_for(tribunal: type[Tribunal] | Tribunal, input: Any = None, **arguments: Any) -> Tribunal:
    """The tribunal to run: an instance as given, or the class built with the arguments."""
    if isinstance(tribunal, Tribunal):
        shared = {"context", "params", "memory"}  # given as None by assert_verdict's defaults
        given = any(arguments.get(name) for name in shared) or set(arguments) - shared
        if input is not None or given:
            raise ConfigError(
                "assert_verdict got a Tribunal instance and arguments for it: pass either a "
                "Tribunal class with the arguments, or an instance built with them"
            )
        return tribunal
    if not (isinstance(tribunal, type) and issubclass(tribunal, Tribunal)):
        raise ConfigError(
            f"assert_verdict expects a Tribunal class or instance, got {tribunal!r} "
            f"(type={type(tribunal).__name__})"
        )
    return tribunal(input=_text_of(input), **arguments)


def _text_of(value: Any) -> Any:
    """An agent's AgentResult stands for what it said: its processed text, else its raw output."""
    if isinstance(value, AgentResult):
        return value.processed if isinstance(value.processed, str) else value.output
    return value


def failure_message(tribunal: Any, error: BaseException | None = None) -> str:
    """What a failed ``assert_verdict`` says: the verdict, every judge's vote, the errors."""
    verdict: Verdict | None = tribunal.verdict
    if verdict is None:
        head = f"{tribunal.name}: no verdict, {error}" if error else f"{tribunal.name}: not run"
        lines = [head.splitlines()[0]]
    else:
        lines = [
            f"{tribunal.name} verdict: {'PASS' if verdict else 'FAIL'}, "
            f"{verdict.tally} votes passed, value {verdict.value!r}",
            f"rule: {verdict.rule}",
        ]
    lines.append(f"input: {clip(repr(tribunal.input), 200)}")
    if verdict is not None and verdict.votes:
        lines += ["", vote_table(verdict)]
    if tribunal.errors:
        lines += ["", "judge errors:"]
        lines += [f"  {e['agent']}: {clip(describe(e['error']), 300)}" for e in tribunal.errors]
    return "\n".join(lines)


def vote_table(verdict: Verdict) -> str:
    rows = [
        [
            vote.agent,
            vote.model or "",
            _vote_text(vote.vote, vote.passed) + _score_text(vote),
            clip(vote.reason or "", REASON_WIDTH),
            seconds(vote.time),
            vote.tokens,
        ]
        for vote in verdict.votes
    ]
    return tabulate(rows, headers=["judge", "model", "vote", "reason", "time", "tokens"])


def _vote_text(vote: Any, passed: bool | None) -> str:
    if passed is None:
        return repr(vote)
    mark = "pass" if passed else "FAIL"
    return mark if isinstance(vote, bool) else f"{mark} ({vote!r})"


def _score_text(vote: Vote) -> str:
    """A judge's score against its threshold, when it gave one: ``(score 2, needs 3)``."""
    if vote.score is None:
        return ""
    needs = f", needs {vote.threshold:g}" if vote.threshold is not None else ""
    return f" (score {vote.score:g}{needs})"
