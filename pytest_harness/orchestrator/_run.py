"""What one orchestrator run leaves behind, as plain frozen data a test can assert on."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from pytest_harness import _trajectory as trajectory
from pytest_harness._aio import maybe_await
from pytest_harness._model.response import ModelResponse, ToolCall, Usage
from pytest_harness._trajectory import Assertions
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
        id: the provider's call id, or ``call_<request>_<n>`` for a call that came without
            one (``named_calls``: its result answers it by that id).
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
            id=call.id or "",  # never "": the loop named each call (named_calls)
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
class Run(Assertions[ToolCallRecord]):
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

    Its trajectory assertions (``assert_called``, ``assert_not_called``,
    ``assert_called_times``, ``assert_order``, ``assert_requests_at_most``), ``calls_of``,
    ``tools_called`` and ``table`` are the ones ``harness.trajectory`` has too;
    ``assert_stopped`` is a run's own.
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

    @property
    def recorded_time(self) -> float | None:
        """In replay, the seconds the model took to answer this run's requests when they were
        recorded (their recorded latencies added up); None unless each one kept its latency."""
        if not self.responses or not all(r.latency_recorded for r in self.responses):
            return None
        return sum(r.latency_s for r in self.responses)

    # What the shared trajectory assertions (``Assertions``) read besides the tool calls.

    @property
    def request_count(self) -> int:
        """How many model requests this run made (``requests``)."""
        return self.requests

    @property
    def status(self) -> str:
        return f"stop reason: {self.stop_reason}; requests: {self.requests}"

    @property
    def actor(self) -> str:
        return "the run"

    def assert_stopped(self, reason: StopReason) -> None:
        stopped(self, reason)


def stopped(run: Run, reason: str) -> None:
    if run.stop_reason != reason:
        raise AssertionError(
            trajectory.message(
                run,
                f"expected the run to stop with {reason!r}; it stopped with {run.stop_reason!r}",
            )
        )


def named_calls(response: ModelResponse, request: int) -> ModelResponse:
    """``response``, each tool call without an id named ``call_<request>_<n>`` (its place):
    the run sends a result back by its call's id. litellm gives every call one; a response a
    middleware made itself may have calls without."""
    if all(call.id for call in response.tool_calls):
        return response
    calls = tuple(
        call if call.id else replace(call, id=f"call_{request}_{n}")
        for n, call in enumerate(response.tool_calls)
    )
    return replace(response, tool_calls=calls)


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
