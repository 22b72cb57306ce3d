"""The pytest plugin of pytest-harness: its options, ini keys and markers, its fixtures, and
the hooks that run a test in its harness scope.

Only pytest's hooks live here. The work is done by the modules these hooks call
(``_pytest_glue``: a test's part in ``item``, the session's in ``config``), imported when
first needed, so loading the plugin imports nothing heavy.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_harness._model import env as _env

if TYPE_CHECKING:
    from pytest_harness._pytest_glue.fixture import Harness

RUN_ID: pytest.StashKey[str] = pytest.StashKey()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


# The docs' reference pages (docs/reference/options.md, ini.md, markers.md) are rendered
# from these registrations (docs/hooks.py calls pytest_addoption and add_markers), so the
# two cannot drift apart.
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
        default=None,
        metavar="{none,new,all}",
        help="cassette mode: none = replay only, offline (default); new = keep recordings and "
        "record missing requests; all = same as --harness-live",
    )
    group.addoption(
        "--harness-model",
        default=None,
        metavar="MODEL",
        help="litellm model name that replaces every model call's model (overrides "
        "harness_model and markers)",
    )
    group.addoption(
        "--harness-models",
        default=None,
        metavar="MODEL,MODEL",
        help="comma-separated litellm model names: run every test that uses the harness once "
        "per model (ids test[MODEL]), each with that model as its override and its own "
        "cassette (test[MODEL].yaml), and report them as a matrix (overrides harness_models; "
        "refused with --harness-model)",
    )
    group.addoption(
        "--harness-judge-model",
        default=None,
        metavar="MODEL",
        help="litellm model name of every judge a tribunal runs (and of ready-made judges), "
        "whatever --harness-model or --harness-models say (overrides harness_judge_model and "
        "markers)",
    )
    group.addoption(
        "--harness-prune",
        nargs="?",
        const="list",
        default=None,
        metavar="{list,remove}",
        help="after a full run (no paths, -k, -m or deselection; every test passed), list the "
        "cassettes under harness_cassette_dir that no test opened (list, the default), or "
        "delete them (remove)",
    )
    group.addoption(
        "--harness-report",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help="print the session's tables (tribunal runs, sampled tests, calibrations, agent "
        "runs, model calls; also shown with -v); with PATH also write them: PATH.html as one "
        "self-contained HTML page, any other PATH as JSON",
    )
    _add_ini_keys(parser)


def _add_ini_keys(parser: pytest.Parser) -> None:
    parser.addini(
        "harness_cassette_dir",
        help="folder of cassettes, relative to rootdir",
        type="string",
        default="cassettes",
    )
    parser.addini(
        "harness_model",
        help="litellm model name that replaces every model call's model",
        type="string",
        default="",
    )
    parser.addini(
        "harness_models",
        help="comma-separated litellm model names: a model matrix, as --harness-models (a "
        "--harness-model on the command line turns it off)",
        type="string",
        default="",
    )
    parser.addini(
        "harness_judge_model",
        help="litellm model name of every judge a tribunal runs, whatever the model override",
        type="string",
        default="",
    )
    parser.addini(
        "harness_record",
        help="cassette mode when the command line gives none: none (default), new or all",
        type="string",
        default="none",
    )
    parser.addini(
        "harness_degenerate",
        help="on an empty, think-only or interrupted model response: fail (default), warn or off",
        type="string",
        default="fail",
    )
    parser.addini(
        "harness_mcp_stdio",
        help="an MCP server over stdio in a test with a cassette: record (default: recorded, "
        "replayed without the server), error (refused) or live (runs live, unrecorded)",
        type="string",
        default="record",
    )
    parser.addini(
        "harness_timeout",
        help="per-call model HTTP timeout in seconds",
        type="string",
        default="",
    )
    parser.addini(
        "harness_record_failed",
        help="write a test's cassette even when the test failed while recording",
        type="bool",
        default=False,
    )
    parser.addini(
        "harness_allow_hosts",
        help="hosts tests may still connect to in replay mode, one per line (loopback included)",
        type="linelist",
        default=[],
    )
    parser.addini(
        "harness_ignore_hosts",
        help="hosts whose traffic passes through untouched, never recorded nor refused, one "
        "per line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "harness_capture",
        help="whose HTTP traffic is recorded and replayed: harness (default: tests that use "
        "the harness marker or a harness fixture) or all (every test)",
        type="string",
        default="harness",
    )
    parser.addini(
        "harness_max_cost",
        help="most one test may spend on live model calls (litellm prices)",
        type="string",
        default="",
    )
    parser.addini(
        "harness_max_session_cost",
        help="most the whole session may spend on live model calls (litellm prices)",
        type="string",
        default="",
    )
    parser.addini(
        "harness_change_budget",
        help="how much a re-recording's cost or tokens may rise before its test counts as "
        "regressed: a percentage (25%, the default) or a fraction (0.25)",
        type="string",
        default="",
    )
    parser.addini(
        "harness_strict_replay",
        help="a replayed test that leaves a recording of its cassette unused fails: true or "
        "false (default)",
        type="bool",
        default=False,
    )
    parser.addini(
        "harness_match_ignore",
        help="dotted JSON body fields left out of cassette matching, one per line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "harness_redact_headers",
        help="extra request headers redacted before cassettes are saved",
        type="linelist",
        default=[],
    )
    parser.addini(
        "harness_redact_query",
        help="extra request query redacted before cassettes are saved",
        type="linelist",
        default=[],
    )
    parser.addini(
        "harness_redact_body_fields",
        help="extra request body fields redacted before cassettes are saved",
        type="linelist",
        default=[],
    )


def add_markers(config: pytest.Config) -> None:
    """Register the harness's markers (``pytest --markers``; ``--strict-markers`` accepts them)."""
    config.addinivalue_line(
        "markers",
        "harness(cassette=None, degenerate=None, model=None, record=None, timeout=None, "
        "samples=1, pass_rate=1.0, confidence=None, margin=0.05, inconclusive='fail', "
        "mcp_stdio=None, judge_model=None, strict_replay=None): per-test harness settings: "
        "cassette name (False: none), degenerate policy (fail/warn/off), model, judges' "
        "model, record mode (none/new/all), call timeout; run the body `samples` times and "
        "pass when at least `pass_rate` of them pass; with `confidence`, stop as soon as the "
        "samples decide at that confidence (SPRT, indifference `margin`), an undecided test "
        "being `inconclusive` (fail/xfail/pass); an MCP server over stdio "
        "(record/error/live); fail on recordings a replay left unused",
    )
    config.addinivalue_line(
        "markers",
        "scenarios(team, input, limit=None): parametrize the test's `scenario` argument with "
        "what a shared-state team generates (recorded in its own cassette)",
    )
    config.addinivalue_line(
        "markers",
        "dataset(source, argname='case', pass_rate=None, confidence=None, margin=0.05, "
        "inconclusive='fail'): parametrize the test's `case` argument with each case of a "
        "JSONL, CSV or YAML file (or a list), ids from each row's `id` or its input; with "
        "`pass_rate`, a gate: the share of cases passing must reach it (sequential with "
        "`confidence`), and the gate, not each case, decides the run",
    )
    config.addinivalue_line(
        "markers",
        "harness_unavailable(message): set by the harness; the test errors at set-up with the "
        "message",
    )
    config.addinivalue_line(
        "markers",
        "harness_case(index, count, source): set by the harness; a dataset case's place in its "
        "dataset",
    )


