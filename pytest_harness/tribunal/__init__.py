"""Tribunals: panels of judge agents whose votes make a verdict, as pytest assertions.

A ``Tribunal`` subclass names its judges (``agents = [...]``) and, with the decorators
``rule``, ``process`` and ``hook``, how their votes make a verdict and what watches a run.
``assert_verdict`` runs one over an input and fails the test, with every judge's vote and
reason, unless its ``Verdict`` passes; ``get_verdict`` returns the verdict without asserting.
"""

from __future__ import annotations

from pytest_harness.tribunal._assertions import assert_verdict, get_verdict
from pytest_harness.tribunal._panel import JudgeFailure, TribunalEvent, Verdict, Vote
from pytest_harness.tribunal._tribunal import Tribunal, hook, process, rule

__all__ = [
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
]
