"""Running the harness's async core from sync code, also inside a running event loop."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import inspect
import threading
from collections.abc import Callable, Coroutine
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


async def in_daemon_thread(function: Callable[[], T], *, name: str) -> T:
    """``function()``, run in a daemon thread of its own; its result awaited on the loop.

    Not ``asyncio.to_thread`` nor any ``ThreadPoolExecutor``: their worker threads are
    joined at interpreter exit (``concurrent.futures`` registers an exit hook, and
    ``asyncio.run`` shuts its default executor down), so a call that hangs past its timeout
    would hold the process, and the pytest session, until it returned. A daemon thread is
    joined by nothing: once the awaiting task is cancelled (a timeout, an abort) the run goes
    on and the interpreter can exit; the thread keeps running until then, and whatever it
    returns late is dropped, since nobody waits for it any more.

    Args:
        function: called with no arguments, in the caller's context (contextvars copied).
        name: the thread's name, for a debugger or a thread dump.

    Raises:
        BaseException: whatever ``function`` raised.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: T | None, error: BaseException | None) -> None:
        if future.done():  # cancelled while the thread ran: the result is dropped
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)  # type: ignore[arg-type]

    def target() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = context.run(function)
        except BaseException as raised:  # handed to the awaiting task, as an executor does
            error = raised
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await future


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
    from pytest_harness._model import seam as _model

    await _model.settle()


atexit.register(close_loops)


def abandoned(task: asyncio.Future[Any]) -> bool:
    """Whether ``task`` ended on a replayed abandoned call (``CallAbandoned``): while
    recording, its deadline cut it off there, so the deadline counts it as still running."""
    from pytest_harness.errors import CallAbandoned

    if not task.done() or task.cancelled():
        return False
    return isinstance(task.exception(), CallAbandoned)
