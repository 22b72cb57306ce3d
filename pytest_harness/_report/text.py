"""Plain-text tables for the terminal: drawing them and the cells they hold."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

REASON_WIDTH = 60
STEP_WIDTH = 2000  # a message, a tool call's arguments or result in a report, at most


def tabulate(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """tabulate's plain table, imported when a table is first drawn."""
    from tabulate import tabulate as draw

    return draw(rows, headers=list(headers))


def money(cost: float | None) -> str:
    return "" if cost is None else f"${cost:.6f}"


def seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}s"


def timing(value: float | None, recorded: float | None) -> str:
    """A run's time: ``recorded 2.31s (replay 0.01s)`` when the recording's is known."""
    if recorded is None:
        return seconds(value)
    return f"recorded {seconds(recorded)}" + (f" (replay {seconds(value)})" if value else "")


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cut(text: str | None, limit: int = STEP_WIDTH) -> str | None:
    """``text`` as it is (its lines kept) up to ``limit`` characters, then ``…``."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def percent(value: float | None) -> str:
    """A share (0..1) as a percentage, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{100 * value:.1f}%"


def figure(value: float | None) -> str:
    """A kappa or an alpha to three places, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{value:.3f}"


def judge_labels(names: Iterable[str]) -> list[str]:
    """Judges named by panel position: a name that repeats gets ``#2``, ``#3``."""
    seen: Counter[str] = Counter()
    labels = []
    for name in names:
        seen[name] += 1
        labels.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return labels


CALIBRATION_PROPERTY = "harness_calibration"  # a calibration record's JUnit property
OUTCOME = "test_outcome"  # each record's test's outcome, which the session report adds
