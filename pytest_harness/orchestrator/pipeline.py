"""The middleware pipeline every model request of an orchestrator run goes through.

Rack-style, as in the seed: a middleware is ``async def middleware(call, next) ->
ModelResponse``: it may read or change the ``ModelCall`` (the request env), must await
``next(call)`` to go on (or answer without it), and may read the response on the way back.
The innermost step is the model seam (``model.asend``), so cassettes, the degenerate-output
check (the response check), usage and the embedded model apply to every request unchanged.

A middleware may also:

* stop the run by raising ``StopRun(reason)`` (before or after ``next``): the run ends with
  that stop reason, its messages kept;
* note what it did with ``call.event(kind, detail)`` (a retry, a compaction, a warning):
  events are on the ``Run``, in its trajectory table and in the report;
* hear of the run and its tools by defining any of ``run_started(agent)``,
  ``run_ended(agent, run)``, ``tool_started(call, request) -> token`` and
  ``tool_ended(token, record)`` (tracing and sessions do).

``call.messages`` is the conversation itself: a middleware that changes it for good (a
compaction) changes it in place; one that changes only this request assigns a new list.

The built-in middleware live in ``orchestrator/middleware/``, one module each.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pytest_harness import model
from pytest_harness.response import ModelResponse, TokenCallback, Usage


@dataclass
class Tally:
    """Requests, tokens and cost of a run so far."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None

    def add(self, response: ModelResponse) -> None:
        """Add a response's tokens and cost (not a request: ``count_usage`` counts those)."""
        self.prompt_tokens += response.usage.prompt_tokens
        self.completion_tokens += response.usage.completion_tokens
        self.total_tokens += response.usage.total_tokens
        if response.cost is not None:
            self.cost = (self.cost or 0.0) + response.cost

    @property
    def usage(self) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            total_tokens=self.total_tokens,
        )


class StopRun(Exception):
    """Raised by a middleware to end the run with ``reason`` (its messages are kept)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class RunEvent:
    """Something a middleware did during a run (shown in the trajectory and the report).

    Attributes:
        request: the request it happened at (1 for the first).
        kind: a short name: ``retry``, ``compaction``, ``doom_loop``, ``invalid_response``...
        detail: one line saying what happened.
        at: ``time.time()`` when it happened.
    """

    request: int
    kind: str
    detail: str
    at: float


@dataclass
class ModelCall:
    """One model request of a run (the env the middleware see).

    Attributes:
        model: the model asked for (``--harness-model`` still applies in the seam).
        messages: the conversation to send.
        tools: the OpenAI tool definitions offered.
        params: further litellm arguments (``temperature``, ``api_base``, ...).
        stream: stream the answer (to ``on_content`` / ``on_reasoning``).
        number: 1 for the run's first request.
        tally: the run's totals so far.
        metadata: free room for middleware.
        agent: the ``Orchestrator`` making the request (its session, name, model).
        events: the run's events so far (``event`` adds one).
    """

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    params: dict[str, Any]
    stream: bool = False
    number: int = 1
    tally: Tally = field(default_factory=Tally)
    on_content: TokenCallback | None = None
    on_reasoning: TokenCallback | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    agent: Any = None
    events: list[RunEvent] = field(default_factory=list)

    def event(self, kind: str, detail: str) -> RunEvent:
        """Note that a middleware did something at this request."""
        happened = RunEvent(self.number, kind, detail, time.time())
        self.events.append(happened)
        return happened


Next: TypeAlias = Callable[[ModelCall], Awaitable[ModelResponse]]
Middleware: TypeAlias = Callable[[ModelCall, Next], Awaitable[ModelResponse]]


async def send(call: ModelCall) -> ModelResponse:
    """The innermost step: the model seam (cassettes, the response check, the local route)."""
    built = model.request(
        call.messages,
        model=model.resolve(call.model),
        tools=call.tools or None,
        stream=call.stream,
        **call.params,
    )
    return await model.asend(built, on_token=call.on_content, on_reasoning=call.on_reasoning)


def compose(middleware: Sequence[Middleware], innermost: Next = send) -> Next:
    """One callable running ``middleware`` in order (the first is the outermost)."""
    handler = innermost
    for layer in reversed(middleware):
        handler = _wrap(layer, handler)
    return handler


def _wrap(layer: Middleware, inner: Next) -> Next:
    async def step(call: ModelCall) -> ModelResponse:
        return await layer(call, inner)

    return step


def hooks(middleware: Sequence[Any], name: str) -> list[Callable[..., Any]]:
    """The middleware's ``name`` hooks (``run_started``...), outermost first."""
    return [hook for layer in middleware if (hook := getattr(layer, name, None)) is not None]
