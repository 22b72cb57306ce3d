"""Reading a cassette file: JSON first (fast), YAML for a hand-edited one; its shape checked
unless its checksum holds (``shape``); a damaged file is a ``CassetteError`` naming the file,
the part that is wrong and the fix, and is left as it is.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_harness._cassettes import shape
from pytest_harness._cassettes.atomic import lock_path
from pytest_harness._cassettes.checksum import MATCH_KEYS, seal_holds
from pytest_harness.errors import CassetteError


def header(path: Path, *, lock: bool = True) -> dict[str, Any]:
    """The file's ``version`` and ``metadata`` (empty when there is no file).

    Args:
        path: the cassette file.
        lock: wait for a writer to finish first (not needed in replay: nothing writes).
    """
    with FileLock(lock_path(path)) if lock else contextlib.nullcontext():
        return header_of(read(path)) if path.exists() else {}


def recorded_model(header: Mapping[str, Any]) -> str | None:
    """The model override (``--harness-model``) a cassette was recorded with, or None.

    Cassettes written before the override was kept name only the embedded model's endpoint.
    """
    metadata = header.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    model = metadata.get("model")
    if isinstance(model, str) and model:
        return model
    endpoint = metadata.get("endpoint")
    return endpoint if endpoint == "local" else None


def header_of(data: Mapping[str, Any]) -> dict[str, Any]:
    return {"version": data.get("version"), "metadata": data.get("metadata")}


def read(path: Path) -> dict[str, Any]:
    """Parse a cassette file (JSON first, fast; YAML for hand-edited files) and check its shape.

    A file whose checksum holds is as ``write.merge_and_write`` wrote it, from data this
    function or ``interactions.interaction`` made: its shape is not checked again (the
    checksum tells an edited or damaged file, not a forged one). Any other file is checked,
    and its stored match keys are not offered (``checksum.stored_keys``).

    Returns:
        The file's data, its shape checked; an empty dict when the file is blank.

    Raises:
        CassetteError: the file is not UTF-8, does not parse, or is not shaped like a
            cassette; the message names the part that is wrong. The file is left as it is.
    """
    return parse(path.read_bytes(), path)


def parse(raw: bytes, path: Path) -> dict[str, Any]:
    """``read`` of a file's bytes (``path`` names it in messages: a file at a git ref)."""
    if b"\r" in raw:  # written on Windows, or checked out so by git (a one-byte search: fast)
        raw = raw.replace(b"\r\n", b"\n")  # JSON and YAML read either; the checksum is of \n
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _damaged(path, f"it is not UTF-8 text ({error})") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        data = _yaml_or_fail(path, text, error)
    except RecursionError:  # the parser's stack ran out: nested far deeper than MAX_DEPTH
        raise _damaged(path, f"its values nest deeper than {shape.MAX_DEPTH} levels") from None
    if seal_holds(raw, data):
        return dict(data)
    problem = shape.problem(data)
    if problem is not None:
        raise _damaged(path, problem)
    unsealed = dict(data)  # a mapping: shape.problem checked it
    unsealed.pop(MATCH_KEYS, None)  # edited, or older: its stored keys are not to be trusted
    return unsealed


def read_recordings(path: Path) -> dict[str, Any]:
    """``read`` a file that must hold recordings (a test's cassette, found on disk).

    Raises:
        CassetteError: as ``read``; also for a blank file, or one without interactions (a
            file of another tool, or one cut short), which would otherwise replay as if
            nothing had been recorded.
    """
    data = read(path)
    if not data:
        raise _damaged(path, "it is empty")
    if not data.get("interactions"):
        raise _damaged(
            path,
            "it holds no recorded interactions (a pytest-harness cassette has a non-empty "
            "'interactions' list; this one is another tool's file, or was cut short)",
        )
    return data


def _damaged(path: Path, problem: str) -> CassetteError:
    """The error for a cassette file that cannot be read: the file, the problem, the fix."""
    return CassetteError(
        f"cassette {path} cannot be read: {problem}. The file was left as it is: fix it, or "
        "delete it and re-record the test with pytest --harness-live."
    )


def _yaml_or_fail(path: Path, text: str, json_error: ValueError) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except RecursionError:
        raise _damaged(path, f"its values nest deeper than {shape.MAX_DEPTH} levels") from None
    # PyYAML's constructors raise ValueError for a value they cannot convert (a 31st of
    # February, ``!!float abc``, an integer of more than 4,300 digits).
    except (yaml.YAMLError, ValueError) as error:
        line: object
        problem: object
        if text.lstrip().startswith("{") and isinstance(json_error, json.JSONDecodeError):
            line, problem = json_error.lineno, json_error.msg  # JSON-style file: JSON's account
        else:
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark else None
            problem = getattr(error, "problem", None) or error
        where = "" if line is None else f", line {line}"
        raise CassetteError(
            f"cassette {path} does not parse{where}: {problem}. "
            "Fix the file, or delete it and re-record the test with --harness-live."
        ) from None
