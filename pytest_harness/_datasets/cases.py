"""A dataset's cases: rows read into ``Case`` values, their ids, and the tests they make."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_harness._datasets.rows import Kind, Row, read, resolve
from pytest_harness.errors import ConfigError, DatasetError

ARGNAME = "case"
_OWN = ("id", "input", "expected")
_EXAMPLE = '{"input": "Where is my order A-1?", "expected": "It left on Monday."}'
_KIND = Kind(noun="dataset", error=DatasetError, columns=("input",), own=_OWN, example=_EXAMPLE)
_WORDS = re.compile(r"[^\W_]+")  # letters and digits of any script
_ID_WIDTH = 40


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One case of a dataset.

    Attributes:
        id: the case's id in the test's name (its row's, else read from the input).
        input: what the case gives the feature under test.
        expected: the answer the case expects, or None.
        fields: every other key of the row (a CSV's other columns).
        where: where the row is: ``path:line``, or ``item N`` in a list.
    """

    id: str
    input: Any
    expected: Any = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""

    def __getitem__(self, key: str) -> Any:
        """``case["input"]``, ``case["expected"]``, ``case["id"]`` or one of the fields."""
        if key in _OWN:
            return getattr(self, key)
        try:
            return self.fields[key]
        except KeyError:
            known = ", ".join([*_OWN, *self.fields])
            raise KeyError(
                f"case {self.id} ({self.where}) has no {key!r}; it has {known}"
            ) from None


def load_cases(source: Any, *, base: Path | None = None) -> list[Case]:
    """The cases of a dataset, in order, each with its id (see the module).

    Args:
        source: a ``.jsonl``, ``.csv``, ``.yaml`` or ``.yml`` path (str or Path; a relative
            one is read from ``base``, else the working directory), or a list of mappings,
            strings or ``Case`` values.
        base: the folder relative paths are read from (the test module's, in a test).

    Raises:
        DatasetError: the file is missing, empty or malformed, or a row is.
    """
    if isinstance(source, (str, Path)):
        rows = list(read(resolve(Path(source), base, _KIND), _KIND))
        named = str(source)
    elif isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray)):
        rows = [_list_row(index, entry) for index, entry in enumerate(source)]
        named = "the list"
    else:
        raise DatasetError(
            f"a dataset is a .jsonl, .csv or .yaml path or a list of cases, got {source!r:.80} "
            f"(type={type(source).__name__})"
        )
    if not rows:
        raise DatasetError(f"{named} has no cases: add some, one like {_EXAMPLE}")
    return list(_with_ids([_case(row) for row in rows]))


def _list_row(index: int, entry: Any) -> Row:
    where = f"item {index}"
    if isinstance(entry, Case):
        values = {"id": entry.id, "input": entry.input, "expected": entry.expected}
        return Row({**entry.fields, **values}, entry.where or where, f"item {index}")
    if isinstance(entry, str):
        return Row({"input": entry}, where, f"item {index}")
    if isinstance(entry, Mapping) and all(isinstance(key, str) for key in entry):
        return Row(entry, where, f"item {index}")
    raise DatasetError(
        f"{where}: {entry!r:.80} is not a case; write a mapping like {_EXAMPLE}, or a string "
        "(the input)"
    )


def _case(row: Row) -> Case:
    values = row.values
    if values.get("input") is None or values.get("input") == "":
        raise DatasetError(
            f"{row.where}: missing input; write what the case gives the feature, like {_EXAMPLE}"
        )
    given = values.get("id")
    if given is not None and not isinstance(given, (str, int)):
        raise DatasetError(f"{row.where}: an id is text or a number, not {given!r:.60}")
    return Case(
        id="" if given is None else str(given).strip(),
        input=values["input"],
        expected=values.get("expected"),
        fields={key: value for key, value in values.items() if key not in _OWN},
        where=row.where,
    )


