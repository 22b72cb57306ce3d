"""Tribunals as assertions: ``assert_verdict``.

A failing verdict raises ``AssertionError`` whose message is the tribunal's vote table (judge,
model, vote, reason, time, tokens), the rule, and any judge errors. A panel where every judge
failed (or more than ``may_fail``) also fails the assertion, with the errors in view.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_harness.agent import Result
from pytest_harness.errors import AllAgentsFailed, ConfigError
from pytest_harness.report import tribunals as report
from pytest_harness.tribunal.declare import Tribunal
from pytest_harness.tribunal.verdicts import Verdict


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
        input: what the judges judge; an agent's ``Result`` stands for its text.

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
        raise AssertionError(report.failure_message(panel, error)) from None
    verdict = panel.verdict
    if not verdict:
        raise AssertionError(report.failure_message(panel))
    return verdict  # type: ignore[no-any-return]


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
    """An agent's Result stands for what it said: its processed text, else its raw output."""
    if isinstance(value, Result):
        return value.processed if isinstance(value.processed, str) else value.output
    return value
