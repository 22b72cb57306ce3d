"""What vcrpy's patchers change, put back exactly once no cassette is open any more.

vcrpy patches HTTP libraries with ``mock.patch`` objects, each of which restores on exit what
it found on entry. Two cassettes open at once in one process and closed out of order (the
first opened, first closed) would leave the second's stub in place for good, and every later
request would run through a closed cassette. ``Registry`` notes each patched attribute's
value before any cassette touched it, and puts them all back when the last one closes.

Plain Python on ``mock`` patchers: vcrpy itself is not imported here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

_ABSENT = object()


def patched_object(patcher: Any) -> Any:
    """What a ``mock`` patcher patches (known through its ``getter`` until it is entered)."""
    getter = getattr(patcher, "getter", None)
    return getter() if callable(getter) else None


class Registry:
    """The open cassettes of this process and the attributes they patched."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[object] = []
        self._pristine: dict[tuple[Any, str], Any] = {}

    def opened(self, cassette: object, patchers: Iterable[Any]) -> None:
        """Note ``cassette`` as open, and the current value of what its patchers patch."""
        with self._lock:
            for patcher in patchers:
                target, name = patched_object(patcher), getattr(patcher, "attribute", None)
                if target is not None and isinstance(name, str):
                    self._pristine.setdefault((target, name), target.__dict__.get(name, _ABSENT))
            self._open.append(cassette)

    def closed(self, cassette: object) -> None:
        """Note ``cassette`` as closed; the last one out restores every patched attribute."""
        with self._lock:
            self._open.remove(cassette)
            if not self._open:
                self._restore()

    def _restore(self) -> None:
        for (target, name), value in self._pristine.items():
            if value is _ABSENT:
                if name in target.__dict__:
                    delattr(target, name)
            elif target.__dict__.get(name, _ABSENT) is not value:
                setattr(target, name, value)
        self._pristine.clear()