def _with_ids(cases: list[Case]) -> Iterator[Case]:
    """Each case with its id: given ones kept (two alike: an error), others read from the
    input and made unique."""
    given: dict[str, str] = {}
    for case in cases:
        if case.id in given:
            raise DatasetError(
                f"{case.where}: duplicate id {case.id!r} (also at {given[case.id]}); give each "
                "case its own id"
            )
        if case.id:
            given[case.id] = case.where
    taken = set(given)
    for case in cases:
        if case.id:
            yield case
            continue
        wanted = _slug(case.input)
        if not wanted:  # no word in the input: where it is
            tail = case.where.rpartition(":")[2]
            wanted = f"line-{tail}" if tail.isdigit() else tail.replace(" ", "-") or "case"
        name, number = wanted, 1
        while name in taken:
            number += 1
            name = f"{wanted}-{number}"
        taken.add(name)
        yield Case(
            id=name, input=case.input, expected=case.expected, fields=case.fields, where=case.where
        )


def _slug(value: Any) -> str:
    """The words of an input, lowercase, joined by ``-``, cut at a word under 40 characters."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    slug = ""
    for word in _WORDS.findall(text.lower()):
        longer = f"{slug}-{word}" if slug else word
        if len(longer) > _ID_WIDTH:
            return slug or word[:_ID_WIDTH]
        slug = longer
    return slug


def parametrize(marker: Any, metafunc: Any) -> None:
    """One test per case of the test's ``dataset`` marker, each with its id; or one test
    that errors at set-up saying what is wrong and the fix (the session goes on)."""
    import pytest

    from pytest_harness._datasets.gate import GateSpec

    test = metafunc.definition.nodeid
    argname = marker.kwargs.get("argname", ARGNAME)
    takes = isinstance(argname, str) and argname in metafunc.fixturenames
    try:
        source = _source(marker, test)
        _check_names(marker.kwargs, test)
        GateSpec.of(marker.kwargs)  # a wrong gate argument errors now, once
        if not takes:
            raise DatasetError(
                f"{test}: @pytest.mark.dataset gives each test a `{argname}` argument (a Case): "
                f"add `{argname}` to the test's parameters."
            )
        cases = load_cases(source, base=metafunc.definition.path.parent)
    except ConfigError as error:  # a DatasetError, or a wrong gate argument
        text = str(error) if str(error).startswith(f"{test}: ") else f"{test}: {error}"
        unavailable = pytest.mark.harness_unavailable(text)
        # The test's case argument, even under a wrong argname, gets a value: the error shows.
        given = [name for name in (argname, ARGNAME) if name in metafunc.fixturenames][:1]
        error_only = pytest.param(*[None] * len(given), id="dataset-unavailable", marks=unavailable)
        metafunc.parametrize(given, [error_only])
        return
    named = str(source) if isinstance(source, (str, Path)) else "list"
    params = [
        pytest.param(
            case,
            id=case.id,
            marks=pytest.mark.harness_case(index=index, count=len(cases), source=named),
        )
        for index, case in enumerate(cases)
    ]
    metafunc.parametrize(argname, params)


_ARGUMENTS = ("argname", "pass_rate", "confidence", "margin", "inconclusive")


def _source(marker: Any, test: str) -> Any:
    if len(marker.args) != 1:
        raise DatasetError(
            f"{test}: @pytest.mark.dataset takes one dataset, a path or a list, got "
            f"{len(marker.args)} positional arguments; write for example "
            '@pytest.mark.dataset("cases.jsonl") or @pytest.mark.dataset(CASES).'
        )
    return marker.args[0]


def _check_names(kwargs: Mapping[str, Any], test: str) -> None:
    unknown = sorted(set(kwargs) - set(_ARGUMENTS))
    if unknown:
        raise DatasetError(
            f"{test}: @pytest.mark.dataset got unknown argument(s) {', '.join(unknown)}; "
            f"expected some of: {', '.join(_ARGUMENTS)}."
        )
    argname = kwargs.get("argname", ARGNAME)
    if not isinstance(argname, str) or not argname.isidentifier():
        raise DatasetError(
            f"{test}: @pytest.mark.dataset(argname=...) expects the name of the test's "
            f"argument that receives each case, got {argname!r}."
        )
