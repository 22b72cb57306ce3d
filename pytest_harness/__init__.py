"""pytest-harness: test LLM features in pytest, offline, from recorded traffic.

The names a test author reaches for first. Each capability has its own namespace
(``pytest_harness.tribunal``, ``.orchestrator``, ``.team``, ``.calibration``,
``.strategies``, ``.testing``); every exception is in ``pytest_harness.errors``.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    from pytest_harness._agent import Agent, AgentResult
    from pytest_harness._model.response import ModelResponse, ToolCall, Usage
    from pytest_harness._model.seam import acomplete, complete
    from pytest_harness._pytest_glue.fixture import Harness
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

# Re-exports only, and lazily: pytest imports this package when it loads the plugin, so it
# imports nothing heavy; each name is imported on first access. An old name (one that moved
# to a namespace: docs/migration.md) fails with an error naming its new home (_migration).
# Where each public name lives; every other name of __all__ is in the errors module.
_HOME = {
    "Agent": "_agent",
    "AgentResult": "_agent",
    "Harness": "_pytest_glue.fixture",
    "acomplete": "_model.seam",
    "complete": "_model.seam",
    "ModelResponse": "_model.response",
    "ToolCall": "_model.response",
    "Usage": "_model.response",
    "Tribunal": "tribunal",
    "Verdict": "tribunal",
    "assert_verdict": "tribunal",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        # A submodule not imported yet (``from pytest_harness import hookspecs``), a probe
        # (``__wrapped__``): never an old name, and the table is left unloaded.
        if name.startswith("_") or _is_submodule(name):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
        from pytest_harness._migration import missing_attribute

        raise missing_attribute(__name__, name)
    # Not cached here: the module that defines it stays the one source, even when a test
    # tool (pytester) drops and re-imports the package's modules.
    return getattr(import_module(f"pytest_harness.{_HOME.get(name, 'errors')}"), name)


def _is_submodule(name: str) -> bool:
    """Whether ``name`` is one of the package's modules or packages (imported after this
    lookup fails), found without importing anything."""
    here = os.path.dirname(__file__)
    return os.path.isfile(os.path.join(here, f"{name}.py")) or os.path.isdir(
        os.path.join(here, name)
    )


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _OldNames:
    """Last on ``sys.meta_path``: a module of this package that nothing else found is looked
    up among the old names, and an old one raises ``MovedName`` (naming its new home) instead
    of the bare ``ModuleNotFoundError``. ``from pytest_harness import Orchestrator`` ends here
    too: once the attribute is missing, the import system tries the submodule.

    A ``MovedName`` from ``__getattr__`` could not do it: ``from ... import`` turns any
    AttributeError into "cannot import name", and anything else would break ``hasattr``.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None, /
    ) -> ModuleSpec | None:
        if fullname.startswith(f"{__name__}.") and "._" not in fullname:
            from pytest_harness._migration import refuse

            refuse(fullname)
        return None


# Once per process, however often the package is imported again (pytester forgets modules).
if not any(
    (type(finder).__module__, type(finder).__qualname__) == (__name__, "_OldNames")
    for finder in sys.meta_path
):
    sys.meta_path.append(_OldNames())
