"""pytest-harness: LLM judge tribunals as pytest assertions, with offline cassettes.

Only re-exports live here, and lazily: importing ``pytest_harness`` (as pytest does when it
loads the plugin) imports nothing heavy; each name is imported on first access.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of every module of a plugin's distribution as
it imports it; this module has none, and it is loaded at every start-up.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_harness.agent import Agent, Result
    from pytest_harness.calibration.assertions import assert_calibrated
    from pytest_harness.calibration.labels import LabelError
    from pytest_harness.calibration.probes import Padding
    from pytest_harness.calibration.result import Calibration
    from pytest_harness.calibration.run import calibrate
    from pytest_harness.errors import (
        AgentTimeout,
        AllAgentsFailed,
        BudgetExceeded,
        CassetteError,
        CassetteMiss,
        ConfigError,
        DegenerateResponse,
        HarnessError,
        HarnessStop,
        HarnessWarning,
        InvalidResponse,
        JudgeOutputError,
        LocalModelError,
        NetworkBlocked,
        ProviderResponseError,
    )
    from pytest_harness.fixture import Harness
    from pytest_harness.model import acomplete, complete
    from pytest_harness.orchestrator.loop import Orchestrator
    from pytest_harness.orchestrator.middleware.usage import UsageLimits
    from pytest_harness.orchestrator.probe import SubagentProbe
    from pytest_harness.orchestrator.run import Run, RunFailed
    from pytest_harness.orchestrator.sessions import SessionStore, SessionStoreError, UnknownSession
    from pytest_harness.orchestrator.tools import tool
    from pytest_harness.response import ModelResponse, ToolCall, Usage
    from pytest_harness.team.result import TeamError, TeamResult
    from pytest_harness.team.shared_state import SharedState
    from pytest_harness.team.store import KnowledgeStore
    from pytest_harness.tribunal.assertions import assert_verdict
    from pytest_harness.tribunal.declare import Tribunal
    from pytest_harness.tribunal.run import Event
    from pytest_harness.tribunal.verdicts import Verdict
    from pytest_harness.validator import ResponseValidator

__all__ = [
    "Agent",
    "AgentTimeout",
    "AllAgentsFailed",
    "BudgetExceeded",
    "Calibration",
    "CassetteError",
    "CassetteMiss",
    "ConfigError",
    "DegenerateResponse",
    "Event",
    "Harness",
    "HarnessError",
    "HarnessStop",
    "HarnessWarning",
    "InvalidResponse",
    "JudgeOutputError",
    "KnowledgeStore",
    "LabelError",
    "LocalModelError",
    "ModelResponse",
    "NetworkBlocked",
    "Orchestrator",
    "Padding",
    "ProviderResponseError",
    "ResponseValidator",
    "Result",
    "Run",
    "RunFailed",
    "SessionStore",
    "SessionStoreError",
    "SharedState",
    "SubagentProbe",
    "TeamError",
    "TeamResult",
    "ToolCall",
    "Tribunal",
    "UnknownSession",
    "Usage",
    "UsageLimits",
    "Verdict",
    "acomplete",
    "assert_calibrated",
    "assert_verdict",
    "calibrate",
    "complete",
    "tool",
]

# Where each public name lives; every other name of __all__ is in the errors module.
_HOME = {
    "Agent": "agent",
    "Result": "agent",
    "Harness": "fixture",
    "assert_calibrated": "calibration.assertions",
    "LabelError": "calibration.labels",
    "Padding": "calibration.probes",
    "Calibration": "calibration.result",
    "calibrate": "calibration.run",
    "acomplete": "model",
    "complete": "model",
    "Orchestrator": "orchestrator.loop",
    "Run": "orchestrator.run",
    "RunFailed": "orchestrator.run",
    "SubagentProbe": "orchestrator.probe",
    "SessionStore": "orchestrator.sessions",
    "SessionStoreError": "orchestrator.sessions",
    "UnknownSession": "orchestrator.sessions",
    "UsageLimits": "orchestrator.middleware.usage",
    "tool": "orchestrator.tools",
    "ModelResponse": "response",
    "KnowledgeStore": "team.store",
    "SharedState": "team.shared_state",
    "TeamError": "team.result",
    "TeamResult": "team.result",
    "ToolCall": "response",
    "Usage": "response",
    "assert_verdict": "tribunal.assertions",
    "Tribunal": "tribunal.declare",
    "Event": "tribunal.run",
    "Verdict": "tribunal.verdicts",
    "ResponseValidator": "validator",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'pytest_harness' has no attribute {name!r}")
    value = getattr(import_module(f"pytest_harness.{_HOME.get(name, 'errors')}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
