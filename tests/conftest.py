"""Shared fixtures: a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_harness.testing import LoopbackServer

pytest_plugins = ["pytester"]


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A fresh loopback model server; script it with ``server.queue(Reply(...))``."""
    with LoopbackServer() as running:
        yield running
