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
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

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
# build time (docs/hooks.py), so the two cannot drift apart. NamedTuples rather than frozen
# dataclasses: this module is imported at every pytest start-up, and a NamedTuple class costs
# a tenth of what a dataclass does to define.


class Option(NamedTuple):
    """A command-line option of the ``harness`` group.

    The fields are ``argparse``'s; those left at None are not passed on.
    """

    name: str
    help: str
    default: Any = None
    action: str | None = None
    metavar: str | None = None
    nargs: str | None = None
    const: str | None = None

    @property
    def dest(self) -> str:
        """Where ``config.option`` holds the value: ``--harness-live`` is ``harness_live``."""
        return self.name.lstrip("-").replace("-", "_")

    def add_to(self, group: pytest.OptionGroup) -> None:
        """Register the option in ``group``."""
        chosen = {field: getattr(self, field) for field in ("action", "metavar", "nargs", "const")}
        more = {field: value for field, value in chosen.items() if value is not None}
        group.addoption(self.name, default=self.default, help=self.help, **more)


class IniKey(NamedTuple):
    """An ini key (``parser.addini``): ``type`` is pytest's name for how the value is read."""

    name: str
    help: str
    type: Literal["string", "bool", "linelist"] = "string"
    default: Any = ""


class Marker(NamedTuple):
    """A marker: ``signature`` as written on a test (without ``@pytest.mark.``) and its help."""

    signature: str
    help: str

    @property
    def name(self) -> str:
        """The marker's name: ``harness`` for ``harness(cassette=None, ...)``."""
        return self.signature.partition("(")[0]

    @property
    def line(self) -> str:
        """The line ``pytest --markers`` shows, as registered in the ``markers`` ini key."""
        return f"{self.signature}: {self.help}"


OPTIONS: tuple[Option, ...] = (
    Option(
        name="--harness-live",
        action="store_true",
        default=False,
        help="record model traffic from scratch: real calls; each test's cassette is replaced "
        "by what it recorded (written only if the test passed)",
    ),
    Option(
        name="--harness-record",
        metavar="{none,new,all}",  # checked with the other settings (_settings.RECORD_MODES)
        help="cassette mode: none = replay only, offline (default); new = keep recordings and "
        "record missing requests; all = same as --harness-live",
    ),
    Option(
        name="--harness-model",
        metavar="MODEL",
        help="litellm model name that replaces every model call's model "
        "(overrides harness_model and markers)",
    ),
    Option(
        name="--harness-report",
        nargs="?",
        const="",
        metavar="PATH",
        help="print the session's tables (tribunal runs, sampled tests, calibrations, agent "
        "runs, model calls; also shown with -v); with PATH also write them: PATH.html as one "
        "self-contained HTML page, any other PATH as JSON",
    ),
)

# A value other than its default means the session sets harness options (pytest_configure
# then resolves them at once).
INI_KEYS: tuple[IniKey, ...] = (
    IniKey(
        name="harness_cassette_dir",
        help="folder of cassettes, relative to rootdir",
        default="cassettes",
    ),
    IniKey(
        name="harness_model",
        help="litellm model name that replaces every model call's model",
    ),
    IniKey(
        name="harness_record",
        help="cassette mode when the command line gives none: none (default), new or all",
        default="none",
    ),
    IniKey(
        name="harness_degenerate",
        help="on an empty, think-only or interrupted model response: fail (default), warn or off",
        default="fail",
    ),
    IniKey(name="harness_timeout", help="per-call model HTTP timeout in seconds"),
    IniKey(
        name="harness_record_failed",
        help="write a test's cassette even when the test failed while recording",
        type="bool",
        default=False,
    ),
    IniKey(
        name="harness_allow_hosts",
        help="hosts tests may still connect to in replay mode, one per line (loopback included)",
        type="linelist",
        default=[],
    ),
    IniKey(
        name="harness_ignore_hosts",
        help="hosts whose traffic passes through untouched, never recorded nor refused, "
        "one per line",
        type="linelist",
        default=[],
    ),
    IniKey(
        name="harness_capture",
        help="whose HTTP traffic is recorded and replayed: harness (default: tests that use the "
        "harness marker or a harness fixture) or all (every test)",
        default="harness",
    ),
    IniKey(
        name="harness_max_cost",
        help="most one test may spend on live model calls (litellm prices)",
    ),
    IniKey(
        name="harness_max_session_cost",
        help="most the whole session may spend on live model calls (litellm prices)",
    ),
    IniKey(
        name="harness_match_ignore",
        help="dotted JSON body fields left out of cassette matching, one per line",
        type="linelist",
        default=[],
    ),
    IniKey(
        name="harness_redact_headers",
        help="extra request headers redacted before cassettes are saved",
        type="linelist",
        default=[],
    ),
    IniKey(
        name="harness_redact_query",
        help="extra request query redacted before cassettes are saved",
        type="linelist",
        default=[],
    ),
    IniKey(
        name="harness_redact_body_fields",
        help="extra request body fields redacted before cassettes are saved",
        type="linelist",
        default=[],
    ),
)