@pytest.hookimpl(tryfirst=True)  # before hypothesis's, which loads --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    _env.apply()  # litellm's environment, for the application's own calls too
    if getattr(config.option, "hypothesis_profile", None) == "harness":
        import pytest_harness.strategies  # noqa: F401  (registers the "harness" profile)
    add_markers(config)
    # One id per recording run, shared with xdist workers: cassettes shared by several tests
    # collect all of this run's interactions instead of the last test's share.
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput["harness_run_id"] if workerinput else os.urandom(16).hex()
    config.stash[RUN_ID] = run_id
    gates = None if workerinput else DatasetGates()  # the controller sees every case's report
    if not workerinput:
        config.pluginmanager.register(ReplayNotes(), "harness-replay-notes")
    if config.option.verbose > 0 or _names_harness_options(config):  # -v shows the tables
        from pytest_harness._pytest_glue import config as _config

        _config.configure(config, run_id, gates)  # settings now: a wrong value is a usage error
    elif gates is not None:
        config.pluginmanager.register(gates, "harness-dataset-gates")


def _names_harness_options(config: pytest.Config) -> bool:
    """Whether the command line sets a harness option (each defaults to None or False), or
    an ``-o`` override or the configuration file names a harness ini key. A session that
    does neither loads its settings (defaults: none can be wrong) with its first harness
    test, and pytest starts without importing them."""
    options = (value for name, value in vars(config.option).items() if name.startswith("harness_"))
    if any(value not in (None, False) for value in options):
        return True
    if any(line.startswith("harness_") for line in config.option.override_ini or ()):
        return True
    return config.inipath is not None and "harness_" in config.inipath.read_text("utf-8")


