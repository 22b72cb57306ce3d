"""Run a coroutine to completion from sync code, also from inside a running event loop.

The harness's core is async (judges and tools run concurrently on one loop); its sync facade
calls this. Inside a running loop (an async test, a notebook) ``asyncio.run`` is refused, so
the coroutine runs on a fresh loop in a short-lived thread. The harness's per-test scope is a
module global, not a ContextVar, so that thread still sees the test's cassette and settings.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` and return its result (or raise its exception)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:  # outside the except block: errors must not chain "no running event loop"
        return asyncio.run(_settled(coroutine))
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(_settled(coroutine))
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, name="pytest-harness-sync", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


async def _settled(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await ``coroutine``, then let background work bound to this loop finish."""
    from pytest_harness import model

    try:
        return await coroutine
    finally:
        await model.settle()
