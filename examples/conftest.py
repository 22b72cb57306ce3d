"""Fixtures of the example suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_harness.testing import LoopbackServer


@pytest.fixture
def scripted_model() -> Iterator[LoopbackServer]:
    """A scripted OpenAI-compatible model on loopback (no key, no network)."""
    with LoopbackServer() as server:
        yield server
