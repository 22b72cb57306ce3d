"""Shared fixtures: a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import sys
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


@pytest.fixture(autouse=True)
def _keep_litellms_clients() -> None:
    """Let litellm keep every HTTP client the suite makes.

    litellm caches one client per endpoint, 200 at most; every loopback server here is a new
    endpoint, so a long run evicts clients, and an evicted async client whose event loop is
    closed cannot be closed: its sockets are reported (as unraisable ResourceWarnings) by
    whichever later test collects them. A user's suite talks to a few endpoints, never 200.
    """
    litellm = sys.modules.get("litellm")
    cache = getattr(litellm, "in_memory_llm_clients_cache", None)
    if cache is not None and getattr(cache, "max_size_in_memory", 0) < 100_000:
        cache.max_size_in_memory = 100_000
