"""pytest-harness: LLM judge tribunals as pytest assertions, with offline cassettes.

Only re-exports live here, and lazily: importing ``pytest_harness`` (as pytest does when it
loads the plugin) imports nothing heavy; each name is imported on first access.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_harness.agent import Agent, Result
    from pytest_harness.assertions import assert_verdict
    from pytest_harness.errors import (
        AgentTimeout,
        AllAgentsFailed,
        CassetteError,
        CassetteMiss,
        ConfigError,
        DegenerateResponse,
        HarnessError,
        HarnessWarning,
        InvalidResponse,
        JudgeOutputError,
        LocalModelError,
        ProviderResponseError,
    )
    from pytest_harness.model import ModelResponse, ToolCall, Usage, acomplete, complete
    from pytest_harness.tribunal import Tribunal
    from pytest_harness.validator import ResponseValidator
    from pytest_harness.verdicts import Verdict

__all__ = [
    "Agent",
    "AgentTimeout",
    "AllAgentsFailed",
    "CassetteError",
    "CassetteMiss",
    "ConfigError",
    "DegenerateResponse",
    "HarnessError",
    "HarnessWarning",
    "InvalidResponse",
    "JudgeOutputError",
    "LocalModelError",
    "ModelResponse",
    "ProviderResponseError",
    "ResponseValidator",
    "Result",
    "ToolCall",
    "Tribunal",
    "Usage",
    "Verdict",
    "acomplete",
    "assert_verdict",
    "complete",
]

_HOME = {
    **dict.fromkeys(
        (
            "AgentTimeout",
            "AllAgentsFailed",
            "CassetteError",
            "CassetteMiss",
            "ConfigError",
            "DegenerateResponse",
            "HarnessError",
            "HarnessWarning",
            "InvalidResponse",
            "JudgeOutputError",
            "LocalModelError",
            "ProviderResponseError",
        ),
        "errors",
    ),
    **dict.fromkeys(("ModelResponse", "ToolCall", "Usage", "acomplete", "complete"), "model"),
    "ResponseValidator": "validator",
    "Agent": "agent",
    "Result": "agent",
    "Tribunal": "tribunal",
    "Verdict": "verdicts",
    "assert_verdict": "assertions",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'pytest_harness' has no attribute {name!r}")
    value = getattr(import_module(f"pytest_harness.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
