"""Tribunals: panels of judge agents whose votes make a verdict, as pytest assertions.

A ``Tribunal`` subclass names its judges (``agents = [...]``), the rule that turns their
votes into a verdict (``@Tribunal.verdict("majority", may_fail=1)``) and, if it needs them,
hooks that watch or change a run. ``assert_verdict`` runs one over an input and fails the
test, with every judge's vote and reason, unless its ``Verdict`` passes; ``get_verdict``
returns the verdict without asserting.
"""

from __future__ import annotations

from pytest_harness.tribunal._assertions import assert_verdict, get_verdict
from pytest_harness.tribunal._panel import JudgeFailure, TribunalEvent, Verdict, Vote
from pytest_harness.tribunal._tribunal import Tribunal

__all__ = [
    "JudgeFailure",
    "Tribunal",
    "TribunalEvent",
    "Verdict",
    "Vote",
    "assert_verdict",
    "get_verdict",
]
