"""pytest hooks of pytest-harness: options, ini keys, markers, the fixture, the session report.

Only pytest glue lives here; behaviour is in the modules these hooks call, imported when a
test first needs them (a test's part in ``_item``, the session's in ``_config``). At
start-up the plugin imports only its hookspecs: a suite that uses no harness feature pays
almost nothing for it.

This module is parsed at every start: pytest imports a plugin's modules through its
assertion rewriter, which parses the source into an AST (also when told not to rewrite) unless
it finds its own cached copy, and without bytecode caching there is none. What it costs
grows with every line here, so hooks that are not called in every session stay short.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of every module of a plugin's distribution as
it imports it; this module has none, and it is loaded at every start-up.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_harness._fixture import Harness

RUN_ID: pytest.StashKey[str] = pytest.StashKey()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


# Options, ini keys, markers and litellm's environment are data, in plugin.json beside this
# module: the hooks below register and apply them, and the docs' reference pages
# (docs/reference/options.md, ini.md, markers.md) are rendered from them at build time
# (docs/hooks.py), so the two cannot drift apart. JSON, not Python literals: parsing this
# module at every start (see above) costs about 25 times what json.loads does for the same
# tables (and pytest has imported json). An option or ini key set to other than its default
# makes pytest_configure resolve the settings at once.
_DATA: dict[str, dict[str, Any]] = json.loads(
    Path(__file__).with_name("plugin.json").read_text(encoding="utf-8")
)
OPTIONS: dict[str, dict[str, Any]] = _DATA["options"]  # option: its argparse keywords
INI_KEYS: dict[str, dict[str, Any]] = _DATA["ini"]  # key: its help, type and default
MARKERS: dict[str, str] = _DATA["markers"]  # signature (after "@pytest.mark."): its help
_ENVIRONMENT: dict[str, str] = _DATA["environment"]  # _env.LITELLM_DEFAULTS


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "pytest-harness: LLM tribunals, cassettes, embedded model")
    for name, keywords in OPTIONS.items():
        group.addoption(name, **keywords)
    for key, keywords in INI_KEYS.items():
        parser.addini(key, **keywords)


@pytest.hookimpl(tryfirst=True)  # before hypothesis's, which loads --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    for name, value in _ENVIRONMENT.items():  # _env.apply(), without importing it at start-up
        os.environ.setdefault(name, value)  # litellm's, for the application's own calls too
    if getattr(config.option, "hypothesis_profile", None) == "harness":
        import pytest_harness.strategies  # noqa: F401  (registers the "harness" profile)
    for signature, help in MARKERS.items():
        config.addinivalue_line("markers", f"{signature}: {help}")
    # One id per recording run, shared with xdist workers: cassettes shared by several tests
    # collect all of this run's interactions instead of the last test's share.
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput["harness_run_id"] if workerinput else os.urandom(16).hex()
    config.stash[RUN_ID] = run_id
    gates = None if workerinput else DatasetGates()  # the controller sees every case's report
    if config.option.verbose > 0 or _sets_harness_options(config):  # -v shows the tables
        from pytest_harness import _config

        _config.configure(config, run_id, gates)  # settings now: a wrong value is a usage error
    elif gates is not None:
        config.pluginmanager.register(gates, "harness-dataset-gates")


def _sets_harness_options(config: pytest.Config) -> bool:
    for name, keywords in OPTIONS.items():
        if getattr(config.option, name[2:].replace("-", "_")) != keywords["default"]:
            return True
    return any(config.getini(key) != keywords["default"] for key, keywords in INI_KEYS.items())


class DatasetGates:
    """Keeps the result each dataset case's report carries; at the end, the gates decide
    (``pytest_harness._gate``, imported only when a dataset has a gate). Every session
    registers it on its controller, so it lives here rather than in ``_config``."""

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
            from pytest_harness._gate import finish

            self.records = finish(session, self.found)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.records:
            from pytest_harness._gate import summary

            summary(terminalreporter, self.records)


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
    harness_config = sys.modules.get("pytest_harness._config")  # imported by what uses any
    if harness_config is not None:
        harness_config.unconfigure(config, config.stash.get(RUN_ID, None))


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> Harness:
    """Run agents and assert with tribunals in this test (through its cassette).

    ``harness.ask(Agent, input)`` returns the agent's AgentResult;
    ``harness.assert_verdict(Tribunal, input)`` fails the test, with every judge's vote and
    reason, unless the panel's verdict passes; ``harness.tribunals`` lists the panels run.
    """
    from pytest_harness import _item as item

    return item.fixture(request.node)


@pytest.fixture
def harness_model(request: pytest.FixtureRequest) -> str | None:
    """The model override this test runs with (``--harness-model``, its marker's ``model=``,
    ``harness_model``, or its model in a ``--harness-models`` matrix), or None.

    Point the application's own client at it to vary the application with the matrix:
    ``client.chat.completions.create(model=harness_model or "gpt-4o-mini", ...)``.
    """
    from pytest_harness import _scope as scope

    return scope.current().model


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``@pytest.mark.scenarios``: the test's ``scenario`` argument, one test per item;
    ``@pytest.mark.dataset``: its ``case`` argument, one test per case."""
    # The closest marker of each name, in one walk up the tree: iter_markers' walk without
    # its generators. This runs for every test function: on 200 tests, two
    # get_closest_marker calls cost 4 M instructions, this walk 0.6 M.
    closest: dict[str, pytest.Mark] = {}
    node: pytest.Item | pytest.Collector | None = metafunc.definition
    while node is not None:
        for mark in node.own_markers:
            closest.setdefault(mark.name, mark)
        node = node.parent
    if "dataset" in closest:
        from pytest_harness._cases import parametrize

        parametrize(closest["dataset"], metafunc)
    if "scenarios" in closest:
        from pytest_harness import _scenarios as scenarios
        from pytest_harness._config import settings

        config, marker = metafunc.config, closest["scenarios"]
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


# The per-test hooks run the test in its harness scope; pytest_harness._item does the work.


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness._item import setup

    return (yield from setup(item, item.config.stash[RUN_ID]))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness._item import call

    return (yield from call(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness._item import teardown

    return (yield from teardown(item))


@pytest.hookimpl(tryfirst=True)  # before --pdb's
def pytest_exception_interact(
    node: pytest.Item | pytest.Collector, call: pytest.CallInfo[Any], report: Any
) -> None:
    """An error of the harness raised while collecting (an agent's output schema checked as
    its module is imported) reads as a test's does: message first (``_failures``). Called
    for a collection error before it is reported; a test's is brief already (makereport)."""
    if call.excinfo is None or not isinstance(report, pytest.CollectReport):
        return
    if "pytest_harness.errors" not in sys.modules:
        return  # nothing imported the harness's errors: none was raised
    from pytest_harness._failures import brief

    report.longrepr = brief(node, call.excinfo) or report.longrepr


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    from pytest_harness._item import makereport

    return (yield from makereport(item, call))
