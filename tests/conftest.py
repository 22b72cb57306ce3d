"""Shared fixtures: a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from pytest_harness.testing import LoopbackServer

pytest_plugins = ["pytester"]

# The agent frameworks and the Anthropic and Gemini SDKs are installed on Python 3.11 and
# later only (the dev extra's markers: some of them require it); their tests need them.
collect_ignore = (
    ["test_agent_frameworks.py", "test_loopback_formats.py", "test_mcp.py"]
    if sys.version_info < (3, 11)
    else []
)


@pytest.fixture(scope="session", autouse=True)
def _heavy_imports_first() -> None:
    """Import once, before any in-process pytest run, what those runs would import.

    pytester's in-process runs forget the modules they import. litellm cannot be imported
    twice in one process, and the others are slow to. httpx and httpx2 import their transport
    (httpcore, httpcore2, h11) on first use and map its exceptions by class: a transport
    imported again by a later run raises classes the map no longer knows. Which test of a
    worker runs first is random, so every worker imports them all first. (Tests of what is
    imported lazily run in subprocesses.)
    """
    import aiohttp  # noqa: F401
    import h11  # noqa: F401
    import httpcore  # noqa: F401
    import httpcore2  # noqa: F401
    import httpx  # noqa: F401
    import openai  # noqa: F401
    import requests  # noqa: F401

    from pytest_harness import tribunal
    from pytest_harness._cassettes import store
    from pytest_harness._model import seam as _model
    from pytest_harness._pytest_glue import fixture as _fixture
    from pytest_harness._report import tribunals

    _model.lib()
    assert all((store.HarnessCassette, _fixture.Harness, tribunals.record, tribunal.Tribunal))


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
