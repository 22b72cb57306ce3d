"""Hypothesis strategies for LLM inputs, and settings for property tests that are recorded.

Perturbations of a text, for robustness tests of LLM features: ``typos``, ``casing``,
``whitespace``, ``lookalikes`` (Cyrillic and Greek letters drawn as Latin ones),
``truncated``, ``injected`` (a prompt-injection line appended), and ``perturbed`` (several
of them, one after another). Each takes a text or a strategy of texts and gives a strategy
of texts; each shrinks to the text unperturbed, so a failure is shown with as little
perturbation as it needs::

    from hypothesis import given, strategies as st
    from pytest_harness.strategies import perturbed, recorded

    @recorded
    @given(perturbed(st.sampled_from(["Where is my order?", "Cancel my subscription"])))
    def test_intent_survives_noise(harness, text): ...

``recorded`` (and the ``"harness"`` profile) draw the same examples in every run, so a
recorded test replays the requests its cassette holds. ``scenarios(Team, input)`` draws from
what a team recorded for ``@pytest.mark.scenarios``.

Importing this module imports hypothesis; the plugin and ``pytest_harness`` never do.
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
