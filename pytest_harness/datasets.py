"""Datasets: one test per case of a JSONL, CSV or YAML file (or a list), and a gate over them.

``@pytest.mark.dataset("cases.jsonl")`` gives the test's ``case`` argument each row as a
``Case``; ``pass_rate=`` adds a gate: the share of cases passing decides the run.
``load_cases`` reads a dataset outside a test.
"""

from __future__ import annotations

from pytest_harness._datasets.cases import Case, load_cases

__all__ = ["Case", "load_cases"]
