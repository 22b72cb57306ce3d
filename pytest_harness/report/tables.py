"""Plain-text tables for the terminal: drawing them and the cells they hold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

REASON_WIDTH = 60


def tabulate(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """tabulate's plain table, imported when a table is first drawn."""
    from tabulate import tabulate as draw

    return draw(rows, headers=list(headers))


def money(cost: float | None) -> str:
    return "" if cost is None else f"${cost:.6f}"


def seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}s"


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
