"""The orchestrator: an application's own agent loop, with middleware, sessions and subagents.

``Orchestrator(model, tools)`` runs the loop (model, tool calls run concurrently, results,
repeat) until the model answers or a limit stops it. Tools are typed functions (``@tool``);
every request passes through a middleware pipeline (``defaults()``); each run returns a
``Run`` whose trajectory a test asserts on (``run.assert_called("lookup")``).
"""

from __future__ import annotations

from pytest_harness.orchestrator._compaction import Compaction
from pytest_harness.orchestrator._doom_loop import DoomLoop
from pytest_harness.orchestrator._loop import MAX_REQUESTS_PER_TURN, Orchestrator
from pytest_harness.orchestrator._middleware import defaults
from pytest_harness.orchestrator._pipeline import (
    Effort,
    Middleware,
    ModelCall,
    Next,
    Reasoning,
    RunEvent,
    UsageLimits,
    Validation,
    count_usage,
)
from pytest_harness.orchestrator._retry import Retry
from pytest_harness.orchestrator._run import Run, StopReason, ToolCallRecord
from pytest_harness.orchestrator._sessions import SessionStore
from pytest_harness.orchestrator._subagents import SubagentEntry, SubagentProbe, steer
from pytest_harness.orchestrator._tools import Tool, tool
from pytest_harness.orchestrator._tracing import Tracing

__all__ = [
    "MAX_REQUESTS_PER_TURN",
    "Compaction",
    "DoomLoop",
    "Effort",
    "Middleware",
    "ModelCall",
    "Next",
    "Orchestrator",
    "Reasoning",
    "Retry",
    "Run",
    "RunEvent",
    "SessionStore",
    "StopReason",
    "SubagentEntry",
    "SubagentProbe",
    "Tool",
    "ToolCallRecord",
    "Tracing",
    "UsageLimits",
    "Validation",
    "count_usage",
    "defaults",
    "steer",
    "tool",
]
