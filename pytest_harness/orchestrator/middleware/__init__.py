"""The built-in middleware of the orchestrator's pipeline, one module each.

``defaults()`` is the stack an ``Orchestrator`` uses unless given its own: a fresh list, so
a test or an application can add to it or take from it::

    stack = [m for m in defaults() if not isinstance(m, Retry)] + [my_middleware]
    Orchestrator("openai/gpt-4o-mini", tools, middleware=stack)

The first middleware is the outermost (it sees the request first and the response last).
"""

from __future__ import annotations

from typing import Any

from pytest_harness.orchestrator.middleware.reasoning import Effort, Reasoning
from pytest_harness.orchestrator.middleware.tracing import Tracing
from pytest_harness.orchestrator.middleware.usage import UsageLimits, count_usage

__all__ = ["Effort", "Reasoning", "Tracing", "UsageLimits", "count_usage", "defaults"]


def defaults(*, limits: UsageLimits | None = None, reasoning: Effort | None = None) -> list[Any]:
    """The default stack, outermost first.

    Args:
        limits: usage limits of each run (none by default).
        reasoning: the reasoning effort of every request (the model's own by default).
    """
    stack: list[Any] = [Tracing()]  # a no-op without opentelemetry, importing nothing
    if limits is not None:
        stack.append(limits)
    stack.append(count_usage)
    if reasoning is not None:
        stack.append(Reasoning(reasoning))
    return stack
