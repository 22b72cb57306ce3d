"""Every place that says how to install the embedded model says the same thing.

One measured build time (``install.BUILD_TIME``) wherever the time is given, the README,
the docs' install sections and the ``LocalModelError`` texts; and the portable build flags
(``install.PORTABLE_BUILD``, tox.ini's ``CMAKE_ARGS``) on every command that installs the
``local`` extra.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_harness._local import install
from pytest_harness.errors import LocalModelError

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    "README.md",
    "docs/getting-started.md",
    "docs/guides/keyless.md",
    "docs/guides/embedded-model.md",
]
FLAGS = install.PORTABLE_BUILD.removeprefix("CMAKE_ARGS=").strip('"')


def sentences(text: str) -> list[str]:
    """The page's text in sentences, each on one line (Markdown wraps them)."""
    return re.split(r"(?<=[.:;!?])\s+(?=[A-Z`(])", " ".join(text.split()))


@pytest.mark.parametrize("page", PAGES)
def test_the_page_gives_the_one_measured_build_time(page: str) -> None:
    said = sentences((ROOT / page).read_text(encoding="utf-8"))
    assert any(install.BUILD_TIME in sentence for sentence in said)
    timed = [s for s in said if "minute" in s and re.search(r"compil|build|llama", s, re.I)]
    assert all(install.BUILD_TIME in sentence for sentence in timed), timed


@pytest.mark.parametrize("page", PAGES)
def test_every_install_of_the_local_extra_builds_portably(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8").replace("\\\n", " ")
    commands = [line for line in text.splitlines() if re.search(r"pip install .*\[local\]", line)]
    assert commands
    for command in commands:
        assert f'CMAKE_ARGS="{FLAGS}"' in command, command


def test_the_errors_and_tox_use_the_same_time_and_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "_spec", lambda name: None)  # as if nothing were installed
    with pytest.raises(LocalModelError) as raised:
        install.ensure_installed()
    assert f"from source: {install.BUILD_TIME})." in str(raised.value)
    assert install.PORTABLE_BUILD in str(raised.value)
    tox = (ROOT / "tox.ini").read_text(encoding="utf-8")
    assert re.search(rf"^\s*CMAKE_ARGS = {re.escape(FLAGS)}$", tox, re.M)
