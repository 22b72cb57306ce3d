"""One user turn of an orchestrator: request, tools, request... until done or a limit.

``Turn`` holds what one ``Orchestrator.arun`` asked, what came back and why it stopped. It
sends every request through the middleware pipeline, runs each batch of tool calls
concurrently (the results in the model's order), tells the middleware's run and tool hooks,
and ends with a frozen ``Run``, told to the scope's listeners (topic ``"run"``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from pytest_harness import scope
from pytest_harness._aio import maybe_await
from pytest_harness.errors import HarnessStop, describe
from pytest_harness.orchestrator import messages, pipeline
from pytest_harness.orchestrator.run import Run, RunFailed, StopReason, ToolCallRecord
from pytest_harness.orchestrator.tools import ToolArgumentError, render
from pytest_harness.response import ModelResponse, ToolCall

ABORTED = "aborted before the tool finished"
WAKE = 0.05  # seconds: how late a signal handler's abort() may stop running tools


class Turn:
    """The state of one ``arun``: what it asked, what came back, why it stops."""

    def __init__(self, agent: Any, started: float) -> None:  # an Orchestrator
        self.agent = agent
        self.started = started
        self.tally = pipeline.Tally()
        self.calls: list[ToolCallRecord] = []
        self.events: list[pipeline.RunEvent] = []
        self.rounds = 0  # batches of tool calls run so far
        self.response: ModelResponse | None = None
        self.send = pipeline.compose(agent.middleware)

    async def loop(self) -> Run:
        for hook in pipeline.hooks(self.agent.middleware, "run_started"):
            await maybe_await(hook(self.agent))
        try:
            return await self.turns()
        except pipeline.StopRun as stop:
            return await self.stop(stop.reason)  # type: ignore[arg-type]
        except RunFailed:
            raise  # its run ended already (``request``)
        except BaseException:  # a cassette miss, a callback that raised: the run ends here
            await self.stop("error", told=False)
            raise

    async def turns(self) -> Run:
        agent = self.agent
        while True:
            if agent.abort_requested.is_set():
                return await self.stop("aborted")
            if self.tally.requests >= agent.max_requests:
                return await self.stop("max_requests")
            response = await self.request()
            if not response.tool_calls:
                return await self.stop("done")
            if self.last_round:
                return await self.stop("max_tool_rounds")
            self.rounds += 1
            records = await self.execute(response.tool_calls, self.tally.requests)
            agent.messages += [messages.tool_result(record) for record in records]
            if agent.abort_requested.is_set():
                return await self.stop("aborted")
            if sum(not call.ok for call in self.calls) >= agent.max_tool_errors:
                return await self.stop("tool_error_limit")

    async def request(self) -> ModelResponse:
        agent = self.agent
        call = pipeline.ModelCall(
            model=agent.model,
            messages=agent.messages,
            tools=agent.specs,
            params={**agent.params, **({"tool_choice": "none"} if self.last_round else {})},
            stream=agent.on_content is not None or agent.on_reasoning is not None,
            number=self.tally.requests + 1,
            tally=self.tally,
            on_content=agent.on_content,
            on_reasoning=agent.on_reasoning,
            agent=agent,
            events=self.events,
        )
        try:
            response = await self.send(call)
        except (HarnessStop, pipeline.StopRun):
            raise  # a cassette miss, a spent budget: the test stops; a middleware's stop
        except Exception as error:
            run = await self.stop("error")
            raise RunFailed(
                f"request {call.number} of the run failed: {describe(error)}", run=run
            ) from error
        self.response = response
        agent.messages.append(messages.assistant(response))
        return response

    async def execute(self, calls: Sequence[ToolCall], request: int) -> list[ToolCallRecord]:
        """Run a batch concurrently; the records come back in the model's order."""
        agent = self.agent
        if agent.on_tool_call_start is not None:
            batch = [{"name": c.name, "arguments": c.arguments} for c in calls]
            await maybe_await(agent.on_tool_call_start(batch))
        tasks = [asyncio.ensure_future(self.one(call, request)) for call in calls]
        agent.running_tools = tasks
        if agent.abort_requested.is_set():  # aborted while the batch was announced
            for task in tasks:
                task.cancel()
        alarm = asyncio.ensure_future(_wake_regularly())
        try:
            done = await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            alarm.cancel()
            agent.running_tools = []
        records = []
        for outcome, call in zip(done, calls, strict=True):
            if isinstance(outcome, asyncio.CancelledError):  # cancelled before it started
                outcome = ToolCallRecord.ended_now(call, request, None, ABORTED, 0.0)
            elif isinstance(outcome, BaseException):  # a callback of the test raised
                raise outcome
            records.append(outcome)
        self.calls += records
        return records

    async def one(self, call: ToolCall, request: int) -> ToolCallRecord:
        started = time.time()
        tokens = [(begin(call, request), end) for begin, end in _tool_hooks(self.agent.middleware)]
        result: str | None = None
        try:
            result = await self.invoke(call)
            error = None
        except asyncio.CancelledError:
            error = ABORTED
        except _ToolFailed as failure:
            error = str(failure)
        record = ToolCallRecord.ended_now(call, request, result, error, started)
        for token, ended in reversed(tokens):
            ended(token, record)
        if self.agent.on_tool_result is not None and not self.agent.abort_requested.is_set():
            await maybe_await(self.agent.on_tool_result(call.name, record.sent))
        return record

    async def invoke(self, call: ToolCall) -> str:
        found = self.agent.tools.get(call.name)
        if found is None:
            known = ", ".join(sorted(self.agent.tools)) or "none"
            raise _ToolFailed(f"there is no tool named {call.name!r}; the tools are: {known}")
        try:
            arguments = found.arguments(call.raw_arguments)
        except ToolArgumentError as error:
            raise _ToolFailed(str(error)) from None
        timeout = found.timeout if found.timeout is not None else self.agent.tool_timeout
        try:
            value = await asyncio.wait_for(found(**arguments), timeout)
        except asyncio.TimeoutError:
            raise _ToolFailed(f"tool {call.name!r} did not finish within {timeout:g} s") from None
        except Exception as error:
            raise _ToolFailed(f"tool {call.name!r} raised {describe(error)}") from None
        return render(value)

    @property
    def last_round(self) -> bool:
        """Whether the allowed batches of tool calls were all run."""
        limit = self.agent.max_tool_rounds
        return limit is not None and self.rounds >= limit

    async def stop(self, reason: StopReason, *, told: bool = True) -> Run:
        """The run as it ends, told to the middleware (a session saves it, a trace ends)
        and, unless an exception ends the test's call (``told=False``), to the scope's
        listeners."""
        response = self.response
        run = Run(
            output=response.text if response is not None else "",
            response=response,
            messages=tuple(dict(m) for m in self.agent.messages),
            tool_calls=tuple(self.calls),
            requests=self.tally.requests,
            usage=self.tally.usage,
            cost=self.tally.cost,
            wall_time=time.perf_counter() - self.started,
            stop_reason=reason,
            events=tuple(self.events),
        )
        for hook in reversed(pipeline.hooks(self.agent.middleware, "run_ended")):
            await maybe_await(hook(self.agent, run))
        if told:
            scope.emit("run", run)
        return run


async def _wake_regularly() -> None:
    """Wake the loop every ``WAKE`` seconds (while a batch of tools runs).

    Python runs a signal handler in the main thread, between bytecodes. A signal that lands
    as the loop goes to sleep in ``select()`` (the sending thread got the GIL the loop let
    go) waits there until something else wakes the loop, so an ``abort()`` from a signal
    handler would wait as long as the tools it is meant to stop.
    """
    while True:
        await asyncio.sleep(WAKE)


def _tool_hooks(middleware: Sequence[Any]) -> list[tuple[Any, Any]]:
    """(tool_started, tool_ended) of each middleware that has both."""
    return [
        (layer.tool_started, layer.tool_ended)
        for layer in middleware
        if hasattr(layer, "tool_started") and hasattr(layer, "tool_ended")
    ]


class _ToolFailed(Exception):
    """A tool call that ends as an error result for the model."""
