"""pytest hooks of pytest-harness: options, ini keys, markers, per-test scope.

Only pytest glue lives here; behaviour is in the modules these hooks call. Nothing heavy is
imported at module load (litellm and vcrpy are imported on the first model call), so a suite
that uses no harness feature pays almost nothing for the plugin.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_harness import settings as _settings
from pytest_harness.errors import HarnessError, describe

if TYPE_CHECKING:
    from pytest_harness._runtime import CallHook, Scope, TribunalListener
    from pytest_harness.assertions import Harness
    from pytest_harness.netguard import NetworkGuard
    from pytest_harness.recording import CassetteSlot

SETTINGS = pytest.StashKey["_settings.Settings"]()
SCOPE = pytest.StashKey["Scope"]()

RUN_ID = pytest.StashKey[str]()
FAILED = pytest.StashKey[bool]()
SLOT: pytest.StashKey[CassetteSlot | None] = pytest.StashKey()
GUARD: pytest.StashKey[NetworkGuard | None] = pytest.StashKey()
HARNESS = pytest.StashKey["Harness"]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
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
        choices=_settings.RECORD_MODES,
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
    try:
        resolved = _settings.resolve(
            config.option, config.getini, config.rootpath, config.option.verbose
        )
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[SETTINGS] = resolved
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
    recording = sys.modules.get("pytest_harness.recording")
    if recording is not None:
        recording.stop_local_server()
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
    from pytest_harness.assertions import Harness

    item: pytest.Item = request.node
    harness: Harness | None = item.stash.get(HARNESS, None)
    if harness is None:
        harness = item.stash[HARNESS] = Harness(item.nodeid)
    return harness


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

        terminalreporter.write_sep("=", "pytest-harness tribunals")
        terminalreporter.write_line(report.session_table(self.records))
        rows = report.agreement(self.records)
        if any(row["runs"] for row in rows):
            terminalreporter.write_line("")
            terminalreporter.write_line(report.agreement_table(rows))
        if settings.report:
            terminalreporter.write_line(f"tribunal report written to {self._json_path()}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.stash[SETTINGS].report:
            from pytest_harness.report import write_json

            write_json(self._json_path(), self.records)

    def _json_path(self) -> Path:
        return self.config.invocation_params.dir / str(self.config.stash[SETTINGS].report)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    try:
        item.stash[SCOPE] = _scope_for(item)
        problem = None
    except ValueError as error:
        problem = describe(error)
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
    try:
        with _in_scope(item):
            return (yield)
    finally:
        _finish_recording(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    report = yield
    if report.failed:
        item.stash[FAILED] = True
    guard = item.stash.get(GUARD, None)
    if call.when == "call" and guard is not None and guard.blocked and report.passed:
        # The test passed although a connection was refused (a library swallowed the error).
        report.outcome = "failed"
        report.longrepr = (
            "pytest-harness blocked network connections in replay mode: "
            + ", ".join(guard.blocked)
            + ". Record the test with --harness-live, or allow the hosts with harness_allow_hosts."
        )
    return report


def _finish_recording(item: pytest.Item) -> None:
    guard = item.stash.get(GUARD, None)
    if guard is not None:
        guard.uninstall()
    slot = item.stash.get(SLOT, None)
    if slot is not None:
        settings = item.config.stash[SETTINGS]
        failed = item.stash.get(FAILED, False)
        try:
            slot.close(keep=not failed or settings.record_failed)
        except HarnessError as error:
            # No traceback: its frames would show the secret values the scan looked for.
            pytest.fail(describe(error), pytrace=False)


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
        call_hooks=_call_hooks(item, session, test),
        tribunal_listeners=(_tribunal_listener(item),),
    )


def _tribunal_listener(item: pytest.Item) -> TribunalListener:
    """Record each tribunal the test runs: JUnit properties, the session report, the fixture."""

    def listener(tribunal: Any, error: BaseException | None) -> None:
        from pytest_harness import report

        data = report.record(tribunal, error, item.nodeid)
        item.user_properties.extend(report.junit_properties(data))
        item.ihook.pytest_harness_tribunal(item=item, tribunal=tribunal, record=data)
        harness = item.stash.get(HARNESS, None)
        if harness is not None:
            harness.tribunals.append(tribunal)

    return listener


def _call_hooks(
    item: pytest.Item, session: _settings.Settings, test: _settings.TestSettings
) -> tuple[CallHook, ...]:
    """The local-model route, then the test's cassette (unless ``cassette=False``)."""
    from pytest_harness import recording
    from pytest_harness.netguard import NetworkGuard
    from pytest_harness.scrub import Redaction

    guard = None if test.record != "none" else NetworkGuard(session.allow_hosts)
    item.stash[GUARD] = guard
    if guard is not None and _uses_harness(item):
        guard.install()  # the whole test is offline, not only from its first model call on
    hooks: list[CallHook] = [recording.LocalRoute(live=test.record != "none")]
    slot = None
    if test.cassette is not False:
        name = test.cassette if isinstance(test.cassette, str) else None
        slot = recording.CassetteSlot(
            path=recording.cassette_path(session.cassette_dir, item.nodeid, name),
            mode=test.record,
            nodeid=item.nodeid,
            run_id=item.config.stash[RUN_ID],
            ignore=session.match_ignore,
            redaction=Redaction.with_extra(
                headers=session.redact_headers,
                query=session.redact_query,
                body_fields=session.redact_body_fields,
            ),
            guard=guard,
        )
        hooks.append(slot)
    item.stash[SLOT] = slot
    return tuple(hooks)


def _uses_harness(item: pytest.Item) -> bool:
    names = getattr(item, "fixturenames", ())
    return item.get_closest_marker("harness") is not None or any(
        name.startswith("harness") for name in names
    )