class DatasetGates:
    """Keeps the result each dataset case's report carries; at the end, the gates decide
    (``pytest_harness._datasets.gate``, imported only when a dataset has a gate). Every session
    registers it on its controller, so it lives here rather than in ``_pytest_glue.config``."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.records: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            for name, value in report.user_properties:
                if name == "harness_dataset_case":  # _gate.CASE_PROPERTY
                    self.found.append(str(value))

    @pytest.hookimpl(tryfirst=True)  # before the session report writes its file
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.found:
            from pytest_harness._datasets.gate import finish

            self.records = finish(session, self.found)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.records:
            from pytest_harness._datasets.gate import summary

            summary(terminalreporter, self.records)


class ReplayNotes:
    """Keeps each replayed test's report row; at the end, when no session report prints
    them (``_report.session``: recording, ``-v``, ``--harness-report``), prints the tests whose
    replay left recordings unused or ran something live (``_cassettes.replayed``, imported
    only then). Every session registers it on its controller, as ``DatasetGates``."""

    def __init__(self) -> None:
        self.rows: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            for name, value in report.user_properties:
                if name == "harness_replay":  # replayed.REPLAY_PROPERTY
                    self.rows.append(str(value))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.rows or terminalreporter.config.pluginmanager.has_plugin("harness-report"):
            return
        from pytest_harness._cassettes.replayed import replay_table

        table = replay_table([json.loads(row) for row in self.rows])
        if table:
            terminalreporter.write_sep("=", "pytest-harness replay")
            terminalreporter.write_line(table)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the run id to each worker."""
    node.workerinput["harness_run_id"] = node.config.stash[RUN_ID]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the embedded model's server and close the sync facade's loops (an agent called in
    a test without the fixture starts them too), then forget what the session started."""
    route = sys.modules.get("pytest_harness._local.route")
    if route is not None:
        route.stop_local_server()
    aio = sys.modules.get("pytest_harness._aio")
    if aio is not None:
        aio.close_loops()
    harness_config = sys.modules.get(
        "pytest_harness._pytest_glue.config"
    )  # imported by what uses any
    if harness_config is not None:
        harness_config.unconfigure(config, config.stash.get(RUN_ID, None))


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> Harness:
    """Run agents and assert with tribunals in this test (through its cassette).

    ``harness.ask(Agent, input)`` returns the agent's AgentResult;
    ``harness.assert_verdict(Tribunal, input)`` fails the test, with every judge's vote and
    reason, unless the panel's verdict passes; ``harness.tribunals`` lists the panels run.
    """
    from pytest_harness._pytest_glue import item

    return item.fixture(request.node)


@pytest.fixture
def harness_model(request: pytest.FixtureRequest) -> str | None:
    """The model override this test runs with (``--harness-model``, its marker's ``model=``,
    ``harness_model``, or its model in a ``--harness-models`` matrix), or None.

    Point the application's own client at it to vary the application with the matrix:
    ``client.chat.completions.create(model=harness_model or "gpt-4o-mini", ...)``.
    """
    from pytest_harness._pytest_glue import scope

    return scope.current().model


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``@pytest.mark.scenarios``: the test's ``scenario`` argument, one test per item;
    ``@pytest.mark.dataset``: its ``case`` argument, one test per case."""
    dataset = metafunc.definition.get_closest_marker("dataset")
    if dataset is not None:
        from pytest_harness._datasets.cases import parametrize

        parametrize(dataset, metafunc)
    marker = metafunc.definition.get_closest_marker("scenarios")
    if marker is not None:
        from pytest_harness import _scenarios as scenarios
        from pytest_harness._pytest_glue.config import settings

        config = metafunc.config
        scenarios.parametrize(marker, metafunc, settings(config), config.stash[RUN_ID])


def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, Any] | None:
    """A sampled test's line says how many samples passed: ``PASSED (9/10 passed, ...)``."""
    if report.when != "call" or hasattr(report, "wasxfail"):
        return None
    for name, value in report.user_properties:
        if name == "harness_pass_rate":  # samples.LINE_PROPERTY (not imported at start-up)
            word = report.outcome.upper()
            return report.outcome, word[0] if report.failed else ".", f"{word} ({value})"
    return None


# The per-test hooks run the test in its harness scope; _pytest_glue.item does the work.


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness._pytest_glue.item import setup

    return (yield from setup(item, item.config.stash[RUN_ID]))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness._pytest_glue.item import call

    return (yield from call(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness._pytest_glue.item import teardown

    return (yield from teardown(item))


@pytest.hookimpl(tryfirst=True)  # before --pdb's
def pytest_exception_interact(
    node: pytest.Item | pytest.Collector, call: pytest.CallInfo[Any], report: Any
) -> None:
    """An error of the harness raised while collecting (an agent's output schema checked as
    its module is imported) reads as a test's does: message first
    (``_pytest_glue.failures``). Called for a collection error before it is reported; a
    test's is brief already (makereport)."""
    if call.excinfo is None or not isinstance(report, pytest.CollectReport):
        return
    if "pytest_harness.errors" not in sys.modules:
        return  # nothing imported the harness's errors: none was raised
    from pytest_harness._pytest_glue.failures import brief

    report.longrepr = brief(node, call.excinfo) or report.longrepr


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    from pytest_harness._pytest_glue.item import makereport

    return (yield from makereport(item, call))
