"""What one session did with cassette files, kept outside them: the files it wrote (and what
they held before), the cassettes its tests opened, and why it was not a full run
(``--harness-prune``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_harness._cassettes.atomic import write_atomic


@dataclass(frozen=True, slots=True, kw_only=True)
class Written:
    """A file a recording run has written: what it held before, and the per-test entries.

    Attributes:
        original: the file's interactions before the run's first write (``steady.align``
            keeps them where the run recorded the same again).
        tests: the per-test keys (node ids) of the metadata the run wrote into it.
    """

    original: list[Any]
    tests: tuple[str, ...] = ()


class RunLog:
    """What one session did with cassette files, kept outside them (a file that held its
    run's id changed on every recording run).

    A folder of the system's temp folder named by the session's run id, which xdist workers
    share (as they share the spend ledger): the files the run wrote (``Written``), under the
    cassette's own lock; the cassettes its tests opened and why it was not a full run, for
    ``--harness-prune`` (one file per process, appended to). ``forget`` removes it.
    """

    def __init__(self, run_id: str) -> None:
        self.folder = Path(tempfile.gettempdir()) / "pytest-harness-runs" / run_id

    def written(self, path: Path) -> Written | None:
        """What this run wrote into ``path`` (None: nothing yet). Call under its lock."""
        try:
            data = json.loads(self._mark(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return Written(original=list(data["original"]), tests=tuple(data["tests"]))

    def wrote(self, path: Path, original: Sequence[Any], tests: Sequence[str]) -> None:
        """Remember that this run wrote ``path`` (call under its lock)."""
        tests = tuple(dict.fromkeys(tests))
        known = self.written(path)
        if known is None or known.tests != tests:
            data = {"path": str(path), "original": list(original), "tests": list(tests)}
            write_atomic(self._mark(path), json.dumps(data, ensure_ascii=False))

    def _mark(self, path: Path) -> Path:
        digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()
        return self.folder / "written" / f"{digest}.json"

    def used(self, path: Path, *, folder: bool = False) -> None:
        """Note a cassette a test opened (or a ``folder`` of them a skipped module owns)."""
        self._append("used", f"{'folder' if folder else 'file'}\t{path.resolve()}")

    def partial(self, reason: str) -> None:
        """Note why this run does not show which cassettes are unused (``--harness-prune``)."""
        self._append("partial", " ".join(reason.split()))

    def _append(self, kind: str, line: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"{kind}-{os.getpid()}.txt", "a", encoding="utf-8") as stream:
            stream.write(line + "\n")

    def _lines(self, kind: str) -> list[str]:
        lines: list[str] = []
        for part in sorted(self.folder.glob(f"{kind}-*.txt")):
            lines += part.read_text(encoding="utf-8").splitlines()
        return list(dict.fromkeys(line for line in lines if line))

    def reasons(self) -> list[str]:
        """Why this run was not a full one, as its processes noted it (none: it was)."""
        return self._lines("partial")

    def unused(self, cassette_dir: Path, suffix: str) -> list[Path]:
        """The cassette files (named ``*suffix``) under ``cassette_dir`` no test of this run
        opened, outside the folders noted as used."""
        files_: set[Path] = set()
        folders: list[Path] = []
        for line in self._lines("used"):
            kind, _, where = line.partition("\t")
            if kind == "folder":
                folders.append(Path(where))
            else:
                files_.add(Path(where))
        return [
            path
            for path in sorted(cassette_dir.resolve().rglob(f"*{suffix}"))
            if path.is_file()
            and path not in files_
            and not any(path.is_relative_to(folder) for folder in folders)
        ]

    def forget(self) -> None:
        """Remove the run's folder (the session is over)."""
        shutil.rmtree(self.folder, ignore_errors=True)


# The log that notes the cassettes opened (``note_used``), while a session asks for it.
_tracking: RunLog | None = None


def track(log: RunLog | None) -> RunLog | None:
    """Note the cassettes opened from now on in ``log`` (None: stop); returns the log before."""
    global _tracking
    before, _tracking = _tracking, log
    return before


def note_used(path: Path, *, folder: bool = False) -> None:
    """A test (or a scenarios marker) opened the cassette ``path``: noted while tracked."""
    if _tracking is not None:
        _tracking.used(path, folder=folder)
