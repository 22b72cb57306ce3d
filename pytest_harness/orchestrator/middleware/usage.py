"""Usage and cost: every request's tokens and cost on the run's tally, and optional limits.

``count_usage`` adds each response's tokens and cost to ``call.tally`` (``Run.usage`` and
``Run.cost`` read it). ``UsageLimits`` (as pydantic-ai's) stops the run with stop reason
``usage_limit`` before the request that would go over a limit: at most ``requests`` model
requests, and once ``total_tokens``, ``prompt_tokens``, ``completion_tokens`` or ``cost``
has been reached no further request is made (a response's size is known only after it).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_harness.errors import ConfigError
from pytest_harness.orchestrator.pipeline import ModelCall, Next, StopRun
from pytest_harness.response import ModelResponse


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
