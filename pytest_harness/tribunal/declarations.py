"""A tribunal class's declarations (hooks, verdict rule, ``process``) and their checks.

``Declarations`` is plain data: each ``Tribunal`` subclass holds its own copy, filled from
its parent's and from the decorators in its class body. A decorator used in a class body
cannot reach the class (it does not exist yet), so it ``mark``s the function and the class
``apply``s the marks when it is created.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_harness.errors import ConfigError
from pytest_harness.tribunal.run import Hook
from pytest_harness.tribunal.strategies import Strategy
from pytest_harness.tribunal.verdicts import Evaluator

VALID_HOOKS = (
    "before_call",
    "before_agent",
    "after_agent",
    "agent_error",
    "after_call",
    "before_verdict",
    "after_verdict",
)
VALID_STREAMS = ("token", "agent", "tribunal")
UNSET: Any = object()  # "not given": None is a meaningful timeout / may_fail
_MARK = "__harness_tribunal__"


@dataclass
class Declarations:
    """A tribunal class's own declarations (copied, never shared, by subclasses)."""

    hooks: dict[str, list[Hook]] = field(default_factory=dict)
    process: Callable[[list[Any]], Any] | None = None
    strategy: Strategy | None = None
    evaluate: Evaluator | None = None
    may_fail: int | None = None

    def copy(self) -> Declarations:
        hooks = {event: list(fns) for event, fns in self.hooks.items()}
        return Declarations(hooks, self.process, self.strategy, self.evaluate, self.may_fail)

    def apply(self, fn: Any) -> bool:
        """Apply the declarations marked on ``fn`` in a class body; whether it had any."""
        declarations = getattr(fn, _MARK, ())
        for kind, *args in declarations:
            if kind == "hook":
                self.hooks.setdefault(args[0], []).append(fn)
            elif kind == "process":
                self.process = fn
            else:
                self.strategy, self.evaluate = args[0], fn
                if args[1] is not UNSET:
                    self.may_fail = args[1]
        return bool(declarations)


def in_class_body(depth: int) -> bool:
    """Whether the frame ``depth`` calls above the caller is a class body being executed."""
    names = sys._getframe(depth + 1).f_locals
    return "__module__" in names and "__qualname__" in names


def mark(fn: Hook, *declaration: Any) -> Hook:
    """Remember a declaration on ``fn``, for the class being defined to apply."""
    setattr(fn, _MARK, [*getattr(fn, _MARK, ()), declaration])
    return fn


def check_hook(event: str) -> str:
    """``event`` if it names a hook, else ``ConfigError`` listing the valid ones."""
    if event not in VALID_HOOKS:
        valid = ", ".join(VALID_HOOKS)
        raise ConfigError(f"unknown Tribunal hook {event!r}. Valid hooks: {valid}")
    return event


def check_may_fail(may_fail: Any) -> None:
    """``ConfigError`` unless ``may_fail`` is None or a whole number >= 0."""
    if may_fail is not None and (
        isinstance(may_fail, bool) or not isinstance(may_fail, int) or may_fail < 0
    ):
        raise ConfigError(f"may_fail expects None or a whole number >= 0, got {may_fail!r}")


def check_streams(streams: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The streams as a dict, or ``ConfigError`` naming unknown ones and the valid ones."""
    unknown = sorted(set(streams) - set(VALID_STREAMS))
    if unknown:
        raise ConfigError(
            f"unknown Tribunal stream(s) {', '.join(unknown)}. Valid streams: "
            + ", ".join(VALID_STREAMS)
        )
    return dict(streams)
