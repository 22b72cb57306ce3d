"""``perturbed``: several perturbations of a text, one after another.

It draws how many (``st.integers(0, most)``), then for each which kind (an index into the
kinds given), then lets that kind's strategy change the text so far. All of these shrink
toward 0: no perturbation, then fewer, then earlier kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal, TypeAlias

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy

from pytest_harness.errors import ConfigError
from pytest_harness.strategies.drawing import Text, count, drawn_text, perturbation
from pytest_harness.strategies.perturb import (
    casing,
    injected,
    lookalikes,
    truncated,
    typos,
    whitespace,
)

# A perturbation of your own for ``perturbed``: a text in, a strategy of texts out.
Perturbation: TypeAlias = Callable[[str], SearchStrategy[str]]
# The perturbations ``perturbed`` knows by name.
Kind: TypeAlias = Literal["typos", "casing", "whitespace", "lookalikes", "truncated", "injected"]

_NAMED: dict[str, Perturbation] = {
    "typos": typos,
    "casing": casing,
    "whitespace": whitespace,
    "lookalikes": lookalikes,
    "truncated": truncated,
    "injected": injected,
}


def perturbed(
    text: Text,
    kinds: Sequence[Kind | Perturbation] = ("typos", "casing", "whitespace", "lookalikes"),
    max_perturbations: int = 2,
) -> SearchStrategy[str]:
    """Up to ``max_perturbations`` perturbations, one after another, of the kinds given.

    Each kind is a name (``"typos"``, ``"casing"``, ``"whitespace"``, ``"lookalikes"``,
    ``"truncated"``, ``"injected"``: the strategy of that name with its defaults) or a
    perturbation of your own (a function from a text to a strategy of texts). The default
    kinds keep the meaning for a human reader, as a robustness test wants: the same intent
    should get the same answer. Cutting the text short or injecting an instruction does
    not, so ``truncated`` and ``injected`` are there to ask for. A failure shrinks to the
    perturbations it needs, most often one.
    """
    if isinstance(kinds, str) or not kinds:
        raise ConfigError(
            f"perturbed(kinds=...) expects a non-empty sequence of kinds, such as "
            f"('typos', 'casing'), got {kinds!r}."
        )
    chosen = tuple(_kind(kind) for kind in kinds)
    most = count("perturbed(max_perturbations=...)", max_perturbations)
    return perturbation("perturbed", text, partial(_perturbed, kinds=chosen, most=most))


def _kind(kind: Kind | Perturbation) -> Perturbation:
    if callable(kind):
        return kind
    if kind not in _NAMED:
        raise ConfigError(
            f"perturbed() has no kind {kind!r}; use one of {', '.join(_NAMED)} "
            "or a function from a text to a strategy of texts."
        )
    return _NAMED[kind]


def _perturbed(draw: DrawFn, text: str, kinds: tuple[Perturbation, ...], most: int) -> str:
    for _ in range(draw(st.integers(0, most))):
        perturb = kinds[draw(st.integers(0, len(kinds) - 1))]
        text = drawn_text("perturbed", draw, perturb(text))
    return text
