"""What one orchestrator run leaves behind, as plain frozen data a test can assert on.

``Run`` is the trajectory of one ``Orchestrator.run``: the final text and response, every
message of the conversation so far, every tool call (its arguments, its result or error,
when it ran, which request asked for it), the number of model requests, usage and cost
summed over them, the wall time and why the run stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pytest_harness.errors import HarnessError
from pytest_harness.orchestrator import trajectory
from pytest_harness.orchestrator.pipeline import RunEvent
from pytest_harness.response import ModelResponse, ToolCall, Usage

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

    def calls_of(self, name: str) -> list[ToolCallRecord]:
        """The calls of the tool ``name``, in order."""
        return [call for call in self.tool_calls if call.name == name]

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
        return trajectory.called(self, name, arguments)

    def assert_not_called(self, name: str) -> None:
        trajectory.not_called(self, name)

    def assert_called_times(self, name: str, times: int) -> None:
        trajectory.called_times(self, name, times)

    def assert_order(self, *names: str) -> None:
        """The tools ``names`` were called in this order (other calls may come between)."""
        trajectory.in_order(self, names)

    def assert_requests_at_most(self, limit: int) -> None:
        trajectory.requests_at_most(self, limit)

    def assert_stopped(self, reason: StopReason) -> None:
        trajectory.stopped(self, reason)

    def table(self) -> str:
        """The trajectory as a table (request, tool, arguments, result or error, time)."""
        return trajectory.table(self)


class RunFailed(HarnessError):
    """A model call failed mid-run (a provider error, an invalid response).

    Attributes:
        run: the run up to the failure (``stop_reason`` ``error``): its messages are kept.
    """

    def __init__(self, message: str, *, run: Run):
        super().__init__(message)
        self.run = run
