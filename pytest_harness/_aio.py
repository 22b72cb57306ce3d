"""Run a coroutine to completion from sync code, also from inside a running event loop.

The harness's core is async (judges and tools run concurrently on one loop); its sync facade
calls this. Each thread keeps one event loop for these calls instead of a fresh
``asyncio.run`` loop per call: litellm caches its async HTTP clients and its default
executor per loop, so a new loop per call pays for new clients and new threads every time
(about 5 ms per replayed tribunal). The loops are closed at exit (and by the plugin at the
end of the session).

Inside a running loop (an async test, a notebook) that loop cannot be blocked on, so the
coroutine runs on a fresh loop in a short-lived thread. The harness's per-test scope is a
module global, not a ContextVar, so that thread still sees the test's cassette and settings.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_local = threading.local()
_loops: list[asyncio.AbstractEventLoop] = []
_lock = threading.Lock()


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` and return its result (or raise its exception)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:  # outside the except block: errors must not chain "no running event loop"
        return _thread_loop().run_until_complete(coroutine)
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


async def maybe_await(value: Any) -> Any:
    """``value``, awaited first when it is awaitable (hooks may be sync or async)."""
    return await value if inspect.isawaitable(value) else value


def close_loops() -> None:
    """Close the loops the sync facade kept (idempotent)."""
    with _lock:
        loops, _loops[:] = list(_loops), []
    for loop in loops:
        if loop.is_closed() or loop.is_running():
            continue
        try:
            loop.run_until_complete(_settle_litellm())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
        with _lock:
            _loops.append(loop)
    return loop


async def _settled(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await ``coroutine``, then let background work bound to this (throwaway) loop finish."""
    try:
        return await coroutine
    finally:
        await _settle_litellm()


async def _settle_litellm() -> None:
    from pytest_harness import _litellm

    await _litellm.settle()


atexit.register(close_loops)
