"""The package's public surface: exactly the names promised, importable, and cheap to import."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import import_module
from types import ModuleType

import pytest

import pytest_harness

# design.md's contract, plus the names this package adds; nothing else is public.
PUBLIC = [
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
        "from pytest_harness import HarnessError\n"
        "from pytest_harness import Agent, Tribunal, Verdict, assert_verdict\n"
        "heavy = ('litellm', 'vcr', 'openai', 'httpx', 'yaml', 'jsonschema', 'tabulate')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# Each capability's namespace, and exactly what it exports.
NAMESPACES = {
    "pytest_harness.tribunal": [
        "JudgeFailure",
        "Tribunal",
        "TribunalEvent",
        "Verdict",
        "Vote",
        "assert_verdict",
        "get_verdict",
        "hook",
        "process",
        "rule",
    ],
    "pytest_harness.orchestrator": [
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
    ],
    "pytest_harness.team": [
        "Finding",
        "KnowledgeStore",
        "Member",
        "MemberTurn",
        "SharedState",
        "TeamConfig",
        "TeamResult",
        "Transcript",
        "Turn",
        "asimulate",
        "simulate",
    ],
    "pytest_harness.calibration": [
        "Agreement",
        "Calibration",
        "Examples",
        "Labelled",
        "Padding",
        "Perturbation",
        "Position",
        "Probe",
        "ProbeResult",
        "Score",
        "aassert_calibrated",
        "acalibrate",
        "assert_calibrated",
        "calibrate",
    ],
    "pytest_harness.datasets": ["Case", "load_cases"],
    "pytest_harness.judges": [
        "AnswerRelevance",
        "FactualAgreement",
        "Faithfulness",
        "Judge",
        "Pairwise",
        "Rubric",
        "ToolCallMatch",
        "labelled_set",
    ],
    "pytest_harness.testing": ["LoopbackServer", "Reply", "ReplyHandler", "ToolCallSpec"],
}


@pytest.mark.parametrize("namespace", sorted(NAMESPACES))
def test_each_namespace_exports_exactly_its_names(namespace: str) -> None:
    module = import_module(namespace)
    assert module.__all__ == sorted(module.__all__, key=lambda name: (not name.isupper(), name))
    assert module.__all__ == NAMESPACES[namespace]
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    if not str(module.__file__).endswith("__init__.py"):
        return  # a module of its own (testing.py), not a namespace that only re-exports
    public = {name for name in vars(module) if not name.startswith("_")}
    submodules = {name for name in public if isinstance(getattr(module, name), ModuleType)}
    assert public - submodules - {"annotations"} == set(module.__all__)


def test_the_strategies_namespace_exports_its_names() -> None:
    from pytest_harness import strategies

    assert strategies.__all__ == sorted(strategies.__all__, key=lambda n: (not n.isupper(), n))
    for name in strategies.__all__:
        assert getattr(strategies, name) is not None, name


def _tree() -> dict[str, str | None]:
    """{exception: its parent in the tree} as drawn in ``pytest_harness.errors``' docstring."""
    from pytest_harness import errors

    drawn: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").split("::", 1)[1].splitlines():
        found = re.match(r"^ {4}(?P<lead>[│ ├└─]*)(?P<name>[A-Z]\w+)\b", line)
        if not found:
            continue
        depth = len(found["lead"]) // 4
        stack = [(d, n) for d, n in stack if d < depth]
        drawn[found["name"]] = stack[-1][1] if stack else None
        stack.append((depth, found["name"]))
    return drawn


def test_every_exception_is_in_errors_and_drawn_where_it_derives() -> None:
    from pytest_harness import errors

    classes = {
        name: value
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, BaseException | Warning)
    }
    drawn = _tree()
    assert set(drawn) == set(classes) - {"HarnessWarning"}
    for name, parent in drawn.items():
        ours = [base.__name__ for base in classes[name].__bases__ if base.__name__ in classes]
        assert ours == ([parent] if parent else []), name


def test_no_exception_is_defined_outside_errors() -> None:
    """Users catch what they find in one module: every public exception class lives there."""
    import ast
    from pathlib import Path

    from pytest_harness import errors

    root = Path(pytest_harness.__file__).parent
    exceptions = set(vars(errors))
    found = []
    for path in root.rglob("*.py"):
        if path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {ast.unparse(base) for base in node.bases}
                if bases & (exceptions | {"Exception", "BaseException", "ValueError"}):
                    found.append(f"{path.relative_to(root)}: {node.name}")
    assert found == []
