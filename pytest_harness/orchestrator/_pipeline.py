"""The middleware pipeline every model request of an orchestrator run goes through, and the
small built-in middleware (usage counting and limits, validation, reasoning).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pytest_harness._model import seam as model
from pytest_harness._model.response import ModelResponse, TokenCallback, Usage
from pytest_harness.errors import ConfigError, InvalidResponse, StopRun


@dataclass
class Tally:
    """Requests, tokens and cost of a run so far."""

    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None

    def add(self, response: ModelResponse) -> None:
        """Add a response's tokens and cost (not a request: ``count_usage`` counts those)."""
        self.usage += response.usage
        if response.cost is not None:
            self.cost = (self.cost or 0.0) + response.cost

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens

    @property
    def total_tokens(self) -> int:
        return self.usage.total_tokens


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


async def count_usage(call: ModelCall, next: Next) -> ModelResponse:
    """Add each request's tokens and cost to the run's tally."""
    call.tally.requests += 1
    response = await next(call)
    call.tally.add(response)
    return response


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """Limits of one run; the run stops (``usage_limit``) before a request would pass one.

    Put it before ``count_usage`` in the pipeline (``defaults(limits=...)`` does).

    Attributes:
        requests: model requests per run.
        total_tokens: tokens (prompt and completion) per run.
        prompt_tokens: prompt tokens per run.
        completion_tokens: completion tokens per run.
        cost: dollars per run (requests litellm cannot price count as free).
    """

    requests: int | None = None
    total_tokens: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 0):
                raise ConfigError(
                    f"UsageLimits({name}=...) expects a number of 0 or more, got {value!r}."
                )

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        reached = self.reached(call)
        if reached:
            call.event("usage_limit", reached)
            raise StopRun("usage_limit", reached)
        return await next(call)

    def reached(self, call: ModelCall) -> str:
        """The limit the next request would pass, described, or "" when none."""
        tally = call.tally
        if self.requests is not None and tally.requests >= self.requests:
            return f"{tally.requests} requests made, the limit is {self.requests}"
        for name in ("total_tokens", "prompt_tokens", "completion_tokens"):
            limit, used = getattr(self, name), getattr(tally, name)
            if limit is not None and used >= limit:
                return f"{used} {name.replace('_', ' ')} used, the limit is {limit}"
        if self.cost is not None and (tally.cost or 0.0) >= self.cost:
            return f"${tally.cost or 0.0:.6f} spent, the limit is ${self.cost:.6f}"
        return ""


_ASKED_AGAIN = frozenset({"nil_response", "interrupted", "empty_response"})


@dataclass(frozen=True, slots=True)
class Validation:
    """Send a request again when the seam finds its response invalid (a middleware).

    Attributes:
        retries: times a request is sent again after an invalid response (0: never).
    """

    retries: int = 1

    def __post_init__(self) -> None:
        retries = self.retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(
                f"Validation(retries=...) expects a whole number, 0 or more, got {retries!r}."
            )

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        for again in range(1, self.retries + 1):
            try:
                return await next(call)
            except InvalidResponse as error:
                if error.reason not in _ASKED_AGAIN:
                    raise  # degenerate: the seam's policy stands
                call.event(
                    "invalid_response", f"{error.reason}; asking again ({again} of {self.retries})"
                )
        return await next(call)


Effort = Literal["minimal", "low", "medium", "high"]
EFFORTS: tuple[Effort, ...] = ("minimal", "low", "medium", "high")


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Ask every request of a run for this much reasoning.

    Attributes:
        effort: ``"minimal"``, ``"low"``, ``"medium"`` or ``"high"``.
    """

    effort: Effort = "medium"

    def __post_init__(self) -> None:
        if self.effort not in EFFORTS:
            raise ConfigError(
                f"Reasoning(effort=...) expects one of {', '.join(EFFORTS)}, got {self.effort!r}."
            )

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        call.params.setdefault("reasoning_effort", self.effort)
        return await next(call)
