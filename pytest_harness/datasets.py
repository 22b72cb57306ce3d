"""Datasets: one test per case of a JSONL, CSV or YAML file (or a list), and a gate over them.

``@pytest.mark.dataset("cases.jsonl")`` parametrizes the test's ``case`` argument with each
row of the file, a ``Case`` (``input``, ``expected``, ``fields``, ``id``), its test id
read from the row's ``id`` or its input. ``pass_rate=`` (with ``confidence=``, ``margin=``,
``inconclusive=``) adds a gate: the share of cases passing must reach it, one row in the
report, and the gate rather than each case decides the run. ``load_cases`` reads a dataset
outside a test.
"""

from __future__ import annotations

from pytest_harness._cases import Case, load_cases

__all__ = ["Case", "load_cases"]
