"""Writing a cassette file: a test's recordings merged into it under its lock.

Files are JSON, indented, one field per line (JSON is YAML, so the ``.yaml`` name holds);
written atomically, scanned for secrets first, and merged under a file lock: every test of
one recording run that shares a cassette adds to it, also from other xdist workers; a new
run replaces it. An interaction recorded again the same is kept as the file had it
(``steady``), and a file whose bytes would not change is not written.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_harness._cassettes import matching, scrub, steady
from pytest_harness._cassettes.atomic import lock_path, write_atomic
from pytest_harness._cassettes.bodies import body_bytes
from pytest_harness._cassettes.checksum import CHECKSUM, MATCH_KEYS, key_settings, keyed, sealed
from pytest_harness._cassettes.interactions import PRICE
from pytest_harness._cassettes.read import header_of, read
from pytest_harness._cassettes.runlog import RunLog

FORMAT_VERSION = 1


def merge_and_write(
    path: Path,
    new: Sequence[Mapping[str, Any]],
    *,
    mode: str,
    run_id: str,
    secrets: Sequence[str],
    metadata: Mapping[str, Any] | None = None,
    ignore: Sequence[str] = (),
    blank: Collection[str] = (),
) -> dict[str, Any]:
    """Write the interactions a test recorded into ``path``, keeping what belongs there.

    ``all``: the file holds what this recording run recorded into it (the earlier tests of
    the run that share it, then this one), each interaction the same as the one the file
    held before the run at its place kept as it was (``steady.align``). ``new``: the file
    keeps what it had and gains the new interactions. ``metadata`` is added to the file's; a
    mapping value merges with the file's by key (per-test entries such as ``verdicts``
    survive a new recording run until their own test records again). Which files this run
    wrote is kept outside them (``RunLog``): the file is written only when its bytes change.
    Every interaction is written with its match key (``match_key``), computed with
    ``ignore`` and ``blank`` (``matching.request_key``), and the file with its checksum
    (``checksum.stored_keys``). Raises CassetteError when a secret is found; nothing is
    written then.

    Args:
        ignore: the dotted body fields the cassette's match keys leave out.
        blank: the query parameters whose value its match keys leave out.

    Returns:
        The file's header before this write (``version`` and ``metadata``), or an empty
        dict when there was no file; under ``THIS_RUN``, when this run had written it
        before, the per-test keys (node ids) it wrote.
    """
    log = RunLog(run_id)
    with FileLock(lock_path(path)):
        current, before = (read(path), path.read_bytes()) if path.exists() else ({}, None)
        previous = header_of(current) if before is not None else {}
        written = log.written(path)
        earlier: dict[str, Any] = current.get("metadata") or {}
        kept: list[Any] = []
        known: dict[str, Any] = {}
        if mode != "all" or written is not None:
            kept = list(current.get("interactions", []))
            known = dict(earlier)
        else:  # a new recording run: only the per-test entries carry over
            known = {k: v for k, v in earlier.items() if k in _PER_TEST}
        known.pop("run", None)  # cassettes written before the run id moved out kept it here
        interactions = [*kept, *new]
        original = list(current.get("interactions", [])) if written is None else written.original
        key = functools.partial(_request_key, ignore=ignore, blank=blank)
        if mode == "all":
            gains = (matching.SEAM_FIELD, PRICE)  # kept since: an older file gains them
            interactions = steady.align(original, interactions, key, gains)
        data = {
            "version": FORMAT_VERSION,
            "metadata": _sorted(_merged(known, metadata or {})),
            "interactions": [keyed(interaction, key) for interaction in interactions],
            MATCH_KEYS: key_settings(ignore, blank),
            CHECKSUM: "",  # the last field: sealed fills it in
        }
        scrub.check_before_write(data, secrets, str(path))
        text = sealed(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        if before != text.encode("utf-8"):
            write_atomic(path, text)
        tests = _per_test_keys(metadata or {})
        log.wrote(path, original, [*(written.tests if written else ()), *tests])
    if previous and written is not None:
        previous[THIS_RUN] = list(written.tests)
    return previous


# The key of ``merge_and_write``'s result that lists the per-test entries this run wrote.
THIS_RUN = "this_run"


def _request_key(
    request: Mapping[str, Any], *, ignore: Sequence[str] = (), blank: Collection[str] = ()
) -> matching.RequestKey:
    method, uri = str(request.get("method", "")), str(request.get("uri", ""))
    return matching.request_key(method, uri, body_bytes(request.get("body")), ignore, blank)


def _per_test_keys(metadata: Mapping[str, Any]) -> list[str]:
    return [
        str(test)
        for name in _PER_TEST
        if isinstance(metadata.get(name), Mapping)
        for test in metadata[name]
    ]


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


def _sorted(value: Any) -> Any:
    """Metadata in one order, its keys sorted at every depth: a file does not change with
    the order tests or a run first wrote its entries in."""
    if isinstance(value, Mapping):
        return {key: _sorted(value[key]) for key in sorted(value, key=str)}
    return value
