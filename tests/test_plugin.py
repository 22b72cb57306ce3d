"""The plugin end to end, through real pytest runs (pytester)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from pytest_harness import plugin
from pytest_harness._model import env as _env
from pytest_harness.testing import LoopbackServer, Reply

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def test_help_lists_options_and_ini_keys(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "pytest-harness:*",
            "*--harness-live*record model traffic from scratch*",
            "*--harness-record={none,new,all}*",
            "*--harness-model=MODEL*",
            "*--harness-report=*PATH*",
            "*harness_cassette_dir (string)*",
            "*harness_model (string)*",
            "*harness_degenerate (string)*",
            "*harness_timeout (string)*",
            "*harness_record_failed (bool)*",
            "*harness_allow_hosts (linelist)*",
        ]
    )


class Registered:
    """What the plugin registers: stands in for pytest's parser and config, noting each call."""

    def __init__(self) -> None:
        self.help: dict[str, str] = {}  # option or ini key: its help
        self.markers: list[str] = []  # "signature: help", as --markers shows them
        plugin.pytest_addoption(cast(pytest.Parser, self))
        plugin.add_markers(cast(pytest.Config, self))

    def getgroup(self, name: str, description: str = "") -> Registered:
        return self

    def addoption(self, name: str, **keywords: Any) -> None:
        self.help[name] = keywords["help"]

    def addini(self, name: str, help: str, **keywords: Any) -> None:
        self.help[name] = help

    def addinivalue_line(self, name: str, line: str) -> None:
        assert name == "markers"
        self.markers.append(line)


def test_help_shows_every_option_and_ini_key_the_plugin_registers(
    pytester: pytest.Pytester,
) -> None:
    """Every option and ini key of ``pytest_addoption`` reaches --help, help and all; every
    marker of ``add_markers`` reaches --markers."""
    registered = Registered()
    assert "--harness-live" in registered.help
    assert registered.markers
    shown = "".join(pytester.runpytest("--help").stdout.str().split())  # as wrapped: no spaces
    for name, help in registered.help.items():
        assert name in shown
        assert "".join(help.split()) in shown, name
    markers = pytester.runpytest("--markers").stdout.lines
    for line in registered.markers:
        assert f"@pytest.mark.{line}" in markers


def test_markers_are_listed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.harness(cassette=None, degenerate=None, model=None, record=None, "
            "timeout=None, samples=1, pass_rate=1.0, confidence=None, margin=0.05, "
            "inconclusive='fail', mcp_stdio=None, judge_model=None, strict_replay=None):*",
            "@pytest.mark.scenarios(team, input, limit=None):*",
        ]
    )


def test_strict_markers_accepts_harness_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.harness(cassette="shared", degenerate="warn")
        def test_marked():
            pass

        @pytest.mark.scenarios("Team", "input", limit=3)
        def test_scenarios(scenario):
            pass
        """
    )
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1, errors=1)  # registered; "Team" is no team: its error
    assert "not found in `markers`" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*scenarios expects a SharedState subclass first*"])


def test_litellm_is_not_imported_by_a_suite_that_uses_no_harness_feature(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import sys

        def pytest_sessionfinish(session):
            heavy = sorted(m for m in ("litellm", "vcr", "openai", "httpx") if m in sys.modules)
            print("HEAVY:", ",".join(heavy) or "none")
            assert "pytest_harness.plugin" in sys.modules
        """
    )
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*HEAVY: none"])


def test_configure_sets_the_litellm_environment_a_user_has_not_set(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before any test (so before the application builds a litellm client), without the seam:
    every variable of the table the seam applies, except one the user set, which wins."""
    for name in _env.LITELLM_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
    pytester.makepyfile(
        """
        import os, sys
        from pytest_harness._model.env import LITELLM_DEFAULTS

        SEEN = {name: os.environ.get(name) for name in LITELLM_DEFAULTS}  # at collection
        SEAM_IMPORTED = "pytest_harness._model.seam" in sys.modules

        def test_environment():
            assert not SEAM_IMPORTED  # the plugin set them, not the seam
            expected = {**LITELLM_DEFAULTS, "LITELLM_LOCAL_MODEL_COST_MAP": "False"}
            assert SEEN == expected
            assert "DISABLE_AIOHTTP_TRANSPORT" in LITELLM_DEFAULTS
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)


ALLOW = "[pytest]\nharness_allow_hosts = 127.0.0.1\n"


