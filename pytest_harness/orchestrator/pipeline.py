"""The middleware pipeline every model request of an orchestrator run goes through.

Rack-style, as in the seed: a middleware is ``async def middleware(call, next) ->
ModelResponse``: it may read or change the ``ModelCall`` (the request env), must await
``next(call)`` to go on (or answer without it), and may read the response on the way back.
The innermost step is the model seam (``model.asend``), so cassettes, the degenerate-output
check (the response check), usage and the embedded model apply to every request unchanged.

Built in here: ``count_usage`` (tokens and cost of every request, on the call's ``tally``).
"""

from __future__ import annotations

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

    @property
    def usage(self) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            total_tokens=self.total_tokens,
        )


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


async def count_usage(call: ModelCall, next: Next) -> ModelResponse:
    """Add each request's tokens and cost to the run's tally."""
    call.tally.requests += 1
    response = await next(call)
    tally = call.tally
    tally.prompt_tokens += response.usage.prompt_tokens
    tally.completion_tokens += response.usage.completion_tokens
    tally.total_tokens += response.usage.total_tokens
    if response.cost is not None:
        tally.cost = (tally.cost or 0.0) + response.cost
    return response


DEFAULT: tuple[Middleware, ...] = (count_usage,)


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
