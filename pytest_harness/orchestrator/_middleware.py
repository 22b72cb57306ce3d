"""The built-in middleware of the orchestrator's pipeline, one module each.

``defaults()`` is the stack an ``Orchestrator`` uses unless given its own: a fresh list, so
a test or an application can add to it or take from it::

    stack = [m for m in defaults() if not isinstance(m, Retry)] + [my_middleware]
    Orchestrator("openai/gpt-4o-mini", tools, middleware=stack)

The first middleware is the outermost (it sees the request first and the response last).
The default order: ``Tracing`` (one span per request, retries as its events), the usage
limits (a refused request sends and counts nothing), ``DoomLoop`` and ``Compaction`` (they
read and change the conversation itself; a retry re-sends the compacted request),
``Reasoning`` when asked for, ``count_usage`` (one logical request), ``Validation`` (asks
again after an empty or cut-off response) and ``Retry`` (transient faults, innermost, so
each re-ask has its own attempts). An ``Orchestrator`` with a session puts its
``SessionRecorder`` right after tracing and the limits.
"""

from __future__ import annotations

from typing import Any

from pytest_harness.orchestrator._compaction import Compaction
from pytest_harness.orchestrator._doom_loop import DoomLoop
from pytest_harness.orchestrator._pipeline import (
    Effort,
    Reasoning,
    UsageLimits,
    Validation,
    count_usage,
)
from pytest_harness.orchestrator._retry import Retry
from pytest_harness.orchestrator._tracing import Tracing


def defaults(*, limits: UsageLimits | None = None, reasoning: Effort | None = None) -> list[Any]:
    """The default stack, outermost first.

    Args:
        limits: usage limits of each run (none by default).
        reasoning: the reasoning effort of every request (the model's own by default).
    """
    stack: list[Any] = [Tracing()]  # a no-op without opentelemetry, importing nothing
    if limits is not None:
        stack.append(limits)  # before anything is sent or counted
    stack += [DoomLoop(), Compaction()]  # they read and change the whole conversation
    if reasoning is not None:
        stack.append(Reasoning(reasoning))
    stack += [count_usage, Validation(), Retry()]  # one logical request; its attempts inside
    return stack
