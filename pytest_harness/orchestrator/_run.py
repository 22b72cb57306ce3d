"""What one orchestrator run leaves behind, as plain frozen data a test can assert on.

``Run`` is the trajectory of one ``Orchestrator.run``: the question it answered, the final
text and each response, every message of the conversation so far, every tool call (its
arguments, its result or error, when it ran, which request asked for it), the number of
model requests, usage and cost summed over them, the wall time and why the run stopped.

The trajectory assertions (``run.assert_called(...)``) and the table a failing one prints
are here too, with the messages a run adds to its conversation, in OpenAI's chat form.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pytest_harness._aio import maybe_await
from pytest_harness._response import ModelResponse, ToolCall, Usage
from pytest_harness.orchestrator._pipeline import RunEvent
from pytest_harness.orchestrator._tools import Tool, tool

StopReason: TypeAlias = Literal[
    "done",
    "max_requests",
    "max_tool_rounds",
    "tool_error_limit",
    "doom_loop",
    "usage_limit",
    "aborted",
    "error",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRecord:
    """One tool call the model asked for, and what came of it.

    Attributes:
        id: the provider's call id.
        name: the tool's name as the model gave it.
        arguments: the arguments parsed from JSON, or None when they did not parse.
        raw_arguments: the arguments exactly as the model sent them.
        result: the text sent back to the model, or None when the call failed.
        error: why the call failed (sent back to the model as the result), or None.
        started: ``time.time()`` when the call started.
        ended: ``time.time()`` when it ended.
        request: which model request (1 for the first) asked for it.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str = field(repr=False)
    result: str | None
    error: str | None
    started: float
    ended: float
    request: int

    @classmethod
    def ended_now(
        cls, call: ToolCall, request: int, result: str | None, error: str | None, started: float
    ) -> ToolCallRecord:
        """The record of ``call`` as it ends now (``started`` 0: it never started)."""
        ended = time.time()
        return cls(
            id=call.id,
            name=call.name,
            arguments=call.arguments,
            raw_arguments=call.raw_arguments,
            result=result,
            error=error,
            started=started or ended,
            ended=ended,
            request=request,
        )

    @property
    def ok(self) -> bool:
        """Whether the tool ran and returned."""
        return self.error is None

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    @property
    def sent(self) -> str:
        """What the model received for this call."""
        return f"Error: {self.error}" if self.error is not None else self.result or ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """The trajectory of one orchestrator run.

    Attributes:
        output: the final visible text ("" when the run ended without one).
        response: the last model response, or None when no request completed.
        messages: every message of the conversation, this run's and the earlier ones'.
        tool_calls: every tool call of this run, in the order the model asked for them.
        requests: how many model requests this run made.
        usage: tokens summed over this run's requests.
        cost: cost summed over the requests litellm could price, or None.
        wall_time: seconds from start to stop.
        stop_reason: ``done`` (no more tool calls), ``max_requests``, ``max_tool_rounds``
            (tool calls asked for after the last allowed batch), ``tool_error_limit``,
            ``doom_loop`` (the same tool call again after a warning), ``usage_limit``,
            ``aborted`` or ``error`` (a model call failed: ``RunFailed`` carries this run).
        events: what the middleware did (retries, compactions, warnings), in order.
        question: the user message this run answered.
        responses: this run's model responses, in order (the last is ``response``).
    """

    output: str
    response: ModelResponse | None
    messages: tuple[Mapping[str, Any], ...]
    tool_calls: tuple[ToolCallRecord, ...]
    requests: int
    usage: Usage
    cost: float | None
    wall_time: float
    stop_reason: StopReason
    events: tuple[RunEvent, ...] = ()
    question: str = ""
    responses: tuple[ModelResponse, ...] = field(default=(), repr=False)

    def calls_of(self, name: str) -> list[ToolCallRecord]:
        """The calls of the tool ``name``, in order."""
        return [call for call in self.tool_calls if call.name == name]

    @property
    def recorded_time(self) -> float | None:
        """In replay, the seconds the model took to answer this run's requests when they were
        recorded (their recorded latencies added up); None unless each one kept its latency."""
        if not self.responses or not all(r.latency_recorded for r in self.responses):
            return None
        return sum(r.latency_s for r in self.responses)

    @property
    def tools_called(self) -> list[str]:
        """The names of the tools called, in order (repeats included)."""
        return [call.name for call in self.tool_calls]

    # Trajectory assertions: each raises AssertionError with the trajectory as a table.

    def assert_called(
        self,
        name: str,
        arguments: Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> ToolCallRecord:
        """``name`` was called (with arguments containing ``arguments``, or accepted by a
        predicate); returns the first matching call."""
        return called(self, name, arguments)

    def assert_not_called(self, name: str) -> None:
        not_called(self, name)

    def assert_called_times(self, name: str, times: int) -> None:
        called_times(self, name, times)

    def assert_order(self, *names: str) -> None:
        """The tools ``names`` were called in this order (other calls may come between)."""
        in_order(self, names)

    def assert_requests_at_most(self, limit: int) -> None:
        requests_at_most(self, limit)

    def assert_stopped(self, reason: StopReason) -> None:
        stopped(self, reason)

    def table(self) -> str:
        """The trajectory as a table (request, tool, arguments, result or error, time)."""
        return table(self)


ArgumentCheck: TypeAlias = "Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None"
_WIDTH = 60


def called(run: Run, name: str, arguments: ArgumentCheck = None) -> ToolCallRecord:
    """The first call of ``name`` whose arguments match; else an AssertionError."""
    calls = run.calls_of(name)
    for call in calls:
        if _matches(call.arguments or {}, arguments):
            return call
    wanted = f"{name} to be called" + (f" with {_show(arguments)}" if arguments else "")
    seen = f"it was called {len(calls)} time(s)" if calls else "it was never called"
    raise AssertionError(_message(run, f"expected {wanted}; {seen}"))


def not_called(run: Run, name: str) -> None:
    calls = run.calls_of(name)
    if calls:
        raise AssertionError(
            _message(run, f"expected {name} not to be called; it was, {len(calls)} time(s)")
        )


def called_times(run: Run, name: str, times: int) -> None:
    count = len(run.calls_of(name))
    if count != times:
        raise AssertionError(
            _message(run, f"expected {name} to be called {times} time(s); it was {count}")
        )


def in_order(run: Run, names: Sequence[str]) -> None:
    """The tools ``names`` were called in this order (others may come between)."""
    remaining = iter(run.tools_called)
    if not all(any(name == seen for seen in remaining) for name in names):
        raise AssertionError(
            _message(
                run,
                f"expected the tools in the order {list(names)}; the order was {run.tools_called}",
            )
        )


def requests_at_most(run: Run, limit: int) -> None:
    if run.requests > limit:
        raise AssertionError(
            _message(run, f"expected at most {limit} model requests; the run made {run.requests}")
        )


def stopped(run: Run, reason: str) -> None:
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


def _message(run: Run, problem: str) -> str:
    head = f"{problem}.\nstop reason: {run.stop_reason}; requests: {run.requests}"
    return f"{head}\n\n{table(run)}"


def table(run: Run) -> str:
    """The trajectory: one row per tool call (request, tool, arguments, result or error, time)
    and per middleware event (a retry, a compaction, a warning: its kind in brackets)."""
    from pytest_harness._report.text import tabulate

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


def assistant(response: ModelResponse) -> dict[str, Any]:
    """The assistant message of ``response``, its tool calls included."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments},
            }
            for call in response.tool_calls
        ]
    return message


def tool_result(record: ToolCallRecord) -> dict[str, Any]:
    """The tool message answering ``record``'s call (its result, or ``Error: ...``)."""
    return {"role": "tool", "tool_call_id": record.id, "content": record.sent}


def question_tool(answer: Callable[..., Any]) -> Tool:
    """The built-in ``question`` tool: the model asks, ``answer`` (sync or async) replies."""

    async def question(question: str) -> str:
        """Ask the user a question and wait for the answer.

        Args:
            question: the question, as the user should read it.
        """
        return str(await maybe_await(answer(question)))

    return tool(question)
