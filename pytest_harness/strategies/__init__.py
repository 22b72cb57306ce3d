"""Hypothesis strategies for LLM inputs, and settings for property tests that are recorded.

Text perturbations (``typos``, ``casing``, ``whitespace``, ``lookalikes``, ``truncated``,
``injected``, ``perturbed``), each shrinking to the text unperturbed; ``recorded`` draws the
same examples every run, so a recorded test replays; ``scenarios`` draws what a team
recorded. Importing this module imports hypothesis.
"""

from __future__ import annotations

from pytest_harness.strategies._perturb import (
    HOMOGLYPHS,
    INJECTIONS,
    Kind,
    Perturbation,
    Text,
    casing,
    injected,
    lookalikes,
    perturbed,
    truncated,
    typos,
    whitespace,
)
from pytest_harness.strategies._recorded import RECORDED, recorded, scenarios

__all__ = [
    "HOMOGLYPHS",
    "INJECTIONS",
    "RECORDED",
    "Kind",
    "Perturbation",
    "Text",
    "casing",
    "injected",
    "lookalikes",
    "perturbed",
    "recorded",
    "scenarios",
    "truncated",
    "typos",
    "whitespace",
]
