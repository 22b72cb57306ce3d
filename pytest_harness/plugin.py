"""pytest hooks of pytest-harness: options, ini keys, markers, the fixture, the session report.

Only pytest glue lives here; behaviour is in the modules these hooks call, imported when a
test first needs them. At start-up the plugin imports only its hookspecs: a suite that uses
no harness feature pays almost nothing for it.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of every module of a plugin's distribution as
it imports it; this module has none, and it is loaded at every start-up.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from pytest_harness._fixture import Harness
    from pytest_harness._settings import Settings

SETTINGS: pytest.StashKey[Settings] = pytest.StashKey()
RUN_ID: pytest.StashKey[str] = pytest.StashKey()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


# Options, ini keys and markers are data: the hooks below register them, and the docs'
# reference pages (docs/reference/options.md, ini.md, markers.md) are rendered from them at
# build time (docs/hooks.py), so the two cannot drift apart. Plain tuples and dicts: this
# module is compiled and run at every pytest start-up.

# (option, its argparse keywords: help, default, and action, metavar, nargs, const if any)
OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--harness-live",
        {
            "help": "record model traffic from scratch: real calls; each test's cassette is "
            "replaced by what it recorded (written only if the test passed)",
            "default": False,
            "action": "store_true",
        },
    ),
    (
        "--harness-record",
        {
            "help": "cassette mode: none = replay only, offline (default); new = keep recordings "
            "and record missing requests; all = same as --harness-live",
            "default": None,
            "metavar": "{none,new,all}",
        },
    ),
    (
        "--harness-model",
        {
            "help": "litellm model name that replaces every model call's model (overrides "
            "harness_model and markers)",
            "default": None,
            "metavar": "MODEL",
        },
    ),
    (
        "--harness-models",
        {
            "help": "comma-separated litellm model names: run every test that uses the harness "
            "once per model (ids test[MODEL]), each with that model as its override and its "
            "own cassette (test[MODEL].yaml), and report them as a matrix (overrides "
            "harness_models; refused with --harness-model)",
            "default": None,
            "metavar": "MODEL,MODEL",
        },
    ),
    (
        "--harness-judge-model",
        {
            "help": "litellm model name of every judge a tribunal runs (and of ready-made "
            "judges), whatever --harness-model or --harness-models say (overrides "
            "harness_judge_model and markers)",
            "default": None,
            "metavar": "MODEL",
        },
    ),
    (
        "--harness-prune",
        {
            "help": "after a full run (no paths, -k, -m or deselection; every test passed), "
            "list the cassettes under harness_cassette_dir that no test opened (list, the "
            "default), or delete them (remove)",
            "default": None,
            "metavar": "{list,remove}",
            "nargs": "?",
            "const": "list",
        },
    ),
    (
        "--harness-report",
        {
            "help": "print the session's tables (tribunal runs, sampled tests, calibrations, "
            "agent runs, model calls; also shown with -v); with PATH also write them: "
            "PATH.html as one self-contained HTML page, any other PATH as JSON",
            "default": None,
            "metavar": "PATH",
            "nargs": "?",
            "const": "",
        },
    ),
)

# (name, help, type, default): a value other than its default means the session sets
# harness options (pytest_configure then resolves them at once).
INI_KEYS: tuple[tuple[str, str, Literal["string", "bool", "linelist"], Any], ...] = (
    (
        "harness_cassette_dir",
        "folder of cassettes, relative to rootdir",
        "string",
        "cassettes",
    ),
    (
        "harness_model",
        "litellm model name that replaces every model call's model",
        "string",
        "",
    ),
    (
        "harness_models",
        "comma-separated litellm model names: a model matrix, as --harness-models (a "
        "--harness-model on the command line turns it off)",
        "string",
        "",
    ),
    (
        "harness_judge_model",
        "litellm model name of every judge a tribunal runs, whatever the model override",
        "string",
        "",
    ),
    (
        "harness_record",
        "cassette mode when the command line gives none: none (default), new or all",
        "string",
        "none",
    ),
    (
        "harness_degenerate",
        "on an empty, think-only or interrupted model response: fail (default), warn or off",
        "string",
        "fail",
    ),
    (
        "harness_mcp_stdio",
        "an MCP server over stdio in a test with a cassette (none can record it): error "
        "(default) or live (runs live, unrecorded)",
        "string",
        "error",
    ),
    (
        "harness_timeout",
        "per-call model HTTP timeout in seconds",
        "string",
        "",
    ),
    (
        "harness_record_failed",
        "write a test's cassette even when the test failed while recording",
        "bool",
        False,
    ),
    (
        "harness_allow_hosts",
        "hosts tests may still connect to in replay mode, one per line (loopback included)",
        "linelist",
        [],
    ),
    (
        "harness_ignore_hosts",
        "hosts whose traffic passes through untouched, never recorded nor refused, one per line",
        "linelist",
        [],
    ),
    (
        "harness_capture",
        "whose HTTP traffic is recorded and replayed: harness (default: tests that use the "
        "harness marker or a harness fixture) or all (every test)",
        "string",
        "harness",
    ),
    (
        "harness_max_cost",
        "most one test may spend on live model calls (litellm prices)",
        "string",
        "",
    ),
    (
        "harness_max_session_cost",
        "most the whole session may spend on live model calls (litellm prices)",
        "string",
        "",
    ),
    (
        "harness_match_ignore",
        "dotted JSON body fields left out of cassette matching, one per line",
        "linelist",
        [],
    ),
    (
        "harness_redact_headers",
        "extra request headers redacted before cassettes are saved",
        "linelist",
        [],
    ),
    (
        "harness_redact_query",
        "extra request query redacted before cassettes are saved",
        "linelist",
        [],
    ),
    (
        "harness_redact_body_fields",
        "extra request body fields redacted before cassettes are saved",
        "linelist",
        [],
    ),
)

# (signature as written on a test, without "@pytest.mark.", and its help)
MARKERS: tuple[tuple[str, str], ...] = (
    (
        "harness(cassette=None, degenerate=None, model=None, record=None, timeout=None, "
        "samples=1, pass_rate=1.0, confidence=None, margin=0.05, inconclusive='fail', "
        "mcp_stdio=None, judge_model=None)",
        "per-test harness settings: cassette name (False: none), degenerate policy "
        "(fail/warn/off), model, judges' model, record mode (none/new/all), call timeout; run "
        "the body `samples` "
        "times and pass when at least `pass_rate` of them pass; with `confidence`, stop as soon "
        "as the samples decide at that confidence (SPRT, indifference `margin`), an undecided "
        "test being `inconclusive` (fail/xfail/pass); an MCP server over stdio (error/live)",
    ),
    (
        "scenarios(team, input, limit=None)",
        "parametrize the test's `scenario` argument with what a shared-state team generates "
        "(recorded in its own cassette)",
    ),
    (
        "dataset(source, argname='case', pass_rate=None, confidence=None, margin=0.05, "
        "inconclusive='fail')",
        "parametrize the test's `case` argument with each case of a JSONL, CSV or YAML file "
        "(or a list), ids from each row's `id` or its input; with `pass_rate`, a gate: the "
        "share of cases passing must reach it (sequential with `confidence`), and the gate, "
        "not each case, decides the run",
    ),
    (
        "harness_unavailable(message)",
        "set by the harness; the test errors at set-up with the message",
    ),
    (
        "harness_case(index, count, source)",
        "set by the harness; a dataset case's place in its dataset",
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "pytest-harness: LLM tribunals, cassettes, embedded model")
    for name, keywords in OPTIONS:
        group.addoption(name, **keywords)
    for key, help, kind, default in INI_KEYS:
        parser.addini(key, help, type=kind, default=default)


@pytest.hookimpl(tryfirst=True)  # before hypothesis's, which loads --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    from pytest_harness import _env

    _env.apply()  # litellm's environment, for the application's own litellm calls too
    if getattr(config.option, "hypothesis_profile", None) == "harness":
        import pytest_harness.strategies  # noqa: F401  (registers the "harness" profile)
    for signature, help in MARKERS:
        config.addinivalue_line("markers", f"{signature}: {help}")
    recording = matrix = False
    if _sets_harness_options(config):
        recording = settings(config).record != "none"  # a wrong value is a usage error now
        matrix = bool(settings(config).models)
    # One id per recording run, shared with xdist workers: cassettes shared by several tests
    # collect all of this run's interactions instead of the last test's share.
    workerinput = getattr(config, "workerinput", None)
    config.stash[RUN_ID] = workerinput["harness_run_id"] if workerinput else os.urandom(16).hex()
    if config.option.harness_prune is not None:  # every process notes the cassettes it opens
        from pytest_harness._item import Prune

        prune = Prune(config, settings(config), config.stash[RUN_ID])
        config.pluginmanager.register(prune, "harness-prune")
    if workerinput is None:  # the controller sees every case's report: it keeps the gates
        config.pluginmanager.register(DatasetGates(), "harness-dataset-gates")
    if matrix:  # every test that uses the harness, once per model
        from pytest_harness._matrix import Matrix

        config.pluginmanager.register(Matrix(settings(config).models), "harness-matrix")
    shown = config.option.harness_report is not None or config.option.verbose > 0
    if workerinput is None and (shown or recording or matrix):  # the controller reports
        from pytest_harness._report.session import SessionReport

        path = settings(config).report
        written = config.invocation_params.dir / path if path else None
        report = SessionReport(written, tables=shown)  # recording alone: verdict drift only
        config.pluginmanager.register(report, "harness-report")


class DatasetGates:
    """Keeps the result each dataset case's report carries; at the end, the gates decide
    (``pytest_harness._gate``, imported only when a dataset has a gate)."""

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


def settings(config: pytest.Config) -> Settings:
    """The session's settings (command line > ini > default), resolved on first use.

    A session whose command line and ini file set no harness option resolves them when a
    test first needs them: defaults cannot be wrong, and ``settings`` is not imported at
    start-up. Otherwise they are resolved in ``pytest_configure``.
    """
    resolved = config.stash.get(SETTINGS, None)
    if resolved is None:
        from pytest_harness._settings import resolve

        try:
            resolved = resolve(config.option, config.getini, config.rootpath, config.option.verbose)
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
        config.stash[SETTINGS] = resolved
    return resolved


def _sets_harness_options(config: pytest.Config) -> bool:
    given = (getattr(config.option, name[2:].replace("-", "_")) for name, _ in OPTIONS)
    if any(
        value != keywords["default"] for value, (_, keywords) in zip(given, OPTIONS, strict=True)
    ):
        return True
    return any(config.getini(key) != default for key, _, _, default in INI_KEYS)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the run id to each worker."""
    node.workerinput["harness_run_id"] = node.config.stash[RUN_ID]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the embedded model's server, close the sync facade's loops, drop the ledger and
    the run's log of cassette files."""
    import sys

    route = sys.modules.get("pytest_harness._local.route")
    if route is not None:
        route.stop_local_server()
    aio = sys.modules.get("pytest_harness._aio")
    if aio is not None:
        aio.close_loops()
    resolved = config.stash.get(SETTINGS, None)
    controller = getattr(config, "workerinput", None) is None  # the last one out
    files = sys.modules.get("pytest_harness._cassettes.files")
    run_id = config.stash.get(RUN_ID, None)  # None: configure stopped on a usage error
    if controller and files is not None and run_id is not None:
        files.RunLog(run_id).forget()  # which files the run wrote and opened
    if controller and resolved is not None and resolved.max_session_cost is not None:
        from pytest_harness import _watch as spend

        spend.forget(config.stash[RUN_ID])  # the session's spend ledger


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

    unavailable = item.get_closest_marker("harness_unavailable")
    if unavailable is not None:  # one error for this test, not a crash of its module
        yield  # after the rest of setup ran: pytest's own teardown expects its state
        pytest.fail(unavailable.args[0], pytrace=False)

    return (yield from setup(item, settings(item.config), item.config.stash[RUN_ID]))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness._item import call

    return (yield from call(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    from pytest_harness._item import teardown

    return (yield from teardown(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    from pytest_harness._item import makereport

    return (yield from makereport(item, call))
