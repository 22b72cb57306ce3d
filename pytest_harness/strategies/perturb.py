"""Text perturbations as hypothesis strategies, each shrinking to the text it was given.

Every strategy draws its text first (from ``st.just(text)`` or the strategy given), then
how many changes to make with ``st.integers(0, most)``, then each change with integer
draws. Hypothesis shrinks integers toward 0, so the simplest example is zero changes: the
text itself. A failure that needs a perturbation shrinks to one change (for one kind, its
first sort of change at the start of the text: ``typos`` drops the first character).

A text with nothing to change (the empty string, a text without letters that have
look-alikes for ``lookalikes``) comes back as it is; ``injected`` still appends its line,
alone after an empty text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy

from pytest_harness.errors import ConfigError
from pytest_harness.strategies.drawing import Text, count, perturbation
from pytest_harness.strategies.tables import HOMOGLYPHS, INJECTIONS, KEYBOARD_NEIGHBOURS, SPACES


def typos(text: Text, max_edits: int = 2) -> SearchStrategy[str]:
    """Up to ``max_edits`` slips of the finger.

    Each slip drops a character, doubles one, swaps two neighbours, or hits a keyboard
    neighbour instead of a letter (keeping its case; a character with no neighbour on the
    keyboard is dropped instead). Each is one edit of the Damerau-Levenshtein distance, so
    the result is at most ``max_edits`` away from the text, and its length differs by at
    most ``max_edits``.
    """
    return perturbation(
        "typos", text, partial(_typos, most=count("typos(max_edits=...)", max_edits))
    )


def casing(text: Text) -> SearchStrategy[str]:
    """The text in another case: lower, UPPER, Title, sWAPPED, or a few letters flipped.

    Only case changes, one character for one character: a letter whose other case is
    longer (the sharp s upper-cased is ``SS``) keeps its own, so the length never changes
    and ``result.lower() == text.lower()``.
    """
    return perturbation("casing", text, _casing)


def whitespace(text: Text, max_edits: int = 3) -> SearchStrategy[str]:
    """Up to ``max_edits`` whitespace runs put at the ends of the text or beside its spaces.

    Spaces, line breaks, tabs, no-break and em spaces: the words stay the same words, so
    ``result.split() == text.split()``.
    """
    return perturbation(
        "whitespace",
        text,
        partial(_whitespace, most=count("whitespace(max_edits=...)", max_edits)),
    )


def lookalikes(text: Text, max_swaps: int = 3) -> SearchStrategy[str]:
    """Up to ``max_swaps`` Latin letters replaced by Cyrillic or Greek letters drawn alike.

    The text reads the same to a person and differs to a tokenizer (a Latin ``a`` becomes
    a Cyrillic one, U+0430). Each look-alike maps back to one letter through ``HOMOGLYPHS``.
    """
    return perturbation(
        "lookalikes",
        text,
        partial(_lookalikes, most=count("lookalikes(max_swaps=...)", max_swaps)),
    )


def truncated(text: Text, min_fraction: float = 0.5) -> SearchStrategy[str]:
    """A prefix of the text, at least ``min_fraction`` of its characters long (rounded up).

    As a reply or message cut off by a token limit or a dropped connection.
    """
    if isinstance(min_fraction, bool) or not 0 <= min_fraction <= 1:
        raise ConfigError(
            f"truncated(min_fraction=...) expects a number from 0 to 1, got {min_fraction!r}."
        )
    return perturbation("truncated", text, partial(_truncated, fraction=min_fraction))


def injected(text: Text, lines: Sequence[str] = INJECTIONS) -> SearchStrategy[str]:
    """The text with one prompt-injection line appended, or the text alone.

    The line follows a line break, a blank line or a space; an empty text becomes the line
    alone. ``INJECTIONS`` holds a dozen lines of the kinds seen in the wild; pass your own.
    """
    chosen = tuple(lines) if not isinstance(lines, str) else ()
    if not chosen or not all(isinstance(line, str) and line for line in chosen):
        raise ConfigError(
            f"injected(lines=...) expects a non-empty sequence of non-empty strings, got {lines!r}."
        )
    return perturbation("injected", text, partial(_injected, lines=chosen))


def _typos(draw: DrawFn, text: str, most: int) -> str:
    # Each key typed, paired with the key it stands for: a slip on a key already slipped is
    # a neighbour of the intended key (``X`` may become ``S``, never then ``A``).
    keys = [(char, char) for char in text]
    for _ in range(draw(st.integers(0, most))):
        if not keys:
            break
        at = draw(st.integers(0, len(keys) - 1))
        slip = draw(st.integers(0, 3))
        meant = keys[at][1]
        if slip == 1:  # a key held down
            keys.insert(at, keys[at])
        elif slip == 2 and len(keys) > 1:  # two keys in the wrong order
            at = min(at, len(keys) - 2)
            keys[at], keys[at + 1] = keys[at + 1], keys[at]
        elif slip == 3 and meant.lower() in KEYBOARD_NEIGHBOURS:  # the key next door
            key = draw(st.sampled_from(KEYBOARD_NEIGHBOURS[meant.lower()]))
            keys[at] = (key.upper() if meant.isupper() else key, meant)
        else:  # a key missed
            del keys[at]
    return "".join(typed for typed, _ in keys)


# Case modes in shrinking order after "as it is" (0): whole-text changes first, then
# scattered letters (at most 8 draws however long the text, to keep examples small).
_CASES = ("lower", "upper", "title", "swap", "scattered")
_MOST_FLIPS = 8
_SIGMAS = "\u03a3\u03c3\u03c2"


def _casing(draw: DrawFn, text: str) -> str:
    mode = draw(st.integers(0, len(_CASES)))
    if mode == 0 or not text:
        return text
    chars = list(text)
    case = _CASES[mode - 1]
    if case == "scattered":
        for _ in range(draw(st.integers(1, min(len(text), _MOST_FLIPS)))):
            at = draw(st.integers(0, len(text) - 1))
            chars[at] = _recase(chars[at], upper=not chars[at].isupper())
        return "".join(chars)
    for at, char in enumerate(chars):
        word_start = at == 0 or text[at - 1].isspace()
        upper = {"lower": False, "upper": True, "title": word_start}.get(case)
        chars[at] = _recase(char, upper=not char.isupper() if upper is None else upper)
    return "".join(chars)


def _recase(char: str, *, upper: bool) -> str:
    """``char`` in the case asked for, where that is one character ``str.lower()`` agrees on.

    Not the sharp s to ``SS`` (longer), nor the long s (U+017F) to ``S`` (another letter
    to ``lower()``). Sigmas are left alone: ``lower()`` spells a capital sigma by its place
    in the word.
    """
    changed = char.upper() if upper else char.lower()
    if len(changed) == 1 and changed.lower() == char.lower() and char not in _SIGMAS:
        return changed
    return char


def _whitespace(draw: DrawFn, text: str, most: int) -> str:
    if not text:
        return text
    for _ in range(draw(st.integers(0, most))):
        gaps = [
            at
            for at in range(len(text) + 1)
            if at in (0, len(text)) or text[at - 1].isspace() or text[at].isspace()
        ]
        at = gaps[draw(st.integers(0, len(gaps) - 1))]
        text = text[:at] + draw(st.sampled_from(SPACES)) + text[at:]
    return text


def _lookalikes(draw: DrawFn, text: str, most: int) -> str:
    letters = [at for at, char in enumerate(text) if char in HOMOGLYPHS]
    chars = list(text)
    for _ in range(draw(st.integers(0, min(most, len(letters))))):
        at = letters.pop(draw(st.integers(0, len(letters) - 1)))
        chars[at] = draw(st.sampled_from(HOMOGLYPHS[chars[at]]))
    return "".join(chars)


def _truncated(draw: DrawFn, text: str, fraction: float) -> str:
    keep = math.ceil(len(text) * fraction)
    return text[: len(text) - draw(st.integers(0, len(text) - keep))]


def _injected(draw: DrawFn, text: str, lines: tuple[str, ...]) -> str:
    chosen = draw(st.integers(0, len(lines)))
    if chosen == 0:
        return text
    line = lines[chosen - 1]
    if not text:
        return line
    return text + draw(st.sampled_from(("\n", "\n\n", " "))) + line
