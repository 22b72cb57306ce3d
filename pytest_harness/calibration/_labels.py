"""Labelled sets: the inputs a tribunal is calibrated on, each with the verdict people expect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_harness._datasets import rows
from pytest_harness.errors import LabelError

PASS_WORDS = ("pass", "passed", "true", "yes", "1")
FAIL_WORDS = ("fail", "failed", "false", "no", "0")
_KEYS = ("id", "input", "label", "context")
_EXAMPLE = '{"input": "Thanks, it ships today.", "label": "pass"}'
_KIND = rows.Kind(
    noun="labelled set",
    error=LabelError,
    columns=("input", "label"),
    own=("id", "input", "label"),
    example=_EXAMPLE,
)


@dataclass(frozen=True, slots=True)
class Labelled:
    """One labelled item.

    Attributes:
        id: the item's id (``line N`` / ``item N`` unless the set gives one).
        input: what the judges judge.
        label: True when the verdict should pass, False when it should fail.
        context: extra facts given to the judges, or None.
        where: where the item came from: ``path:line``, or ``item N`` for a list.
    """

    id: str
    input: Any
    label: bool
    context: Mapping[str, Any] | None = None
    where: str = ""


def load(source: Any, *, base: Path | None = None) -> list[Labelled]:
    """The items of a labelled set.

    Args:
        source: a ``.jsonl``, ``.csv``, ``.yaml`` or ``.yml`` path (str or Path; a relative
            one is read from ``base``, else the working directory), or a list of mappings or
            pairs.
        base: the folder relative paths are read from (the test module's, in a test).

    Raises:
        LabelError: the file is missing, empty or malformed, or an item is.
    """
    if isinstance(source, (str, Path)):
        found = rows.read(rows.resolve(Path(source), base, _KIND), _KIND)
        items = [_from_mapping(row.values, row.where, row.default_id) for row in found]
        where = f"{source}"
    elif isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray)):
        items = [_from_list(index, entry) for index, entry in enumerate(source)]
        where = "the list"
    else:
        raise LabelError(
            "a labelled set is a .jsonl, .csv or .yaml path or a list of items, got "
            f"{source!r:.80} (type={type(source).__name__})"
        )
    if not items:
        raise LabelError(f"{where} has no labelled items: add some, one like {_EXAMPLE}")
    _check_ids(items)
    return items


def source_name(source: Any) -> str | None:
    """How a calibration names its labelled set: the path as given, None for a list."""
    return str(source) if isinstance(source, (str, Path)) else None


def parse_label(value: Any, where: str) -> bool:
    """A label as a bool: True/False, 1/0, or one of ``PASS_WORDS`` / ``FAIL_WORDS``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return value == 1
    if isinstance(value, str) and value.strip().lower() in PASS_WORDS + FAIL_WORDS:
        return value.strip().lower() in PASS_WORDS
    raise LabelError(
        f"{where}: unknown label {value!r:.60}; write true/false, 1/0 or one of "
        f"{', '.join(PASS_WORDS)} (the verdict should pass) or {', '.join(FAIL_WORDS)} "
        "(it should fail)"
    )


# Entries -----------------------------------------------------------------------------------


def _from_list(index: int, entry: Any) -> Labelled:
    where = f"item {index}"
    if isinstance(entry, Labelled):
        return entry
    if isinstance(entry, Mapping):
        return _from_mapping(entry, where, where)
    if isinstance(entry, tuple) and len(entry) == 2:
        return Labelled(id=where, input=entry[0], label=parse_label(entry[1], where), where=where)
    raise LabelError(
        f"{where}: {entry!r:.80} is not a labelled item; write a mapping like {_EXAMPLE} "
        "or a pair (input, label)"
    )


def _from_mapping(entry: Mapping[str, Any], where: str, default_id: str) -> Labelled:
    if entry.get("input") is None:
        raise LabelError(f"{where}: missing input; write the text to judge, like {_EXAMPLE}")
    if entry.get("label") is None:
        raise LabelError(
            f'{where}: missing label; add "label": "pass" (the verdict should pass) or '
            '"fail" (it should fail)'
        )
    context = entry.get("context")
    if context is not None and not isinstance(context, Mapping):
        raise LabelError(f"{where}: context must be an object (a mapping), not {context!r:.60}")
    extra = {key: value for key, value in entry.items() if key not in _KEYS}
    merged = {**(context or {}), **extra}
    item_id = entry.get("id")
    return Labelled(
        id=default_id if item_id is None or item_id == "" else str(item_id),
        input=entry["input"],
        label=parse_label(entry["label"], where),
        context=merged or None,
        where=where,
    )


def _check_ids(items: Sequence[Labelled]) -> None:
    seen: dict[str, str] = {}
    for item in items:
        if item.id in seen:
            raise LabelError(
                f"{item.where}: duplicate id {item.id!r} (also at {seen[item.id]}); "
                "give each item its own id"
            )
        seen[item.id] = item.where
