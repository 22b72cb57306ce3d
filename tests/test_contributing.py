"""CONTRIBUTING.md's package map names every folder of the repository and of the package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.harness(cassette=False)

ROOT = Path(__file__).resolve().parent.parent
# Not the project's own folders: tools' caches and outputs (all in .gitignore).
IGNORED = {".git", ".venv", ".tox", "__pycache__", "site", "build", "dist", "test-artifacts"}


def named_folders() -> list[str]:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Package map", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    return re.findall(r"^(\S+/)\s", block, re.M)


def folders() -> set[str]:
    """Folders two levels deep, and every subpackage of the package at any depth."""
    found = set()
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT)
        if not path.is_dir() or _ignored(relative):
            continue
        in_package = relative.parts[0] == "pytest_harness"
        if len(relative.parts) <= 2 or (in_package and (path / "__init__.py").exists()):
            found.add(relative.as_posix() + "/")
    return found


def _ignored(relative: Path) -> bool:
    return any(
        part in IGNORED or part.endswith(".egg-info") or (part.startswith(".") and part != ".ci")
        for part in relative.parts
    )


def test_every_folder_is_named_in_the_package_map() -> None:
    assert sorted(folders() - set(named_folders())) == []


def test_the_package_map_names_only_folders_that_exist() -> None:
    named = named_folders()
    assert len(named) == len(set(named)), "a folder is named twice"
    assert [name for name in named if not (ROOT / name).is_dir()] == []
