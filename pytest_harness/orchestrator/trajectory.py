"""Assertions on a run's trajectory, and the table a failing one prints.

``Run``'s ``assert_*`` methods call these. Each checks one thing a test of a tool-using
agent needs (a tool was called, with arguments matching a dict or a predicate; not called;
called N times; tools called in an order; at most N requests; the stop reason) and, when it
fails, raises ``AssertionError`` with what was expected, what happened, and the whole
trajectory as a table: request, tool, arguments, result or error, time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias, TypeVar


class Call(Protocol):
    """What the table reads of a tool call (``run.ToolCallRecord`` has it)."""

    @property
    def request(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def raw_arguments(self) -> str: ...

    @property
    def result(self) -> str | None: ...

    @property
    def error(self) -> str | None: ...

    @property
    def arguments(self) -> Mapping[str, Any] | None: ...

    @property
    def ok(self) -> bool: ...

    @property
    def seconds(self) -> float: ...


C = TypeVar("C", bound=Call)


class Event(Protocol):
    """What the table reads of a middleware event (``pipeline.RunEvent`` has it)."""

    @property
    def request(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def detail(self) -> str: ...


class Run(Protocol[C]):
    """What the assertions read of a run (``run.Run`` has it)."""

    @property
    def requests(self) -> int: ...

    @property
    def stop_reason(self) -> str: ...

    @property
    def tool_calls(self) -> Sequence[C]: ...

    @property
    def tools_called(self) -> list[str]: ...

    @property
    def events(self) -> Sequence[Event]: ...

    def calls_of(self, name: str) -> list[C]: ...


ArgumentCheck: TypeAlias = "Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None"
_WIDTH = 60


def called(run: Run[C], name: str, arguments: ArgumentCheck = None) -> C:
    """The first call of ``name`` whose arguments match; else an AssertionError."""
    calls = run.calls_of(name)
    for call in calls:
        if _matches(call.arguments or {}, arguments):
            return call
    wanted = f"{name} to be called" + (f" with {_show(arguments)}" if arguments else "")
    seen = f"it was called {len(calls)} time(s)" if calls else "it was never called"
    raise AssertionError(_message(run, f"expected {wanted}; {seen}"))


def not_called(run: Run[Any], name: str) -> None:
    calls = run.calls_of(name)
    if calls:
        raise AssertionError(
            _message(run, f"expected {name} not to be called; it was, {len(calls)} time(s)")
        )


def called_times(run: Run[Any], name: str, times: int) -> None:
    count = len(run.calls_of(name))
    if count != times:
        raise AssertionError(
            _message(run, f"expected {name} to be called {times} time(s); it was {count}")
        )


def in_order(run: Run[Any], names: Sequence[str]) -> None:
    """The tools ``names`` were called in this order (others may come between)."""
    remaining = iter(run.tools_called)
    if not all(any(name == seen for seen in remaining) for name in names):
        raise AssertionError(
            _message(
                run,
                f"expected the tools in the order {list(names)}; the order was {run.tools_called}",
            )
        )


def requests_at_most(run: Run[Any], limit: int) -> None:
    if run.requests > limit:
        raise AssertionError(
            _message(run, f"expected at most {limit} model requests; the run made {run.requests}")
        )


def stopped(run: Run[Any], reason: str) -> None:
    if run.stop_reason != reason:
        raise AssertionError(
            _message(
                run,
                f"expected the run to stop with {reason!r}; it stopped with {run.stop_reason!r}",
            )
        )


def _matches(actual: Mapping[str, Any], expected: ArgumentCheck) -> bool:
    if expected is None:
        return True
    if callable(expected):
        return bool(expected(actual))
    return all(key in actual and actual[key] == value for key, value in expected.items())


def _show(arguments: ArgumentCheck) -> str:
    if callable(arguments):
        return f"arguments accepted by {getattr(arguments, '__name__', 'the predicate')}"
    return json.dumps(arguments, default=str)


def _message(run: Run[Any], problem: str) -> str:
    head = f"{problem}.\nstop reason: {run.stop_reason}; requests: {run.requests}"
    return f"{head}\n\n{table(run)}"


def table(run: Run[Any]) -> str:
    """The trajectory: one row per tool call (request, tool, arguments, result or error, time)
    and per middleware event (a retry, a compaction, a warning: its kind in brackets)."""
    from pytest_harness.report.tables import tabulate

    if not run.tool_calls and not run.events:
        return "(no tool calls)"
    rows = [
        (event.request, 0, [event.request, f"[{event.kind}]", "", _clip(event.detail), ""])
        for event in run.events
    ] + [
        (
            call.request,
            1,
            [
                call.request,
                call.name,
                _clip(call.raw_arguments),
                _clip(call.result if call.ok else f"ERROR {call.error}"),
                f"{call.seconds:.2f}s",
            ],
        )
        for call in run.tool_calls
    ]
    rows.sort(key=lambda row: row[:2])  # stable: events of a request before its tool calls
    headers = ["request", "tool", "arguments", "result or error", "time"]
    return tabulate([row for _, _, row in rows], headers=headers)


def _clip(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"
