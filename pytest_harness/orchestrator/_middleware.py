"""The default middleware stack of an orchestrator (``defaults()``)."""

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
