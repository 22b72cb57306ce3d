"""Hypothesis settings for tests whose model calls are recorded: the same examples every run."""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast, overload

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.errors import HypothesisException

from pytest_harness.errors import ConfigError

_Test = TypeVar("_Test", bound=Callable[..., Any])

RECORDED = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=(HealthCheck.function_scoped_fixture,),
    print_blob=False,
    report_multiple_bugs=False,
)

# ``--hypothesis-profile=harness`` (or ``settings.load_profile("harness")``) makes these
# the default of every test; ``@recorded`` gives them to one test.
settings.register_profile("harness", RECORDED)


@overload
def recorded(test: _Test, /) -> _Test: ...


@overload
def recorded(*, max_examples: int = ...) -> Callable[[_Test], _Test]: ...


def recorded(
    test: _Test | None = None, /, *, max_examples: int = 20
) -> _Test | Callable[[_Test], _Test]:
    """Give a hypothesis test (or state machine) the ``RECORDED`` settings and a fixed seed.

    Use it above or below ``@given``, bare or with a number of examples:

        @recorded
        @given(perturbed("Where is my order?"))
        def test_intent(harness, text): ...

        @recorded(max_examples=50)
        @given(...)
        def test_more(harness, text): ...

    The seed comes from the test's module and qualified name, so editing its body keeps
    its examples (and its cassette valid); renaming it draws new ones. A failing example
    is reported with the error it raised, without running it (and its requests) again.
    """
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 1:
        raise ConfigError(f"recorded(max_examples=...) expects 1 or more, got {max_examples!r}.")
    chosen = settings(RECORDED, max_examples=max_examples)

    def decorate(test: _Test) -> _Test:
        return seed(_seed(_inner(test)))(chosen(_reported_once(test)))

    return decorate if test is None else decorate(test)


def _reported_once(test: _Test) -> _Test:
    """``test`` whose failing example, run again by hypothesis to report it, is not run.

    Below ``@given`` the function itself is wrapped; above it, hypothesis's handle to the
    inner test (``test.hypothesis.inner_test``, there to be wrapped by plugins). The error
    of the last example run is kept until the next one starts, and raised in place of the
    report run, which hypothesis marks ``is_final`` and makes only after a failure.
    """
    if inspect.isclass(test):
        return test  # a state machine: its steps are not ours to wrap
    handle = getattr(test, "hypothesis", None)
    inner = _inner(test)
    failed: list[BaseException] = []

    @functools.wraps(inner)
    def once(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the test's frames, not this wrapper's
        final = current_build_context().is_final  # also for explicit @example runs
        if final and failed:
            raise failed.pop()
        failed.clear()
        try:
            return inner(*args, **kwargs)
        except (Exception, pytest.fail.Exception) as error:
            if not final and not isinstance(error, HypothesisException):
                failed.append(error)
            raise

    if handle is None:
        return cast(_Test, once)
    handle.inner_test = once
    return test


def _inner(test: Callable[..., Any]) -> Callable[..., Any]:
    """The test function itself: under ``@given``'s wrapper (whose name is not its own)."""
    handle = getattr(test, "hypothesis", None)
    return test if handle is None else cast(Callable[..., Any], handle.inner_test)


def _seed(test: Callable[..., Any]) -> int:
    """A seed from the test's module and qualified name, the same in every process."""
    name = f"{test.__module__}:{test.__qualname__}".encode()
    return int.from_bytes(hashlib.sha256(name).digest()[:8], "big")


def scenarios(team: type[Any], input: Any, *, cassette_dir: str | Path = "cassettes") -> Any:
    """A strategy of the scenarios ``team`` recorded for ``input``.

    Args:
        team: the ``SharedState`` subclass.
        input: the input it was given (the marker's ``input``).
        cassette_dir: ``harness_cassette_dir`` (relative paths from the working directory).

    Raises (when drawn):
        ConfigError: nothing recorded yet; it names how to record.
    """
    from pytest_harness._scenarios import Request, recorded

    request = Request(team, input, None)

    def read() -> st.SearchStrategy[Any]:
        path = request.path(Path(cassette_dir))
        items = recorded(path)
        if not items:
            raise ConfigError(
                f"no recorded scenarios of {team.__name__} for {input!r} at {path}: record them "
                f"with a test marked @pytest.mark.scenarios({team.__name__}, input=...) and "
                "--harness-live."
            )
        return st.sampled_from(items)

    return st.deferred(read)
