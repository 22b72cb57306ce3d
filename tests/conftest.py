"""Shared fixtures: a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_harness.testing import LoopbackServer

pytest_plugins = ["pytester"]


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A fresh loopback model server; script it with ``server.queue(Reply(...))``.

    Every reply a test queues must be used by it.
    """
    with LoopbackServer() as running:
        yield running
        unused = running.reset()
    assert unused == [], "the test queued replies it did not use"