MARKERS: tuple[Marker, ...] = (
    Marker(
        signature="harness(cassette=None, degenerate=None, model=None, record=None, "
        "timeout=None, samples=1, pass_rate=1.0)",
        help="per-test harness settings: cassette name (False: none), degenerate policy "
        "(fail/warn/off), model, record mode (none/new/all), call timeout; run the body "
        "`samples` times and pass when at least `pass_rate` of them pass",
    ),
    Marker(
        signature="scenarios(team, input, limit=None)",
        help="parametrize the test's `scenario` argument with what a shared-state team "
        "generates (recorded in its own cassette)",
    ),
    Marker(
        signature="scenarios_unavailable(message)",
        help="set by the harness; the test errors at set-up",
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "pytest-harness: LLM tribunals, cassettes, embedded model")
    for option in OPTIONS:
        option.add_to(group)
    for key in INI_KEYS:
        parser.addini(key.name, key.help, type=key.type, default=key.default)


def pytest_configure(config: pytest.Config) -> None:
    from pytest_harness import _env

    _env.apply()  # litellm's environment, for the application's own litellm calls too
    for marker in MARKERS:
        config.addinivalue_line("markers", marker.line)
    recording = False
    if _sets_harness_options(config):
        recording = settings(config).record != "none"  # a wrong value is a usage error now
    # One id per recording run, shared with xdist workers: cassettes shared by several tests
    # collect all of this run's interactions instead of the last test's share.
    workerinput = getattr(config, "workerinput", None)
    config.stash[RUN_ID] = workerinput["harness_run_id"] if workerinput else os.urandom(16).hex()
    shown = config.option.harness_report is not None or config.option.verbose > 0
    if workerinput is None and (shown or recording):  # the controller reports for all workers
        from pytest_harness._report.session import SessionReport

        path = settings(config).report
        written = config.invocation_params.dir / path if path else None
        report = SessionReport(written, tables=shown)  # recording alone: verdict drift only
        config.pluginmanager.register(report, "harness-report")


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
    if any(getattr(config.option, option.dest) != option.default for option in OPTIONS):
        return True
    return any(config.getini(key.name) != key.default for key in INI_KEYS)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the run id to each worker."""
    node.workerinput["harness_run_id"] = node.config.stash[RUN_ID]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the embedded model's server, close the sync facade's loops, drop the ledger."""
    import sys

    route = sys.modules.get("pytest_harness._local.route")
    if route is not None:
        route.stop_local_server()
    aio = sys.modules.get("pytest_harness._aio")
    if aio is not None:
        aio.close_loops()
    resolved = config.stash.get(SETTINGS, None)
    controller = getattr(config, "workerinput", None) is None  # the last one out
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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``@pytest.mark.scenarios``: the test's ``scenario`` argument, one test per item."""
    marker = metafunc.definition.get_closest_marker("scenarios")
    if marker is None:
        return
    from pytest_harness import _scenarios as scenarios

    config = metafunc.config
    found = scenarios.parameters(marker, metafunc, settings(config), config.stash[RUN_ID])
    metafunc.parametrize("scenario", found)


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

    unavailable = item.get_closest_marker("scenarios_unavailable")
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
