"""Files of rows: the JSONL, CSV and YAML files datasets and labelled sets are read from."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_harness.errors import DatasetError

SUFFIXES = (".jsonl", ".csv", ".yaml", ".yml")


@dataclass(frozen=True, slots=True, kw_only=True)
class Kind:
    """What a file of rows is, for its error messages.

    Attributes:
        noun: what the file is called in a message (``"dataset"``, ``"labelled set"``).
        error: the exception raised (``DatasetError`` or a subclass).
        columns: the columns a CSV header must have.
        own: the keys whose empty CSV cell is a missing value (any other column's empty
            cell is an empty text).
        example: one row, as a JSONL line, that the messages show.
    """

    noun: str
    error: type[DatasetError]
    columns: tuple[str, ...]
    own: tuple[str, ...]
    example: str


@dataclass(frozen=True, slots=True)
class Row:
    """One row of a file: its values, where it is, and its id when it gives none."""

    values: Mapping[str, Any]
    where: str
    default_id: str


def resolve(path: Path, base: Path | None, kind: Kind) -> Path:
    """The file ``path`` names (relative to ``base``), checked to exist and to be readable."""
    full = path if path.is_absolute() or base is None else base / path
    if full.suffix.lower() not in SUFFIXES:
        raise kind.error(
            f"{path}: a {kind.noun} must be a .jsonl, .csv or .yaml file (or a Python list), "
            f"not {full.suffix or 'a file without an extension'}"
        )
    if not full.is_file():
        hint = f" (relative paths are read from {base})" if base is not None else ""
        raise kind.error(f"{full}: no such {kind.noun}{hint}; check the path")
    return full


def read(path: Path, kind: Kind) -> Iterator[Row]:
    """The rows of the file at ``path`` (a path ``resolve`` returned)."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM from a spreadsheet export is fine
    except (OSError, UnicodeDecodeError) as error:
        raise kind.error(f"{path}: cannot read the {kind.noun} ({error})") from None
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl(path, text, kind)
    if suffix == ".csv":
        return _csv(path, text, kind)
    return _yaml(path, text, kind)


def _jsonl(path: Path, text: str, kind: Kind) -> Iterator[Row]:
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines: JSON may hold U+2028
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as error:
            raise kind.error(
                f"{where}: not JSON ({error.msg}); write one object per line, like {kind.example}"
            ) from None
        if not isinstance(entry, dict):
            raise kind.error(
                f"{where}: a line must be a JSON object, not {type(entry).__name__}; "
                f"write one like {kind.example}"
            )
        yield Row(entry, where, f"line {number}")


def _csv(path: Path, text: str, kind: Kind) -> Iterator[Row]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = reader.fieldnames or []
    missing = [name for name in kind.columns if name not in columns]
    if missing:
        raise kind.error(
            f"{path}:1: the header has no {' or '.join(missing)} column (it has "
            f"{', '.join(columns) or 'nothing'}); start the file with a row like: "
            f"{','.join(('id', *kind.columns))}"
        )
    start = reader.line_num + 1
    for row in reader:
        where = f"{path}:{start}"
        if None in row:
            raise kind.error(f"{where}: more cells than the header has columns; quote the input")
        values = {key: value for key, value in row.items() if value or key not in kind.own}
        yield Row(values, where, f"line {start}")
        start = reader.line_num + 1


def _yaml(path: Path, text: str, kind: Kind) -> Iterator[Row]:
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as error:
        said = f"{path}{_yaml_problem(error)}; write a list of mappings, one per row"
        raise kind.error(said) from None

    finally:
        loader.dispose()
    if isinstance(data, dict) and isinstance(data.get("cases"), list) and node is not None:
        node = next(value for key, value in node.value if key.value == "cases")
        data = data["cases"]
    if not isinstance(data, list) or node is None:
        raise kind.error(
            f"{path}:1: a {kind.noun} in YAML is a list of mappings (or a mapping whose "
            f"'cases' key holds one), not {type(data).__name__}; start each row with '- '"
        )
    for value, item in zip(data, node.value, strict=True):
        number = item.start_mark.line + 1
        if not isinstance(value, dict):
            raise kind.error(
                f"{path}:{number}: a row must be a mapping (keys and values), not "
                f"{type(value).__name__}; write one like {kind.example}"
            )
        odd = [key for key in value if not isinstance(key, str)]
        if odd:
            raise kind.error(
                f'{path}:{number}: the key {odd[0]!r} is not text; quote it ("{odd[0]}": ...)'
            )
        yield Row(value, f"{path}:{number}", f"line {number}")


def _yaml_problem(error: Exception) -> str:
    """``:2: not YAML (what, at line 3)``: the line where the construct began (a bracket left
    open), and where the parser gave up when that is elsewhere."""
    began, problem = getattr(error, "context_mark", None), getattr(error, "problem_mark", None)
    what = getattr(error, "problem", None) or str(error).splitlines()[0]
    first = began or problem
    line = f":{first.line + 1}" if first is not None else ""
    if began is not None and problem is not None and problem.line != began.line:
        what += f", at line {problem.line + 1}"
    return f"{line}: not YAML ({what})"
