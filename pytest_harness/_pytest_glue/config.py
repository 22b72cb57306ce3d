"""The harness's part in pytest's config: the session's settings, kept in ``config.stash``;
the plugins registered for what the session asked for (prune, the model matrix, the session
report); what is forgotten at the end. (``_pytest_glue.item`` is the harness's part in one test.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_harness._pytest_glue.settings import Settings, resolve

SETTINGS: pytest.StashKey[Settings] = pytest.StashKey()


def settings(config: pytest.Config) -> Settings:
    """The session's settings (command line > ini > default), resolved on first use."""
    resolved = config.stash.get(SETTINGS, None)
    if resolved is None:
        try:
            resolved = resolve(config.option, config.getini, config.rootpath, config.option.verbose)
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
        config.stash[SETTINGS] = resolved
    return resolved


def configure(config: pytest.Config, run_id: str, gates: object | None) -> None:
    """Resolve the settings (a wrong value is a usage error before any test runs), then
    register what the session asked for.

    In this order (pytest calls the last registered first): ``--harness-prune``, the
    plugin's dataset ``gates`` (None on an xdist worker), the model matrix, the session
    report (on the controller, when shown or recording).
    """
    session = settings(config)
    if config.option.harness_prune is not None:  # every process notes the cassettes it opens
        config.pluginmanager.register(Prune(config, session, run_id), "harness-prune")
    if gates is not None:
        config.pluginmanager.register(gates, "harness-dataset-gates")
    if session.models:  # every test that uses the harness, once per model
        from pytest_harness._pytest_glue.matrix import Matrix

        config.pluginmanager.register(Matrix(session.models), "harness-matrix")
    shown = config.option.harness_report is not None or config.option.verbose > 0
    controller = getattr(config, "workerinput", None) is None
    if controller and (shown or session.record != "none" or session.models):
        from pytest_harness._report.session import SessionReport

        written = config.invocation_params.dir / session.report if session.report else None
        report = SessionReport(written, tables=shown)  # recording alone: verdict drift only
        config.pluginmanager.register(report, "harness-report")


def unconfigure(config: pytest.Config, run_id: str | None) -> None:
    """Drop the session's spend ledger and the run's log of cassette files (the controller
    does, the last one out; the log only if this process imported the cassette files)."""
    if getattr(config, "workerinput", None) is not None or run_id is None:
        return  # the controller is the last one out; None: configure never ran
    runlog = sys.modules.get("pytest_harness._cassettes.runlog")
    if runlog is not None:
        runlog.RunLog(run_id).forget()  # which files the run wrote and opened
    resolved = config.stash.get(SETTINGS, None)
    if resolved is not None and resolved.max_session_cost is not None:
        from pytest_harness._pytest_glue import watch as spend

        spend.forget(run_id)  # the session's spend ledger


class Prune:
    """``--harness-prune``: the cassettes no test of a full run opened, listed or removed.

    Every process of the session (xdist workers too) notes in the run's ``runlog.RunLog`` the
    cassettes its tests open (``runlog.note_used``: a test's cassette, a scenarios marker's
    team recording), and why the run is not a full one. A skipped test keeps its cassette,
    and a module skipped as a whole keeps its folder (``<dir>/<module path>/``).

    A full run: the command line names no paths or node ids (the ini's ``testpaths``, or
    the folder pytest started in); nothing deselected (``-k``, ``-m``, ``--deselect``,
    ``--lf``); every module collected; not ``--collect-only``; every test ran and none
    failed (a failing test may stop before it opens its cassette); the session was not
    interrupted. Anything else is partial: nothing is listed or removed, and the summary
    says why.
    """

    def __init__(self, config: pytest.Config, session: Settings, run_id: str) -> None:
        from pytest_harness._cassettes import runlog

        self.config = config
        self.action = session.prune
        self.cassette_dir = session.cassette_dir
        self.log = runlog.RunLog(run_id)
        self._before = runlog.track(self.log)
        self.controller = getattr(config, "workerinput", None) is None

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.log.partial(f"{report.nodeid or 'a module'} failed to collect")
        elif report.skipped and report.nodeid.endswith(".py"):
            folder = self.cassette_dir / Path(report.nodeid).with_suffix("")
            self.log.used(folder, folder=True)  # its tests' cassettes: kept

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.log.partial("tests were deselected (-k, -m, --deselect, --lf)")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.log.partial("tests failed (one may fail before it opens its cassette)")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.controller:
            return
        if self.config.args_source == pytest.Config.ArgsSource.ARGS:
            self.log.partial(
                "the command line named what to run (run it without paths or node ids: "
                "the ini's testpaths, or the folder pytest starts in)"
            )
        if self.config.option.collectonly:
            self.log.partial("--collect-only runs no test")
        if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            self.log.partial("no test was collected")
        elif exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            self.log.partial(f"the session ended early ({pytest.ExitCode(exitstatus).name})")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.controller:
            return
        from pytest_harness._cassettes.slot import SUFFIX

        write = terminalreporter.write_line
        terminalreporter.section("pytest-harness cassettes no test used")
        reasons = self.log.reasons()
        if reasons:
            write(
                f"--harness-prune={self.action}: nothing listed or removed, this was not a "
                f"full run: {'; '.join(reasons)}."
            )
            return
        unused = self.log.unused(self.cassette_dir, SUFFIX)
        if not unused:
            write(f"every cassette under {self._shown(self.cassette_dir)} was used.")
            return
        done = "removed" if self.action == "remove" else "not used by any test"
        write(f"{len(unused)} cassette(s) under {self._shown(self.cassette_dir)} {done}:")
        for path in unused:
            if self.action == "remove":
                path.unlink(missing_ok=True)
                self._drop_empty(path.parent)
            write(f"  {self._shown(path)}")
        if self.action == "list":
            write("Delete them with pytest --harness-prune=remove (a full run, as this one).")

    def _shown(self, path: Path) -> str:
        root = self.config.rootpath.resolve()
        resolved = path.resolve()
        return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(path)

    def _drop_empty(self, folder: Path) -> None:
        """Remove ``folder`` and its parents up to the cassette folder while they are empty."""
        top = self.cassette_dir.resolve()
        while folder.resolve() != top and folder.resolve().is_relative_to(top):
            try:
                folder.rmdir()
            except OSError:
                return  # not empty
            folder = folder.parent

    def pytest_unconfigure(self) -> None:
        from pytest_harness._cassettes import runlog

        runlog.track(self._before)
