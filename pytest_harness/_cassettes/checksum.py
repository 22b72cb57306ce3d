"""Stored match keys, and the checksum that vouches for them.

Each interaction is written with the digest of its match key (``MATCH_KEY``), the file with
the settings the keys were computed with (``MATCH_KEYS``) and, as its last field, the
checksum of every byte before it (``CHECKSUM``). A stored key is used only while the
checksum holds and the settings are the cassette's; any other file's keys are computed
again. ``docs/reference/cassette-files.md`` says why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from pytest_harness._cassettes import matching

MATCH_KEY = "match_key"
MATCH_KEYS = "match_keys"
CHECKSUM = "checksum"


def stored_keys(
    data: Mapping[str, Any], ignore: Sequence[str], blank: Collection[str]
) -> list[str] | None:
    """The stored match keys of the interactions of ``data`` (as ``read.read`` returns it), one
    per interaction; None when they must be computed (a file written before keys were
    stored, edited since it was written, or keyed with other settings)."""
    if data.get(MATCH_KEYS) != key_settings(ignore, blank):
        return None  # read() keeps the settings only while the checksum holds
    keys = [interaction.get(MATCH_KEY) for interaction in data.get("interactions") or ()]
    return keys if all(isinstance(key, str) for key in keys) else None


def keyed(
    interaction: Mapping[str, Any], key: Callable[[Mapping[str, Any]], matching.RequestKey]
) -> dict[str, Any]:
    """``interaction`` with the digest of its match key, always its last field (replaced,
    when it had one: a file re-recorded writes the same bytes whatever order it was in)."""
    fields = {name: value for name, value in interaction.items() if name != MATCH_KEY}
    return {**fields, MATCH_KEY: matching.digest(key(interaction["request"]))}


def key_settings(ignore: Sequence[str], blank: Collection[str]) -> dict[str, list[str]]:
    """The ``match_keys`` field: what the stored match keys leave out."""
    return {"ignore": list(ignore), "blank": sorted(blank)}


def _seal(checksum: str) -> str:
    """How a file ``write.merge_and_write`` wrote ends: its checksum is the last field."""
    return f'  "{CHECKSUM}": "{checksum}"\n}}\n'


def sealed(text: str) -> str:
    """``text``, a cassette whose last field is an empty checksum, with its checksum: the
    SHA-256 of its bytes before the checksum's line."""
    head = text.removesuffix(_seal(""))
    return head + _seal(hashlib.sha256(head.encode("utf-8")).hexdigest())


def seal_holds(raw: bytes, data: Any) -> bool:
    """Whether the file's bytes ``raw`` (parsed: ``data``) end with the checksum of the bytes
    before it: the file is as ``write.merge_and_write`` wrote it."""
    checksum = data.get(CHECKSUM) if isinstance(data, dict) else None
    if not (isinstance(checksum, str) and checksum.isascii() and len(checksum) == 64):
        return False
    tail = _seal(checksum).encode("ascii")
    head = memoryview(raw)[: len(raw) - len(tail)]  # no copy of a file of megabytes
    return raw.endswith(tail) and hashlib.sha256(head).hexdigest() == checksum
