"""pytest-harness: test LLM features in pytest, offline, from recorded traffic.

The names a test author reaches for first. Each capability has its own namespace:
``pytest_harness.tribunal``, ``.orchestrator``, ``.team``, ``.calibration``,
``.strategies``, ``.testing``; every exception is in ``pytest_harness.errors``.

Only re-exports live here, and lazily: importing ``pytest_harness`` (as pytest does when it
loads the plugin) imports nothing heavy; each name is imported on first access.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of every module of a plugin's distribution as
it imports it; this module has none, and it is loaded at every start-up.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_harness._agent import Agent, AgentResult
    from pytest_harness._fixture import Harness
    from pytest_harness._model import acomplete, complete
    from pytest_harness._response import ModelResponse, ToolCall, Usage
    from pytest_harness.errors import (
        AllAgentsFailed,
        BudgetExceeded,
        CassetteMiss,
        ConfigError,
        DegenerateResponse,
        HarnessError,
        InvalidResponse,
    )
    from pytest_harness.tribunal import Tribunal, Verdict, assert_verdict

__all__ = [
    "Agent",
    "AgentResult",
    "AllAgentsFailed",
    "BudgetExceeded",
    "CassetteMiss",
    "ConfigError",
    "DegenerateResponse",
    "Harness",
    "HarnessError",
    "InvalidResponse",
    "ModelResponse",
    "ToolCall",
    "Tribunal",
    "Usage",
    "Verdict",
    "acomplete",
    "assert_verdict",
    "complete",
]

# Where each public name lives; every other name of __all__ is in the errors module.
_HOME = {
    "Agent": "_agent",
    "AgentResult": "_agent",
    "Harness": "_fixture",
    "acomplete": "_model",
    "complete": "_model",
    "ModelResponse": "_response",
    "ToolCall": "_response",
    "Usage": "_response",
    "Tribunal": "tribunal",
    "Verdict": "tribunal",
    "assert_verdict": "tribunal",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'pytest_harness' has no attribute {name!r}")
    # Not cached here: the module that defines it stays the one source, even when a test
    # tool (pytester) drops and re-imports the package's modules.
    return getattr(import_module(f"pytest_harness.{_HOME.get(name, 'errors')}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
