"""The agent loop: prompt, model, tool calls, execute, send the results, repeat."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_harness._aio import maybe_await, run_sync
from pytest_harness._model.response import ModelResponse, ToolCall
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import (
    ConfigError,
    HarnessStop,
    RunFailed,
    StopRun,
    ToolArgumentError,
    describe,
)
from pytest_harness.orchestrator import _pipeline as pipeline
from pytest_harness.orchestrator import _subagents as subagents_
from pytest_harness.orchestrator._middleware import defaults
from pytest_harness.orchestrator._run import (
    Run,
    StopReason,
    ToolCallRecord,
    assistant,
    named_calls,
    question_tool,
    tool_result,
)
from pytest_harness.orchestrator._tools import Tool, as_tool, render
from pytest_harness.orchestrator._tracing import Tracing

MAX_REQUESTS_PER_TURN = 100
TOOL_TIMEOUT = 60.0  # seconds, per tool call, unless the tool sets its own
MAX_TOOL_ERRORS = 10  # error results in one run before it stops

Callback = Callable[..., Any]


class Orchestrator:
    """A tool-using agent: one conversation with a model and its tools.

    Attributes:
        model: The litellm model name every request asks for.
        tools: The tools offered, by name (the built-in ``question`` and ``delegate``
            included when asked for).
        messages: The conversation so far, in OpenAI's chat form; ``run`` adds to it.
        children: The subagents ``delegate`` started (``SubagentEntry`` each).
        session_id: The session the conversation is kept in (None: none).
        store: The ``SessionStore`` of ``session_id`` (None: none).

    Args:
        model: a litellm model name (``--harness-model`` replaces it, as for every call).
        tools: ``@tool`` functions, or plain typed functions (wrapped with ``tool``).
        system_prompt: sent first, on the first turn only.
        params: further litellm arguments for every request (``temperature``, ``api_base``).
        middleware: the pipeline, the first the outermost (default
            ``orchestrator.middleware.defaults(limits=limits)``).
        limits: ``UsageLimits`` of each run, with the default pipeline.
        reasoning: the reasoning effort of every request (``"low"``...), with the default
            pipeline (litellm's ``reasoning_effort``).
        on_content: called with each streamed text delta (turns streaming on).
        on_reasoning: called with each streamed reasoning delta (turns streaming on).
        on_tool_call_start: called once per batch, with ``[{"name", "arguments"}, ...]``,
            before any of its tools runs.
        on_tool_result: called as ``(name, result)`` as each tool call finishes (an error
            result is the text the model receives, starting ``Error:``).
        on_question: answers the built-in ``question`` tool (offered only with it): called
            with the model's question, returns the answer (may be async).
        tool_timeout: seconds a tool call may take unless the tool sets its own.
        max_tool_errors: error results in one run after which it stops (``tool_error_limit``).
        max_requests: model requests per run before it stops (``max_requests``); at most
            ``MAX_REQUESTS_PER_TURN``.
        max_tool_rounds: batches of tool calls per run; the request after the last one is
            sent with ``tool_choice="none"``, so the model answers from what its tools
            returned (a model that calls tools anyway stops the run: ``max_tool_rounds``).
            None (the default): no limit but ``max_requests``.
        session: keep the conversation in a session of this id: saved around every
            request, and continued when the store already holds it (in this process or a
            later one).
        store: the ``SessionStore`` (or its path; ``":memory:"`` possible) of ``session``;
            default ``.harness/sessions.sqlite3``.
        resume: the session must exist already (``UnknownSession`` otherwise).
        subagents: offer the built-in ``delegate`` tool, which runs a child orchestrator
            on a sub-task (``children`` lists them; see ``orchestrator.subagents``). The
            children's sessions share ``store`` (in memory when no session was asked for).
    """

    def __init__(
        self,
        model: str,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        system_prompt: str | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        middleware: Sequence[pipeline.Middleware] | None = None,
        limits: pipeline.UsageLimits | None = None,
        reasoning: pipeline.Effort | None = None,
        on_content: Callback | None = None,
        on_reasoning: Callback | None = None,
        on_tool_call_start: Callback | None = None,
        on_tool_result: Callback | None = None,
        on_question: Callback | None = None,
        tool_timeout: float = TOOL_TIMEOUT,
        max_tool_errors: int = MAX_TOOL_ERRORS,
        max_requests: int = MAX_REQUESTS_PER_TURN,
        max_tool_rounds: int | None = None,
        session: str | None = None,
        store: Any = None,
        resume: bool = False,
        subagents: bool = False,
    ) -> None:
        if not 1 <= max_requests <= MAX_REQUESTS_PER_TURN:
            raise ConfigError(
                f"Orchestrator(max_requests=...) expects 1 to {MAX_REQUESTS_PER_TURN}, "
                f"got {max_requests!r}."
            )
        if max_tool_rounds is not None and max_tool_rounds < 0:
            raise ConfigError(
                f"Orchestrator(max_tool_rounds=...) expects None or 0 and up, "
                f"got {max_tool_rounds!r}."
            )
        self.max_requests, self.max_tool_rounds = max_requests, max_tool_rounds
        self.model = model
        self.tools = {t.name: t for t in map(as_tool, tools)}
        if on_question is not None:
            self.tools["question"] = question_tool(on_question)
        self.system_prompt = system_prompt
        self.params = dict(params or {})
        self.middleware = _pipeline(middleware, limits=limits, reasoning=reasoning)
        self.messages: list[dict[str, Any]] = []
        self.on_content, self.on_reasoning = on_content, on_reasoning
        self.on_tool_call_start, self.on_tool_result = on_tool_call_start, on_tool_result
        self.tool_timeout = tool_timeout
        self.max_tool_errors = max_tool_errors
        self.abort_requested = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.running_tools: list[asyncio.Task[Any]] = []
        self.children: list[subagents_.SubagentEntry] = []
        self.session_id: str | None = None
        self.store: Any = None
        if subagents and session is None and store is None and not resume:
            store = ":memory:"  # the children's sessions hold steering notes; nothing on disk
        if session is not None or store is not None or resume:
            self._open_session(session, store, resume=resume)
        if subagents:
            self.tools["delegate"] = subagents_.delegate_tool(self)

    def run(self, message: str) -> Run:
        """Run one user turn to its end and return its trajectory (sync facade of ``arun``)."""
        return run_sync(self.arun(message))

    async def arun(self, message: str) -> Run:
        """Run one user turn: request, tools, request... until done or a limit is hit.

        Raises:
            RunFailed: a model request failed (its ``run`` keeps the messages so far).
        """
        self.abort_requested.clear()
        self._loop = asyncio.get_running_loop()
        turn = Turn(self, time.perf_counter(), message)
        if not self.messages and self.system_prompt:
            self.messages.append({"role": "system", "content": self.system_prompt})
        self.messages.append({"role": "user", "content": message})
        try:
            return await turn.loop()
        finally:
            self._loop = None

    def abort(self) -> None:
        """Stop the run: cancel in-flight tools, make no further request.

        Safe from another thread, a signal handler or a callback. The run ends with stop
        reason ``aborted``. A sync tool already running in its thread finishes there (a
        thread cannot be interrupted); its result is dropped.
        """
        self.abort_requested.set()
        for child in self.children:
            if child.status == "running":
                child.agent.abort()
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        for task in list(self.running_tools):
            loop.call_soon_threadsafe(task.cancel)

    def _open_session(self, session: str | None, store: Any, *, resume: bool) -> None:
        """Keep the conversation in ``store`` under ``session``; continue it if saved."""
        from pytest_harness.orchestrator import _sessions as sessions
        from pytest_harness.orchestrator._sessions import SessionRecorder
        from pytest_harness.orchestrator._sessions import resume as saved_messages

        if not isinstance(store, sessions.SessionStore):
            store = sessions.SessionStore(sessions.DEFAULT_PATH if store is None else store)
        self.store, self.session_id = store, session or f"session-{uuid.uuid4().hex[:12]}"
        if resume or store.exists(self.session_id):
            # UnknownSession names the known ids; a crash's unanswered tool calls get errors.
            self.messages = saved_messages(store, self.session_id)
        # After tracing and limits (a refused request leaves the notes waiting), before the
        # rest: one save per request, of the conversation as compacted.
        outer = 0
        while outer < len(self.middleware) and isinstance(
            self.middleware[outer], Tracing | pipeline.UsageLimits
        ):
            outer += 1
        recorder = SessionRecorder(store, self.session_id)
        self.middleware = (*self.middleware[:outer], recorder, *self.middleware[outer:])

    @property
    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI tool definitions offered to the model."""
        return [t.spec() for t in self.tools.values()]


def _pipeline(middleware: Sequence[Any] | None, **options: Any) -> tuple[Any, ...]:
    """The orchestrator's pipeline: ``middleware``, or the defaults with ``options``."""
    if middleware is None:
        return tuple(defaults(**options))
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise ConfigError(
            f"Orchestrator({given[0]}=...) applies to the default pipeline; with your own "
            f"middleware, pass it to the list: middleware=[*defaults({given[0]}=...), ...]."
        )
    return tuple(middleware)


ABORTED = "aborted before the tool finished"
WAKE = 0.05  # seconds: how late a signal handler's abort() may stop running tools


class Turn:
    """The state of one ``arun``: what it asked, what came back, why it stops."""

    def __init__(self, agent: Any, started: float, question: str) -> None:  # an Orchestrator
        self.agent = agent
        self.started = started
        self.question = question
        self.responses: list[ModelResponse] = []
        self.tally = pipeline.Tally()
        # The loop counts the requests that came back too: the cap holds whatever middleware
        # runs (the tally's count is count_usage's, which a custom pipeline may leave out).
        self.answered = 0
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
        except StopRun as stop:
            return await self.stop(stop.reason)  # type: ignore[arg-type]
        except RunFailed:
            raise  # its run ended already (``request``)
        except BaseException:  # a cassette miss, a callback that raised: the run ends here
            await self.stop("error", told=False)
            raise

    @property
    def requests(self) -> int:
        """The run's requests: count_usage's count, or the answered ones when it counts fewer."""
        return max(self.tally.requests, self.answered)

    async def turns(self) -> Run:
        agent = self.agent
        while True:
            if agent.abort_requested.is_set():
                return await self.stop("aborted")
            if self.requests >= agent.max_requests:
                return await self.stop("max_requests")
            response = await self.request()
            if not response.tool_calls:
                return await self.stop("done")
            if self.last_round:
                return await self.stop("max_tool_rounds")
            self.rounds += 1
            records = await self.execute(response.tool_calls, self.requests)
            agent.messages += [tool_result(record) for record in records]
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
            number=self.requests + 1,
            tally=self.tally,
            on_content=agent.on_content,
            on_reasoning=agent.on_reasoning,
            agent=agent,
            events=self.events,
        )
        try:
            response = await self.send(call)
        except (HarnessStop, StopRun):
            raise  # a cassette miss, a spent budget: the test stops; a middleware's stop
        except Exception as error:
            run = await self.stop("error")
            raise RunFailed(
                f"request {call.number} of the run failed: {describe(error)}", run=run
            ) from error
        response = named_calls(response, call.number)
        self.answered += 1
        self.response = response
        self.responses.append(response)
        agent.messages.append(assistant(response))
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
            raise _ToolFailed(
                f"tool {call.name!r} did not finish within {timeout:g} s (its timeout: "
                "@tool(timeout=...), else the orchestrator's tool_timeout)"
            ) from None
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
            requests=self.requests,
            usage=self.tally.usage,
            cost=self.tally.cost,
            wall_time=time.perf_counter() - self.started,
            stop_reason=reason,
            events=tuple(self.events),
            question=self.question,
            responses=tuple(self.responses),
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
