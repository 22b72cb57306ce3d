"""pytest hooks of pytest-harness: options, ini keys, markers, the fixture, the session report.

Only pytest glue lives here; behaviour is in the modules these hooks call, imported when a
test first needs them. At start-up the plugin imports only ``settings`` (to resolve and check
the options), so a suite that uses no harness feature pays almost nothing for it.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_harness.fixture import Harness
    from pytest_harness.item import ItemRun
    from pytest_harness.settings import Settings

SETTINGS: pytest.StashKey[Settings] = pytest.StashKey()
RUN_ID: pytest.StashKey[str] = pytest.StashKey()
RUN: pytest.StashKey[ItemRun] = pytest.StashKey()
FAILED: pytest.StashKey[bool] = pytest.StashKey()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    from pytest_harness.settings import RECORD_MODES

    group = parser.getgroup("harness", "pytest-harness: LLM tribunals, cassettes, embedded model")
    group.addoption(
        "--harness-live",
        action="store_true",
        default=False,
        help="record model traffic from scratch: real calls; each test's cassette is replaced "
        "by what it recorded (written only if the test passed)",
    )
    group.addoption(
        "--harness-record",
        choices=RECORD_MODES,
        default=None,
        help="cassette mode: none = replay only, offline (default); new = keep recordings and "
        "record missing requests; all = same as --harness-live",
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
        help="print the table of every tribunal run at the end of the session (also shown "
        "with -v); with PATH also write it, with judge agreement, as JSON",
    )
    parser.addini(
        "harness_cassette_dir", "folder of cassettes, relative to rootdir", default="cassettes"
    )
    parser.addini("harness_model", "litellm model name that replaces every model call's model")
    parser.addini(
        "harness_record",
        "cassette mode when the command line gives none: none (default), new or all",
        default="none",
    )
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
        "hosts tests may still connect to in replay mode, one per line (loopback included)",
        type="linelist",
    )
    parser.addini(
        "harness_match_ignore",
        "dotted JSON body fields left out of cassette matching, one per line",
        type="linelist",
    )
    for what in ("headers", "query", "body_fields"):
        parser.addini(
            f"harness_redact_{what}",
            f"extra request {what.replace('_', ' ')} redacted before cassettes are saved",
            type="linelist",
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "harness(cassette=None, degenerate=None, model=None, record=None, timeout=None): "
        "per-test harness settings: cassette name (False: none), degenerate policy "
        "(fail/warn/off), model, record mode (none/new/all), call timeout",
    )
    config.addinivalue_line(
        "markers",
        "scenarios(team, input, limit=None): parametrize the test with the findings of a "
        "shared-state team (lands with teams)",
    )
    from pytest_harness import settings

    try:
        config.stash[SETTINGS] = settings.resolve(
            config.option, config.getini, config.rootpath, config.option.verbose
        )
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    # One id per recording run, shared with xdist workers: cassettes shared by several tests
    # collect all of this run's interactions instead of the last test's share.
    workerinput = getattr(config, "workerinput", None)
    config.stash[RUN_ID] = workerinput["harness_run_id"] if workerinput else os.urandom(16).hex()
    if workerinput is None:  # under xdist the controller reports for every worker
        config.pluginmanager.register(_SessionReport(config), "harness-report")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the run id to each worker."""
    node.workerinput["harness_run_id"] = node.config.stash[RUN_ID]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the embedded model's server and close the sync facade's loops, if they ran."""
    import sys

    route = sys.modules.get("pytest_harness.local.route")
    if route is not None:
        route.stop_local_server()
    aio = sys.modules.get("pytest_harness._aio")
    if aio is not None:
        aio.close_loops()


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> Harness:
    """Run agents and assert with tribunals in this test (through its cassette).

    ``harness.run(Agent, input)`` returns the agent's Result;
    ``harness.assert_verdict(Tribunal, input)`` fails the test, with every judge's vote and
    reason, unless the panel's verdict passes; ``harness.tribunals`` lists the panels run.
    """
    item: pytest.Item = request.node
    run = item.stash.get(RUN, None)
    if run is None:  # its harness marker is wrong: the test fails once set-up is over
        from pytest_harness.fixture import Harness

        return Harness(item.nodeid)
    return run.fixture()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness.errors import describe
    from pytest_harness.item import ItemRun

    config = item.config
    try:
        run = item.stash[RUN] = ItemRun.start(item, config.stash[SETTINGS], config.stash[RUN_ID])
    except ValueError as error:
        # Fail only after the rest of setup ran: pytest's own teardown expects its state.
        yield
        pytest.fail(describe(error), pytrace=False)
    with run.active():
        return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    run = item.stash.get(RUN, None)
    if run is None:
        return (yield)
    with run.active():
        return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    run = item.stash.get(RUN, None)
    if run is None:
        return (yield)
    try:
        with run.active():
            return (yield)
    finally:
        settings = item.config.stash[SETTINGS]
        problem = run.finish(keep=not item.stash.get(FAILED, False) or settings.record_failed)
        if problem is not None:
            # No traceback: its frames would show the secret values the scan looked for.
            pytest.fail(problem, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    report = yield
    if report.failed:
        item.stash[FAILED] = True
    run = item.stash.get(RUN, None)
    blocked = run.blocked() if run is not None and call.when == "call" else None
    if blocked is not None and report.passed:
        # The test passed although a connection was refused (a library swallowed the error).
        report.outcome = "failed"
        report.longrepr = blocked
    return report


class _SessionReport:
    """Collects every tribunal run (from all xdist workers) and reports it at the end.

    Records travel in each test's ``user_properties``: xdist ships them to the controller,
    JUnit XML writes them as properties.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" and report.user_properties:
            from pytest_harness.report import records_in

            self.records += records_in(report.user_properties)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        settings = self.config.stash[SETTINGS]
        if not self.records or (settings.report is None and settings.verbose <= 0):
            return
        from pytest_harness import report

        report.summary(terminalreporter.write_sep, terminalreporter.write_line, self.records)
        if settings.report:
            terminalreporter.write_line(f"tribunal report written to {self._json_path()}")

    def pytest_sessionfinish(self) -> None:
        if self.config.stash[SETTINGS].report:
            from pytest_harness.report import write_json

            write_json(self._json_path(), self.records)

    def _json_path(self) -> Path:
        return self.config.invocation_params.dir / str(self.config.stash[SETTINGS].report)
