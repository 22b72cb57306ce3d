"""Labelled sets: JSONL, CSV and lists read alike; every bad input named by file and line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_harness.calibration._labels import Labelled, load, source_name
from pytest_harness.errors import ConfigError, LabelError

ITEMS = [
    {"id": "polite", "input": "Thanks, it ships today.", "label": "pass", "tone": "warm"},
    {"id": "rude", "input": "Go away.", "label": "FAIL", "tone": "cold"},
    {"input": "Sorry, it is late.", "label": "yes", "tone": "warm"},
]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(entries: list[Any]) -> str:
    return "\n".join(json.dumps(entry) for entry in entries) + "\n"


def test_jsonl_csv_and_list_give_the_same_items(tmp_path: Path) -> None:
    write(tmp_path, "set.jsonl", jsonl(ITEMS[:2]) + "\n" + json.dumps(ITEMS[2]) + "\n")
    write(
        tmp_path,
        "set.csv",
        "id,input,label,tone\n"
        'polite,"Thanks, it ships today.",pass,warm\n'
        "rude,Go away.,FAIL,cold\n"
        ',"Sorry, it is late.",yes,warm\n',
    )
    from_jsonl = load("set.jsonl", base=tmp_path)
    from_csv = load(tmp_path / "set.csv")
    from_list = load(ITEMS)

    def plain(items: list[Labelled]) -> list[tuple[Any, ...]]:
        return [(i.input, i.label, dict(i.context or {})) for i in items]

    expected = [
        ("Thanks, it ships today.", True, {"tone": "warm"}),
        ("Go away.", False, {"tone": "cold"}),
        ("Sorry, it is late.", True, {"tone": "warm"}),
    ]
    assert plain(from_jsonl) == plain(from_csv) == plain(from_list) == expected
    # A blank line is skipped, but lines keep their numbers; ids default to the position.
    assert [i.id for i in from_jsonl] == ["polite", "rude", "line 4"]
    assert [i.id for i in from_csv] == ["polite", "rude", "line 4"]
    assert [i.id for i in from_list] == ["polite", "rude", "item 2"]
    assert from_jsonl[2].where == f"{tmp_path / 'set.jsonl'}:4"
    assert from_csv[1].where == f"{tmp_path / 'set.csv'}:3"
    assert from_list[2].where == "item 2"


def test_every_label_spelling(tmp_path: Path) -> None:
    passing = [True, 1, "pass", "Passed", "TRUE", "yes", "1", " pass "]
    failing = [False, 0, "fail", "failed", "False", "NO", "0"]
    items = load([(f"text {n}", label) for n, label in enumerate(passing + failing)])
    assert [item.label for item in items] == [True] * len(passing) + [False] * len(failing)
    assert items[0] == Labelled(id="item 0", input="text 0", label=True, where="item 0")


def test_context_object_and_extra_keys_merge(tmp_path: Path) -> None:
    entry = {"input": {"question": "Q?"}, "label": 0, "context": {"a": 1}, "b": 2, "id": 7}
    (item,) = load([entry])
    assert (item.id, item.input, item.label) == ("7", {"question": "Q?"}, False)
    assert item.context == {"a": 1, "b": 2}


def test_source_names() -> None:
    assert source_name("labels/set.jsonl") == "labels/set.jsonl"
    assert source_name(Path("set.csv")) == "set.csv"
    assert source_name([("x", True)]) is None


# Bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{"input": "a", "label": "pass"}\n{"input": "b"}\n', 2, "missing label"),
        ('{"input": "a", "label": "maybe"}\n', 1, "unknown label 'maybe'"),
        ('{"input": "a", "label": 2}\n', 1, "unknown label 2"),
        ('\n{"label": "pass"}\n', 2, "missing input"),
        ('{"input": "a", "label": "pass"}\n{"input": "b", label: 1}\n', 2, "not JSON"),
        ('["a", "pass"]\n', 1, "a line must be a JSON object, not list"),
        ('{"input": "a", "label": "pass", "context": "x"}\n', 1, "context must be an object"),
    ],
)
def test_bad_jsonl_lines_are_named(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = write(tmp_path, "set.jsonl", text)
    with pytest.raises(LabelError, match="^" + re.escape(f"{path}:{line}: {message}")):
        load(path)


def test_an_unknown_label_lists_the_accepted_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "set.jsonl", '{"input": "a", "label": "ok"}\n')
    with pytest.raises(LabelError) as raised:
        load(path)
    assert str(raised.value) == (
        f"{path}:1: unknown label 'ok'; write true/false, 1/0 or one of pass, passed, true, "
        "yes, 1 (the verdict should pass) or fail, failed, false, no, 0 (it should fail)"
    )
    assert isinstance(raised.value, ConfigError)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("input,verdict\na,pass\n", 1, "the header has no label column (it has input, verdict)"),
        ("id,input,label\nx,a,pass\ny,b,\n", 3, "missing label"),
        ("id,input,label\nx,,pass\n", 2, "missing input"),
        ("id,input,label\nx,a,pass\ny,b,nope\n", 3, "unknown label 'nope'"),
        ("input,label\na,pass,extra\n", 2, "more cells than the header has columns"),
        ('input,label\n"two\nlines",pass\nb,maybe\n', 4, "unknown label 'maybe'"),
    ],
)
def test_bad_csv_rows_are_named(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = write(tmp_path, "set.csv", text)
    with pytest.raises(LabelError, match="^" + re.escape(f"{path}:{line}: {message}")):
        load(path)


def test_bad_list_items_are_named_by_index() -> None:
    with pytest.raises(LabelError, match=r"^item 1: missing label"):
        load([("a", True), {"input": "b"}])
    with pytest.raises(LabelError, match=r"^item 0: 'just text' is not a labelled item"):
        load(["just text"])
    with pytest.raises(LabelError, match=r"^item 2: unknown label None"):
        load([("a", 1), ("b", 0), ("c", None)])


def test_a_missing_file_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(LabelError) as raised:
        load("labels/none.jsonl", base=tmp_path)
    assert str(raised.value) == (
        f"{tmp_path / 'labels/none.jsonl'}: no such labelled set (relative paths are read "
        f"from {tmp_path}); check the path"
    )


def test_an_unknown_extension_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "set.json", "[]")
    with pytest.raises(LabelError, match=r"must be a \.jsonl, \.csv or \.yaml file .*not \.json$"):
        load(path)


def test_an_empty_set_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "set.jsonl", "\n\n")
    with pytest.raises(LabelError, match=r"set\.jsonl has no labelled items: add some"):
        load(path)
    with pytest.raises(LabelError, match=r"^the list has no labelled items"):
        load([])
    header_only = write(tmp_path, "set.csv", "input,label\n")
    with pytest.raises(LabelError, match=r"set\.csv has no labelled items"):
        load(header_only)


def test_duplicate_ids_name_both_places(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "set.jsonl",
        jsonl(
            [
                {"id": "a", "input": "x", "label": 1},
                {"id": "b", "input": "y", "label": 1},
                {"id": "a", "input": "z", "label": 0},
            ]
        ),
    )
    with pytest.raises(LabelError) as raised:
        load(path)
    assert str(raised.value) == (
        f"{path}:3: duplicate id 'a' (also at {path}:1); give each item its own id"
    )


def test_a_source_that_is_no_set_is_refused() -> None:
    expected = r"a \.jsonl, \.csv or \.yaml path or a list of items, got 42"
    with pytest.raises(LabelError, match=expected):
        load(42)
