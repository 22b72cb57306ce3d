"""litellm's own warnings never fail a ``filterwarnings = error`` suite, yet a user's still do.

``_quiet_imports`` silences what a package's modules raise while they load (by category and
origin, never by message text); ``_model.quiet_warnings`` what litellm causes during a
call. The first test runs the real thing: a three-judge tribunal in a fresh pytest process
under ``-W error``, before anything has imported litellm. The others check the mechanism on
small packages written for the test.
"""

from __future__ import annotations

import importlib
import importlib.resources
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_harness._model import quiet_imports as _quiet_imports
from pytest_harness.testing import LoopbackServer, Reply

PANEL = """
import sys

import pytest

# The harness's plugin is loaded, the test module collected: litellm is not imported yet.
assert "litellm" not in sys.modules

from pytest_harness import Agent, Tribunal

URL = {url!r}
VOTE = {{"type": "object", "properties": {{"pass": {{"type": "boolean"}}}}, "required": ["pass"]}}

class Judge(Agent):
    model = "openai/judge"
    instructions = "Is this reply polite?"
    output = VOTE
    params = {{"api_base": URL, "api_key": "loopback-not-a-secret"}}

class Clarity(Judge):
    instructions = "Is this reply clear?"

class Accuracy(Judge):
    instructions = "Is this reply accurate?"

class Panel(Tribunal):
    agents = [Judge, Clarity, Accuracy]
    strategy = "unanimous"

@pytest.mark.harness
def test_panel(harness):
    harness.assert_verdict(Panel, "Thank you, your order ships today.")
    assert "litellm" in sys.modules
"""


def test_a_three_judge_tribunal_passes_under_w_error_in_a_fresh_process(
    pytester: pytest.Pytester,
) -> None:
    with LoopbackServer(lambda body: Reply(content='{"pass": true}')) as server:
        pytester.makepyfile(test_panel=PANEL.format(url=server.url))
        result = pytester.runpytest_subprocess(
            "-W", "error", "--harness-live", "-p", "no:randomly", "-p", "no:cacheprovider"
        )
        result.assert_outcomes(passed=1)
        assert len(server.requests) == 3  # every judge asked, each once


@pytest.fixture
def packages(tmp_path: Path) -> Iterator[Path]:
    """A folder on sys.path for packages written by the test; forgotten afterwards."""
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in set(sys.modules) - before:
            del sys.modules[name]
        _quiet_imports.uninstall("noisy")
        importlib.invalidate_caches()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


NOISY = {
    # A library another package calls while it loads (pydantic, building litellm's schemas).
    "helper_lib/__init__.py": (
        "import warnings\n"
        "def build(name):\n"
        "    warnings.warn(f'{name} uses ReadOnly', UserWarning)\n"
        "    return name\n"
    ),
    "noisy/__init__.py": (
        "import warnings\n"
        "warnings.warn('old API', DeprecationWarning)\n"
        "def call():\n"
        "    warnings.warn('at call time', UserWarning)\n"
    ),
    "noisy/lazy.py": "import helper_lib\nSCHEMA = helper_lib.build('Block')\n",
    "noisy/data.json": '{"prices": 1}',
    "noisy/broken.py": "import warnings\nwarnings.warn('a real problem', RuntimeWarning)\n",
}


def test_warnings_raised_while_the_package_loads_are_silenced(packages: Path) -> None:
    write(packages, NOISY)
    _quiet_imports.install("noisy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lazy = importlib.import_module("noisy.lazy")  # the package, then a lazy submodule
        assert lazy.SCHEMA == "Block"
        # The module's own loader still serves its resources (litellm reads its prices so).
        text = importlib.resources.files("noisy").joinpath("data.json").read_text()
        assert text == '{"prices": 1}'


def test_the_same_warning_at_call_time_still_surfaces(packages: Path) -> None:
    write(packages, NOISY)
    _quiet_imports.install("noisy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        noisy = importlib.import_module("noisy")
        with pytest.raises(UserWarning, match="at call time"):
            noisy.call()
        helper_lib = importlib.import_module("helper_lib")
        with pytest.raises(UserWarning, match="Other uses ReadOnly"):
            helper_lib.build("Other")  # outside the package's import: the user's to see


def test_a_runtime_warning_while_loading_still_surfaces(packages: Path) -> None:
    write(packages, NOISY)
    _quiet_imports.install("noisy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="a real problem"):
            importlib.import_module("noisy.broken")


def test_other_packages_imports_are_left_alone(packages: Path) -> None:
    write(packages, {**NOISY, "user_pkg/__init__.py": NOISY["noisy/__init__.py"]})
    _quiet_imports.install("noisy")
    _quiet_imports.install("noisy")  # idempotent
    finders = [f for f in sys.meta_path if isinstance(f, _quiet_imports.QuietFinder)]
    assert [f.package for f in finders].count("noisy") == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DeprecationWarning, match="old API"):
            importlib.import_module("user_pkg")


SCRIPT = """
from pytest_harness.orchestrator import Orchestrator
from pytest_harness.testing import LoopbackServer, Reply

with LoopbackServer() as server:
    server.queue(Reply(content="hi"))
    print(Orchestrator(server.model, params=server.params).run("hello").output)
"""


def test_a_plain_script_running_an_orchestrator_shows_none_of_litellms_warnings() -> None:
    # Outside pytest: no plugin, no per-test filters. -W error makes any warning fatal.
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "hi\n", "")
