"""An old import names the new home: every name docs/migration.md lists as moved or removed.

``from pytest_harness import Orchestrator`` (and ``from pytest_harness.orchestrator.loop
import Orchestrator``) fail with ``MovedName``, an ImportError whose message gives the new
import and points at the notes; ``hasattr`` stays False and attribute access raises an
AttributeError saying the same. The notes' tables and the package's are checked against each
other, so neither can list a name the other does not.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_harness
from pytest_harness import _migration
from pytest_harness.errors import MovedName

NOTES = Path(__file__).resolve().parent.parent / "docs" / "migration.md"
# The sections of the notes whose tables list old imports (the others: renamed fields).
SECTIONS = ("Renamed", "Moved out of the top level", "Imports from modules", "Exceptions")
TOP = sorted(
    old.rpartition(".")[2]
    for old in (*_migration.MOVED, *_migration.REMOVED)
    if old.count(".") == 1
)
MODULES = sorted({old.rpartition(".")[0] for old in _migration.MOVED if old.count(".") > 1})


def documented() -> tuple[dict[str, str], set[str]]:
    """The notes' old imports: ``{old: new}`` for the moved, and the set of the removed."""
    text = NOTES.read_text(encoding="utf-8")
    moved: dict[str, str] = {}
    removed: set[str] = set()
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = section.partition("\n")
        if title.strip() not in SECTIONS:
            continue
        for row in re.findall(r"^\| (.+?) \| (.+?) \|$", body, re.M):
            old, new = (re.findall(r"`([^`]+)`", cell) for cell in row)
            if not old or not old[0].startswith("pytest_harness."):
                continue  # the header, or a method (harness.run)
            olds = _expand(old)
            if not new or not new[0].startswith("pytest_harness."):
                removed.update(olds)  # "no longer public: ..."
                continue
            news = _expand(new)
            if len(news) == 1 and len(olds) > 1:  # "typos (and casing, ...)": "(and the others)"
                home = news[0].rpartition(".")[0]
                news = [f"{home}.{name.rpartition('.')[2]}" for name in olds]
            assert len(olds) == len(news), row
            moved.update(zip(olds, news, strict=True))
    return moved, removed


def _expand(names: list[str]) -> list[str]:
    """``pytest_harness.agent.Agent``, ``.Result`` (or ``Result``): full names, all."""
    module = names[0].rpartition(".")[0]
    full = (n if n.startswith("pytest_harness.") else f"{module}.{n.lstrip('.')}" for n in names)
    return list(full)


def test_the_notes_and_the_package_list_the_same_old_names() -> None:
    moved, removed = documented()
    assert len(moved) > 100  # the parser read the tables
    assert moved == _migration.MOVED
    assert removed == set(_migration.REMOVED)


@pytest.mark.parametrize("new", sorted(set(_migration.MOVED.values())))
def test_each_new_home_holds_its_name(new: str) -> None:
    module, _, name = new.rpartition(".")
    assert hasattr(importlib.import_module(module), name)


@pytest.mark.parametrize("name", TOP)
def test_an_old_top_level_import_names_the_new_home(name: str) -> None:
    old = f"pytest_harness.{name}"
    with pytest.raises(MovedName) as raised:
        exec(f"from pytest_harness import {name}", {})
    message = str(raised.value)
    assert message.startswith(f"cannot import name {name!r} from 'pytest_harness': ")
    assert "docs/migration.md" in message
    if old in _migration.MOVED:
        module, _, new = _migration.MOVED[old].rpartition(".")
        assert f"from {module} import {new}." in message
    else:
        assert _migration.REMOVED[old] in message
    assert isinstance(raised.value, ImportError)


@pytest.mark.parametrize("name", TOP)
def test_an_old_top_level_name_is_still_not_an_attribute(name: str) -> None:
    assert not hasattr(pytest_harness, name)
    with pytest.raises(AttributeError) as raised:
        getattr(pytest_harness, name)
    assert not isinstance(raised.value, ImportError)
    assert f"module 'pytest_harness' has no attribute {name!r}: " in str(raised.value)
    assert "docs/migration.md" in str(raised.value)
    new = _migration.MOVED.get(f"pytest_harness.{name}")
    assert new is None or new in str(raised.value)


@pytest.mark.parametrize("module", MODULES)
def test_an_old_module_names_where_each_of_its_names_is(module: str) -> None:
    with pytest.raises(MovedName) as raised:
        importlib.import_module(module)
    message = str(raised.value)
    # The first old module on the way is named: orchestrator.middleware for its .retry.
    named = re.match(r"No module named '(?P<module>[\w.]+)': ", message)
    assert named is not None, message
    assert f"{module}.".startswith(f"{named['module']}."), message
    assert "docs/migration.md" in message
    for old, new in _migration.MOVED.items():
        if old.startswith(f"{module}."):
            home, _, name = new.rpartition(".")
            assert re.search(rf"from {re.escape(home)} import [^;]*\b{name}\b", message), old


def test_from_an_old_module_import_a_name_names_its_home() -> None:
    with pytest.raises(MovedName, match=r"from pytest_harness\.orchestrator import .*\bRetry\b"):
        exec("from pytest_harness.orchestrator.middleware.retry import Retry", {})
    with pytest.raises(MovedName, match=r"from pytest_harness\.team import .*\bsimulate\b"):
        exec("from pytest_harness.team.simulate import simulate", {})


def test_a_name_that_never_existed_gets_pythons_own_errors() -> None:
    with pytest.raises(ImportError) as raised:
        exec("from pytest_harness import Nope", {})
    assert type(raised.value) is ImportError
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pytest_harness.nope")
    with pytest.raises(AttributeError, match=r"^module 'pytest_harness' has no attribute 'Nope'$"):
        _ = pytest_harness.Nope  # type: ignore[attr-defined]
    assert not hasattr(pytest_harness, "__wrapped__")


def test_the_finder_is_installed_once_however_often_the_package_loads() -> None:
    def ours() -> int:
        kinds = [(type(f).__module__, type(f).__qualname__) for f in sys.meta_path]
        return kinds.count(("pytest_harness", "_OldNames"))

    assert ours() == 1
    # What pytester does: the package's module executed again, as a new module object.
    spec = importlib.util.spec_from_file_location("pytest_harness", pytest_harness.__file__)
    assert spec is not None
    assert spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert ours() == 1


def test_the_old_names_load_only_once_a_lookup_failed() -> None:
    code = (
        "import sys, pytest_harness\n"
        "from pytest_harness import Agent, HarnessError\n"
        "import pytest_harness.orchestrator, pytest_harness.team\n"
        "print('pytest_harness._migration' in sys.modules)\n"
        "hasattr(pytest_harness, 'Orchestrator')\n"
        "print('pytest_harness._migration' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_notes_list_every_old_spelling_of_a_tribunal_declaration() -> None:
    """The notes' table of a tribunal's declarations names the spellings that
    ``_migration.RESPELLED`` answers, and no other."""
    text = NOTES.read_text(encoding="utf-8")
    section = text.split("## A tribunal's declarations\n", 1)[1].split("\n## ", 1)[0]
    listed = set()
    for old, _new in re.findall(r"^\| (.+?) \| (.+?) \|$", section, re.M):
        for spelled in re.findall(r"`@?((?:Tribunal|tribunal|harness)\.\w+)", old):
            listed.add(spelled)
    assert listed == set(_migration.RESPELLED)
    for old in _migration.RESPELLED:
        assert _migration.respelled(old).endswith(f"{_migration.NOTES}.")
