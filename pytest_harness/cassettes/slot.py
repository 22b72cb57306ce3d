"""One test's cassette: where it lives, opened on the first model call, saved at the end.

``CassetteSlot`` is the call hook the plugin installs for every test. It imports vcrpy (via
``cassettes.store``) only when the test actually calls a model, so tests that never do pay
nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_harness.cassettes.netguard import NetworkGuard
from pytest_harness.cassettes.scrub import Redaction, secret_values_from_env
from pytest_harness.errors import CassetteError, CassetteMiss, ConfigError, NetworkBlocked

SUFFIX = ".yaml"


def cassette_path(cassette_dir: Path, nodeid: str, name: str | None) -> Path:
    """``<dir>/<module path>/<test name>.yaml``, or ``<dir>/<name>.yaml`` for a named one."""
    if name is not None:
        relative = Path(name.removesuffix(SUFFIX))
        if relative.is_absolute() or ".." in relative.parts:
            raise ConfigError(
                f"@pytest.mark.harness(cassette={name!r}) must name a relative path inside "
                "harness_cassette_dir, without '..'."
            )
        return cassette_dir / relative.with_name(relative.name + SUFFIX)
    module, _, test = nodeid.partition("::")
    folder = Path(module).with_suffix("")
    return cassette_dir / folder / (_sanitize(test.replace("::", ".")) + SUFFIX)


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "test"


def find_cause(
    error: BaseException, kinds: tuple[type[BaseException], ...]
) -> BaseException | None:
    """The first exception of ``kinds`` behind ``error`` (causes, contexts, SDK wrappers)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kinds):
            return current
        original = getattr(current, "original_exception", None)
        todo += [current.__cause__, current.__context__]
        if isinstance(original, BaseException):
            todo.append(original)
    return None


@dataclass(eq=False)
class CassetteSlot:
    """The cassette of one test (a call hook of the model seam).

    Attributes:
        path: the cassette file.
        mode: ``none`` (replay), ``new`` or ``all``.
        nodeid: the test, for messages.
        run_id: identifies this recording run across xdist workers.
        ignore: body fields left out of matching.
        redaction: what is redacted before anything is saved.
        guard: the network guard to install when the cassette opens (replay only).
    """

    path: Path
    mode: str
    nodeid: str
    run_id: str
    ignore: tuple[str, ...] = ()
    redaction: Redaction = field(default_factory=Redaction)
    guard: NetworkGuard | None = None
    _cassette: Any = None
    _stack: contextlib.ExitStack | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def prepare(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        self.open()
        if self.mode == "none":
            # A retried miss would surface as a connection error, seconds later.
            kwargs.setdefault("num_retries", 0)
            kwargs.setdefault("max_retries", 0)
        # Only encodings vcrpy can decode, so cassettes hold readable text.
        kwargs["extra_headers"] = {
            **(kwargs.get("extra_headers") or {}),
            "Accept-Encoding": "gzip, deflate",
        }
        return kwargs

    def translate(self, error: BaseException) -> BaseException | None:
        return find_cause(error, (CassetteMiss, CassetteError, NetworkBlocked))

    def open(self) -> None:
        """Load the cassette and route HTTP through it (once; later calls do nothing)."""
        with self._lock:
            if self._stack is not None:
                return
            from pytest_harness.cassettes import store

            cassette = store.load(
                self.path,
                mode=self.mode,
                ignore=self.ignore,
                redaction=self.redaction,
                rerecord_hint=self.hint(),
            )
            stack = contextlib.ExitStack()
            stack.enter_context(store.patched(cassette))
            if self.guard is not None:
                self.guard.install()
                stack.callback(self.guard.uninstall)
            self._cassette, self._stack = cassette, stack

    def hint(self) -> str:
        test = self.nodeid
        return (
            f"To record it: pytest '{test}' --harness-record=new (adds what is missing), "
            f"or pytest '{test}' --harness-live (re-records the cassette from scratch)."
        )

    def close(self, *, keep: bool) -> Path | None:
        """Stop routing through the cassette; save what was recorded when ``keep``."""
        with self._lock:
            stack, cassette = self._stack, self._cassette
            self._stack = self._cassette = None
        if stack is None:
            return None
        stack.close()
        if self.mode == "none" or not keep:
            return None
        from pytest_harness.cassettes import store

        secrets = secret_values_from_env(os.environ)
        written = store.save_recordings(
            cassette, mode=self.mode, run_id=self.run_id, secrets=secrets
        )
        return self.path if written else None
