"""The package's public surface: exactly the names promised, importable, and cheap to import."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

import pytest

import pytest_harness

# design.md's contract, plus the names this package adds; nothing else is public.
PUBLIC = [
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


def test_all_is_sorted_and_exact() -> None:
    assert pytest_harness.__all__ == sorted(pytest_harness.__all__)
    assert pytest_harness.__all__ == PUBLIC
    for name in pytest_harness.__all__:
        value = getattr(pytest_harness, name)
        # Each name is the package's own object, found where it is defined, under its name.
        assert value.__module__.startswith("pytest_harness."), name
        assert getattr(import_module(value.__module__), name) is value
        assert value.__name__ == name
    assert set(pytest_harness.__all__) <= set(dir(pytest_harness))


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = pytest_harness.Nope  # type: ignore[attr-defined]


def test_errors_form_the_documented_tree() -> None:
    from pytest_harness import errors

    for name in ("AgentTimeout", "AllAgentsFailed", "CassetteError", "NetworkBlocked"):
        assert issubclass(getattr(errors, name), errors.HarnessError)
    # Misses and budget stops pass every `except Exception` between them and the test.
    for name in ("CassetteMiss", "BudgetExceeded"):
        assert issubclass(getattr(errors, name), errors.HarnessStop)
        assert not issubclass(getattr(errors, name), Exception)
    assert issubclass(errors.DegenerateResponse, errors.InvalidResponse)
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.AgentTimeout, TimeoutError)
    assert issubclass(errors.HarnessWarning, UserWarning)


def test_importing_the_package_imports_nothing_heavy() -> None:
    code = (
        "import sys, pytest_harness, pytest_harness.plugin\n"
        "from pytest_harness import ResponseValidator, HarnessError\n"
        "from pytest_harness import Agent, Tribunal, Verdict, assert_verdict\n"
        "heavy = ('litellm', 'vcr', 'openai', 'httpx', 'yaml', 'jsonschema', 'tabulate')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
