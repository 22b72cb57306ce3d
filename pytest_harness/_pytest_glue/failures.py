"""How a failure the harness raised is reported: its message, then the user's own frames."""

from __future__ import annotations

import linecache
import sys
import sysconfig
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, TypeAlias

import pytest

from pytest_harness.errors import HarnessError, HarnessStop, describe, find_cause

BRIEF_STYLES = ("auto", "short")  # the --tb styles a harness failure is shown briefly under
_PYTEST = ("_pytest", "pluggy", "pytest")  # the runner's frames: never named as left out

# A frame of ``ExceptionInfo.traceback``: pytest's TracebackEntry, which pytest does not
# export by name (its attributes path, lineno, name, frame and ishidden are documented).
Entry: TypeAlias = Any
Node: TypeAlias = "pytest.Item | pytest.Collector"


def brief(node: Node, excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """The report of a failure the harness raised in ``node`` (a test, or a module being
    collected), or None: pytest's report stands.

    None also under a ``--tb`` style that is not brief, and with ``--full-trace``.
    """
    if not shows_briefly(node.config):
        return None
    found = harness_error(excinfo.value)
    return None if found is None else render(node, excinfo, found)


def shows_briefly(config: pytest.Config) -> bool:
    """Whether this session shows the harness's failures briefly (``--tb=auto/short``)."""
    style = config.getoption("tbstyle", "auto")
    return style in BRIEF_STYLES and not config.getoption("fulltrace", False)


def harness_error(raised: BaseException) -> BaseException | None:
    """The harness's error a failure is about: ``raised`` itself, or the nearest one behind
    it; None for the user's own failures (an ``assert``, ``pytest.fail``, any other error)."""
    if isinstance(raised, pytest.fail.Exception):
        return None  # the user's pytest.fail (the harness's own say pytrace=False)
    if isinstance(raised, AssertionError):
        return raised if _in_harness(_innermost(raised)) else None
    return find_cause(raised, (HarnessError, HarnessStop))


def render(node: Node, excinfo: pytest.ExceptionInfo[BaseException], found: BaseException) -> str:
    """``found``'s message, the user's frames that led to it, and what was left out.

    When ``found`` is not what the test raised (an SDK or the application wrapped it, or
    ``found`` was made from it), a line says where the test failed (its own line, when
    the test's file holds one) and with what.
    """
    config, raised = node.config, excinfo.value
    entries = list(excinfo.traceback)
    users = _users(entries, raised)
    if users:  # the frames before the test's are pytest's (and the harness's hooks)
        entries = entries[entries.index(users[0]) :]
    own = _traceback(found) if found is not raised else []
    shown = _users(own, found) or users
    lines = [describe(found), ""]
    lines += [line for entry in shown for line in _frame(config, entry)]
    if found is not raised:
        tests = [entry for entry in users if Path(entry.path) == node.path] or users
        at = f" at {_place(config, tests[-1])}" if tests else ""
        then = type(raised).__name__ if str(found) in str(raised) else describe(raised)
        lines.append(f"The test then failed{at} with {then}")
    left_out = _packages(e for e in [*entries, *own] if e not in shown and not e.ishidden(excinfo))
    through = f" through {_names(left_out)}" if left_out else ""
    lines.append(f"(its traceback{through} is left out: run with --tb=long to see it)")
    return "\n".join(lines)


def _traceback(error: BaseException) -> list[Entry]:
    """The frames ``error`` passed through (none for an error made but not raised)."""
    if error.__traceback__ is None:
        return []
    return list(pytest.ExceptionInfo.from_exception(error).traceback)


def _users(entries: list[Entry], error: BaseException) -> list[Entry]:
    """The frames of the user's own code, in order."""
    info = pytest.ExceptionInfo.from_exception(error) if error.__traceback__ else None
    return [e for e in entries if _is_users(e.path) and not e.ishidden(info)]


def _frame(config: pytest.Config, entry: Entry) -> list[str]:
    """A frame as pytest's short style shows it: where, then the line it ran."""
    line = linecache.getline(str(entry.path), entry.lineno + 1).strip()
    return [f"{_place(config, entry)}: in {entry.name}", *([f"    {line}"] if line else [])]


def _place(config: pytest.Config, entry: Entry) -> str:
    """``path:line`` of a frame, the path relative to where pytest was started when inside."""
    path = Path(entry.path)
    if path.is_relative_to(config.invocation_params.dir):
        path = path.relative_to(config.invocation_params.dir)
    return f"{path}:{entry.lineno + 1}"


def _packages(entries: Iterable[Entry]) -> list[str]:
    """The installed packages (and pytest-harness) whose frames are among ``entries``, in
    order of appearance; the standard library's and pytest's own are not named. (Frames
    that hide themselves with ``__tracebackhide__`` are not given: ``--tb=long`` does not
    show them either.)"""
    names: list[str] = []
    for entry in entries:
        module = str(entry.frame.f_globals.get("__name__", "")).partition(".")[0]
        if module and module not in (*_PYTEST, *names) and _installed(entry.path):
            names.append(module)
    return names


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _innermost(error: BaseException) -> Path | str:
    """The file of the frame that raised ``error``."""
    tb = error.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return Path(tb.tb_frame.f_code.co_filename)


def _is_users(path: Path | str) -> bool:
    return isinstance(path, Path) and not any(path.is_relative_to(r) for r in _roots())


def _installed(path: Path | str) -> bool:
    """A file of an installed distribution, or of pytest-harness."""
    return isinstance(path, Path) and any(path.is_relative_to(r) for r in _roots()[1:])


def _in_harness(path: Path | str) -> bool:
    return isinstance(path, Path) and path.is_relative_to(_roots()[1])


@cache
def _roots() -> tuple[Path, ...]:
    """Where code that is not the user's lives: the standard library, pytest-harness, then
    the folders of installed distributions."""
    paths = sysconfig.get_paths()
    installed = {Path(paths[name]) for name in ("purelib", "platlib")}
    installed.update(
        Path(p) for p in sys.path if Path(p).name in ("site-packages", "dist-packages")
    )
    stdlib = Path(paths["stdlib"])
    package = Path(__file__).parents[1]
    return (stdlib, package, *sorted(installed))
