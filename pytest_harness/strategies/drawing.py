"""What every perturbation shares: its text as a str or a strategy, drawn and checked.

A perturbation is an ``Edit`` (how to change a text, drawing what it needs) applied to a
text drawn first, inside one ``st.composite`` strategy: the text shrinks on its own draws,
the change on the edit's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy

from pytest_harness.errors import ConfigError

# What a perturbation is given: one text, or a strategy of texts to draw it from.
Text: TypeAlias = str | SearchStrategy[str]
# How one perturbation changes a text it has drawn, drawing what it needs as it goes.
Edit: TypeAlias = Callable[[DrawFn, str], str]


def perturbation(name: str, text: Text, edit: Edit) -> SearchStrategy[str]:
    """The strategy ``name(text)``: a text drawn from ``text``, then changed by ``edit``."""
    return _drawn(name, _source(name, text), edit)


@st.composite
def _drawn(draw: DrawFn, name: str, texts: SearchStrategy[str], edit: Edit) -> str:
    return edit(draw, drawn_text(name, draw, texts))


def _source(name: str, text: Text) -> SearchStrategy[str]:
    """``text`` as a strategy: ``st.just(text)`` for a string, the strategy itself else."""
    if isinstance(text, str):
        return st.just(text)
    if isinstance(text, SearchStrategy):
        return text
    raise ConfigError(
        f"{name}() expects text as a str or a hypothesis strategy of str, "
        f"got {text!r} ({type(text).__name__})."
    )


def drawn_text(name: str, draw: DrawFn, texts: SearchStrategy[str]) -> str:
    """One text drawn from ``texts``, refused with the fix if it is not a string."""
    text = draw(texts)
    if not isinstance(text, str):
        raise ConfigError(
            f"{name}() drew {text!r} ({type(text).__name__}) from its text strategy; "
            "give it a strategy of str, such as st.sampled_from([...]) of messages."
        )
    return text


def count(name: str, value: int) -> int:
    """``value``, checked to be a whole number of 0 or more (``name`` says whose it is)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name} expects a whole number of 0 or more, got {value!r}.")
    return value
