"""The cassette file: JSON (which is YAML) written atomically and merged under a lock.

- Files are JSON, indented, one field per line (JSON is YAML, so the ``.yaml`` name holds):
  ``json`` loads 1,000 interactions in milliseconds where PyYAML takes a third of a second.
  A hand-edited file in YAML syntax still loads, through PyYAML's C loader.
- Writes are atomic (temporary file in the same folder, then ``os.replace``), scanned for
  secrets first, and merged under a file lock: every test of one recording run that shares
  a cassette adds to it, also from other xdist workers; a new run replaces it.

Plain data in and out: vcrpy is not imported here.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_harness.cassettes import scrub
from pytest_harness.errors import CassetteError

FORMAT_VERSION = 1


def merge_and_write(
    path: Path,
    new: Sequence[Mapping[str, Any]],
    *,
    mode: str,
    run_id: str,
    secrets: Sequence[str],
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the interactions a test recorded into ``path``, keeping what belongs there.

    ``all``: the file holds what this recording run recorded into it (the earlier tests of
    the run that share it, then this one). ``new``: the file keeps what it had and gains the
    new interactions. ``metadata`` is added to the file's (the run id is always set); a
    mapping value merges with the file's by key (per-test entries such as ``verdicts``
    survive a new recording run until their own test records again).
    Raises CassetteError when a secret is found; nothing is written then.

    Returns:
        The file's header before this write (``version`` and ``metadata``), or an empty
        dict when there was no file.
    """
    with FileLock(lock_path(path)):
        kept: list[Any] = []
        known: dict[str, Any] = {}
        previous: dict[str, Any] = {}
        if path.exists():
            current = read(path)
            previous = _header(current)
            earlier: dict[str, Any] = current.get("metadata") or {}
            if mode != "all" or earlier.get("run") == run_id:
                kept = list(current.get("interactions", []))
                known = dict(earlier)
            else:  # a new recording run: only the per-test entries carry over
                known = {k: v for k, v in earlier.items() if k in _PER_TEST}
        data = {
            "version": FORMAT_VERSION,
            "metadata": {**_merged(known, metadata or {}), "run": run_id},
            "interactions": [*kept, *new],
        }
        scrub.check_before_write(data, secrets, str(path))
        write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return previous


# Metadata kept per test (a mapping by node id): a new recording run keeps the entries of the
# tests that have not recorded yet, so each test compares against its own previous entry.
_PER_TEST = frozenset({"verdicts"})


def _merged(known: Mapping[str, Any], added: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(known)
    for key, value in added.items():
        before = merged.get(key)
        both = isinstance(before, Mapping) and isinstance(value, Mapping)
        merged[key] = {**before, **value} if both else value  # type: ignore[dict-item]
    return merged


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a crash leaves either the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def header(path: Path) -> dict[str, Any]:
    """The file's ``version`` and ``metadata`` (empty when there is no file)."""
    with FileLock(lock_path(path)):
        return _header(read(path)) if path.exists() else {}


def _header(data: Mapping[str, Any]) -> dict[str, Any]:
    return {"version": data.get("version"), "metadata": data.get("metadata")}


def lock_path(path: Path) -> str:
    """Where the lock of ``path`` lives: the system's temp folder, never beside the file."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / "pytest-harness-locks"
    folder.mkdir(exist_ok=True)
    return str(folder / f"{digest}.lock")


def interaction(request: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    raw = dict(request)
    raw["body"] = _text_or_base64(raw["body"])
    body = _text_or_base64((response.get("body") or {}).get("string"))
    shown = body if isinstance(body, dict) else {"string": body or ""}
    return {"request": raw, "response": {**response, "body": shown}}


def _text_or_base64(data: bytes | str | None) -> str | dict[str, str] | None:
    if data is None or isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def read(path: Path) -> dict[str, Any]:
    """Parse a cassette file: JSON first (fast), YAML for hand-edited files."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CassetteError(f"cassette {path} is not UTF-8 text ({error}).") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        data = _yaml_or_fail(path, text, error)
    if not isinstance(data, dict) or not isinstance(data.get("interactions", []), list):
        raise CassetteError(
            f"cassette {path} is not a cassette: expected a mapping with 'interactions'. "
            "Delete it and re-record with --harness-live."
        )
    return data


def _yaml_or_fail(path: Path, text: str, json_error: ValueError) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        line: object
        problem: object
        if text.lstrip().startswith("{") and isinstance(json_error, json.JSONDecodeError):
            line, problem = json_error.lineno, json_error.msg  # JSON-style file: JSON's account
        else:
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark else "?"
            problem = getattr(error, "problem", None) or error
        raise CassetteError(
            f"cassette {path} does not parse, line {line}: {problem}. "
            "Fix the file, or delete it and re-record the test with --harness-live."
        ) from None
