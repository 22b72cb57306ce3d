"""pytest hooks of pytest-harness: options, ini keys, markers, per-test scope.

Only pytest glue lives here; behaviour is in the modules these hooks call. Nothing heavy is
imported at module load (litellm and vcrpy are imported on the first model call), so a suite
that uses no harness feature pays almost nothing for the plugin.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

from pytest_harness import settings as _settings

if TYPE_CHECKING:
    from pytest_harness._runtime import Scope

SETTINGS = pytest.StashKey["_settings.Settings"]()
SCOPE = pytest.StashKey["Scope"]()

_LATER = " (takes effect once cassettes land; accepted now so configs need not change)"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "pytest-harness: LLM tribunals, cassettes, embedded model")
    group.addoption(
        "--harness-live",
        action="store_true",
        default=False,
        help="record model traffic from scratch: real calls, cassettes replaced" + _LATER,
    )
    group.addoption(
        "--harness-record",
        choices=_settings.RECORD_MODES,
        default=None,
        help="cassette mode: none = replay only (default), new = record missing requests, "
        "all = same as --harness-live" + _LATER,
    )
    group.addoption(
        "--harness-model",
        default=None,
        metavar="MODEL",
        help="litellm model name that replaces every model call's model "
        "(overrides harness_model and markers)",
    )
    group.addoption(
        "--harness-report",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help="print the tribunal summary table; with PATH also write it as JSON "
        "(tribunal reporting lands with tribunals)",
    )
    parser.addini(
        "harness_cassette_dir", "folder of cassettes, relative to rootdir", default="cassettes"
    )
    parser.addini("harness_model", "litellm model name that replaces every model call's model")
    parser.addini(
        "harness_degenerate",
        "on an empty, think-only or interrupted model response: fail (default), warn or off",
        default="fail",
    )
    parser.addini("harness_timeout", "per-call model HTTP timeout in seconds")
    parser.addini(
        "harness_record_failed",
        "write a test's cassette even when the test failed while recording",
        type="bool",
        default=False,
    )
    parser.addini(
        "harness_allow_hosts",
        "hosts tests may still connect to in replay mode, one per line",
        type="linelist",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "harness(cassette=None, degenerate=None, model=None, timeout=None): per-test harness "
        "settings: cassette name, degenerate policy (fail/warn/off), model, call timeout",
    )
    config.addinivalue_line(
        "markers",
        "scenarios(team, input, limit=None): parametrize the test with the findings of a "
        "shared-state team (lands with teams)",
    )
    try:
        resolved = _settings.resolve(
            config.option, config.getini, config.rootpath, config.option.verbose
        )
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[SETTINGS] = resolved


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    try:
        item.stash[SCOPE] = _scope_for(item)
        problem = None
    except ValueError as error:
        problem = f"{type(error).__name__}: {error}"
    if problem is not None:
        # Fail only after the rest of setup ran: pytest's own teardown expects its state.
        yield
        pytest.fail(problem, pytrace=False)
    with _in_scope(item):
        return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _in_scope(item):
        return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    with _in_scope(item):
        return (yield)


@contextmanager
def _in_scope(item: pytest.Item) -> Iterator[None]:
    """Run one test phase with the test's scope in force (none if setup failed early)."""
    from pytest_harness import _runtime

    scope = item.stash.get(SCOPE, None)
    if scope is None:
        yield
        return
    _runtime.quiet_dependencies()
    with _runtime.activate(scope):
        yield


def _scope_for(item: pytest.Item) -> Scope:
    from pytest_harness._runtime import Scope

    session = item.config.stash[SETTINGS]
    kwargs: dict[str, object] = {}
    args: tuple[object, ...] = ()
    # Markers on the module, class and function merge; the closest one wins per argument.
    for marker in reversed(list(item.iter_markers("harness"))):
        kwargs.update(marker.kwargs)
        args += marker.args
    test = _settings.for_test(session, kwargs, args)
    return Scope(
        degenerate=test.degenerate,  # type: ignore[arg-type]
        model=test.model,
        timeout=test.timeout,
        test_id=item.nodeid,
    )
