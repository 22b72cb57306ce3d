"""The model matrix: every test that uses the harness, once per model (``--harness-models``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_harness._pytest_glue.settings import uses_harness
from pytest_harness._report.text import OUTCOME, money, seconds, tabulate

if TYPE_CHECKING:
    from pytest_harness._pytest_glue.watch import TrafficWatch

MATRIX_PROPERTY = "harness_matrix"
PARAM = "harness_model"  # the parameter each copy gets (and the fixture it overrides)


class Matrix:
    """Parametrizes every test that uses the harness with the matrix's models.

    Args:
        models: the matrix's models, in the order given.
    """

    def __init__(self, models: Sequence[str]) -> None:
        self.models = list(models)

    @pytest.hookimpl(trylast=True)  # after the test's own parametrization: its ids come first
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if not uses_harness(metafunc.definition):
            return
        if PARAM not in metafunc.fixturenames:  # a test that does not ask for the model
            metafunc.fixturenames.append(PARAM)
        metafunc.parametrize(PARAM, self.models, ids=self.models)


def model_of(item: pytest.Item, models: Sequence[str]) -> str | None:
    """The model of a matrix's copy of a test, or None when ``item`` is no such copy."""
    callspec = getattr(item, "callspec", None)
    model = None if callspec is None else callspec.params.get(PARAM)
    return model if isinstance(model, str) and model in models else None


def row_of(nodeid: str, model: str) -> str:
    """The test id without the matrix's model: ``t.py::test[a-m]`` -> ``t.py::test[a]``."""
    if nodeid.endswith(f"[{model}]"):
        return nodeid.removesuffix(f"[{model}]")
    if nodeid.endswith(f"-{model}]"):
        return nodeid.removesuffix(f"-{model}]") + "]"
    return nodeid  # another plugin parametrized it after the matrix


def cell_property(
    test: str,
    model: str,
    watch: TrafficWatch,
    samples: Mapping[str, Any] | None,
    *,
    column: int = 0,
) -> tuple[str, str]:
    """One copy's cell as a JUnit property: row, model and its ``column`` (its place in
    ``--harness-models``), calls, tokens, cost, latency (the sum of its model calls', as
    recorded in replay), its samples' pass rate and interval (a sampled test), and the
    application's responses in order."""
    record = watch.spend.record(test)
    data = {
        "test": test,
        "row": row_of(test, model),
        "model": model,
        "column": column,
        "calls": record["calls"],
        "tokens": record["tokens"],
        "cost": record["cost"],
        "latency_s": record["latency_s"],
        "samples": None if samples is None else _samples(samples),
        "responses": [call["response"] for call in sorted(watch.calls, key=_number)],
    }
    return MATRIX_PROPERTY, json.dumps(data, sort_keys=True)


def _number(call: Mapping[str, Any]) -> int:
    return int(call["call"])


def _samples(record: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("ran", "passes", "pass_rate", "interval", "confidence")
    return {key: record.get(key) for key in keys}


def pivot(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The cells as a matrix: ``models`` (columns, in ``--harness-models`` order) and
    ``rows``, each ``{"row": test id without the model, "cells": {model: cell}}`` in
    first-seen order; ``{}`` without cells (no matrix ran).

    The columns follow each cell's ``column``, so xdist workers finishing in any order give
    the same columns (a cell without one, from an older report, comes after, first seen
    first)."""
    if not cells:
        return {}
    seen: dict[str, int] = {}
    rows: dict[str, dict[str, Any]] = {}
    for cell in cells:
        seen.setdefault(cell["model"], len(seen))
        rows.setdefault(cell["row"], {})[cell["model"]] = dict(cell)
    place = {c["model"]: _column(c.get("column"), len(seen)) for c in cells}
    models = sorted(seen, key=lambda model: (place[model], seen[model]))
    return {"models": models, "rows": [{"row": r, "cells": c} for r, c in rows.items()]}


def _column(column: Any, last: int) -> int:
    return column if isinstance(column, int) and not isinstance(column, bool) else last


def cell_text(cell: Mapping[str, Any] | None) -> str:
    """A cell in one line: ``passed 9/10 90% (60%-98%), 120 tok, $0.000210, 1.20s``."""
    if cell is None:
        return "-"
    parts = [str(cell.get(OUTCOME, "?")) + _rate(cell.get("samples"))]
    parts.append(f"{cell['tokens']} tok")
    if cell["cost"] is not None:
        parts.append(money(cell["cost"]))
    if cell["latency_s"] is not None:
        parts.append(seconds(cell["latency_s"]))
    return ", ".join(parts)


def _rate(samples: Mapping[str, Any] | None) -> str:
    """`` 9/10 90% (60%-98%)`` for a sampled test, else nothing."""
    if not samples or not samples["ran"]:
        return ""
    low, high = samples["interval"]
    rate = f"{_percent(samples['pass_rate'])} ({_percent(low)}-{_percent(high)})"
    return f" {samples['passes']}/{samples['ran']} {rate}"


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def matrix_table(cells: Sequence[Mapping[str, Any]]) -> str:
    """The terminal's matrix: a row per test (or case), a column per model."""
    matrix = pivot(cells)
    rows = [
        [row["row"], *(cell_text(row["cells"].get(m)) for m in matrix["models"])]
        for row in matrix["rows"]
    ]
    return tabulate(rows, headers=["test", *matrix["models"]])