@pytest.fixture
def suite(pytester: pytest.Pytester, server: LoopbackServer) -> pytest.Pytester:
    """A suite whose tests call the loopback server through the model seam.

    Run it with ``runpytest_subprocess``: pytester's in-process runs forget the modules
    imported inside them, and litellm and openai do not survive being imported twice.
    """
    pytester.makeini(ALLOW)
    pytester.makeconftest(
        f"""
        import pytest
        from pytest_harness import complete

        def pytest_collection_modifyitems(items):
            for item in items:  # talk to the loopback server directly, without cassettes
                item.add_marker(pytest.mark.harness(cassette=False))

        @pytest.fixture
        def ask():
            def ask(prompt="hi"):
                return complete(
                    prompt, model="openai/loopback",
                    api_base="{server.url}", api_key="loopback-not-a-secret",
                )
            return ask
        """
    )
    return pytester


DEGENERATE_TEST = """
import pytest

def test_think_only(ask):
    response = ask()
    print("GOT", repr(response.content))

@pytest.mark.harness(degenerate="off")
def test_marked_off(ask):
    ask()
"""


def test_degenerate_fail_is_the_default(suite: pytest.Pytester, server: LoopbackServer) -> None:
    server.handler = lambda body: Reply(content="<thinking>hmm</thinking>")
    suite.makepyfile(DEGENERATE_TEST)
    result = suite.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*DegenerateResponse: model 'openai/loopback' returned a degenerate response*"
            "test_think_only*",
            "*content: ''",
            "*reasoning: 'hmm'",
        ]
    )


def test_degenerate_warn_from_ini(suite: pytest.Pytester, server: LoopbackServer) -> None:
    server.handler = lambda body: Reply(content="")
    suite.makeini(ALLOW + "harness_degenerate = warn\n")
    suite.makepyfile(DEGENERATE_TEST)
    result = suite.runpytest_subprocess("-s", "-W", "default")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(
        ["*GOT ''", "*HarnessWarning: model 'openai/loopback' returned an empty*"]
    )


def test_marker_overrides_ini(suite: pytest.Pytester, server: LoopbackServer) -> None:
    server.handler = lambda body: Reply(content="  ")
    suite.makeini(ALLOW + "harness_degenerate = off\n")
    suite.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.harness(degenerate="warn")

        @pytest.mark.harness(degenerate="fail")
        def test_closest_marker_wins(ask):
            ask()

        def test_module_marker_applies(ask):
            ask()
        """
    )
    result = suite.runpytest_subprocess("-W", "default")
    result.assert_outcomes(passed=1, failed=1, warnings=1)
    result.stdout.fnmatch_lines(["FAILED *::test_closest_marker_wins - InvalidRespon*"])


def test_model_precedence_cli_then_marker_then_ini(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    suite.makeini(ALLOW + "harness_model = openai/from-ini\n")
    suite.makepyfile(
        """
        import pytest

        def test_ini(ask):
            assert ask().model == EXPECTED_INI

        @pytest.mark.harness(model="openai/from-marker")
        def test_marker(ask):
            assert ask().model == EXPECTED_MARKER
        """.replace("EXPECTED_INI", "'openai/from-ini'").replace(
            "EXPECTED_MARKER", "'openai/from-marker'"
        )
    )
    suite.runpytest_subprocess().assert_outcomes(passed=2)
    # Each test asserts its own model; the server saw one call of each (in either order).
    assert sorted(body["model"] for body in server.requests) == ["from-ini", "from-marker"]

    cli = suite.runpytest_subprocess("--harness-model=openai/from-cli", "-q")
    cli.assert_outcomes(failed=2)
    assert [body["model"] for body in server.requests[2:]] == ["from-cli", "from-cli"]


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('harness(cassete="x")', "harness got unknown argument(s) cassete; expected*cassette,*"),
        ('harness(record="sometimes")', "harness(record=...) expects one of none, new, all*"),
        ('harness(cassette="../up")', "harness(cassette='../up') must name a relative path*"),
        ('harness("x")', "harness takes keyword arguments only*got positional ('x',)*"),
        ('harness(degenerate="loud")', "harness(degenerate=...) expects one of*got 'loud'."),
        ("harness(cassette=3)", "harness(cassette=...) expects a non-empty str*got 3."),
        ('harness(timeout="soon")', "harness(timeout=...) expects a positive number of*"),
    ],
)
def test_wrong_marker_arguments_error_that_test_only(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.{marker}
        def test_bad():
            pass

        def test_fine():
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"ConfigError: @pytest.mark.{message}"])


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        ((), "harness_degenerate = loud", "*harness_degenerate expects one of fail, warn, off*"),
        ((), "harness_timeout = -3", "*harness_timeout expects a positive number*"),
        (("--harness-live", "--harness-record=new"), "", "*--harness-live records everything*"),
        (
            ("--harness-record=sometimes",),
            "",
            "*--harness-record expects one of none, new, all, got*",
        ),
        (
            ("--harness-report", "sub.py"),
            "",
            "*--harness-report got 'sub.py', which looks like a test*",
        ),
    ],
)
def test_wrong_settings_are_usage_errors(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message.lstrip('*')}"])


def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:harness", "--harness-live")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
