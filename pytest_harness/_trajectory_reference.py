"""Trajectories against a reference (``assert_matches``): a golden recording's tool calls,
or the calls expected, matched in order or as a set, arguments exact, ignored or judged,
and a failure shown as both trajectories side by side."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Protocol, TypeAlias, TypeVar

from pytest_harness._report.text import clip
from pytest_harness.errors import ConfigError

ArgumentMatcher: TypeAlias = "str | Callable[[Any, Any], bool]"
ArgumentsRule: TypeAlias = "ArgumentMatcher | Mapping[str, ArgumentMatcher]"


class Called(Protocol):
    """What matching reads of a tool call (``_trajectory.Called`` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> Mapping[str, Any] | None: ...
    @property
    def raw_arguments(self) -> str: ...


_WIDTH = 60  # a cell of the side-by-side table, at most (the trajectory table's width)


def _clip(text: str) -> str:
    return clip(text, _WIDTH)


MODES = ("strict", "unordered", "subset", "superset")
_MATCHERS = ("exact", "ignore")
_KEYS = frozenset({"name", "arguments"})  # of an expected call given as a mapping
# The marks of an aligned row that fail each mode: ``~`` other arguments, ``-`` a call of
# the reference missing, ``+`` a call beyond it.
_FAILING = {"strict": "~-+", "unordered": "~-+", "subset": "~+", "superset": "~-"}
_FORMS = (
    "a tool name, a mapping {'name': ..., 'arguments': {...}}, a (name, arguments) tuple, "
    "a tool call of a trajectory"
)
_PROBLEMS = {
    "strict": "expected the tool calls of the reference in strict order",
    "unordered": "expected the tool calls of the reference in any order (unordered)",
    "subset": "expected no tool call beyond the reference (subset)",
    "superset": "expected every tool call of the reference (superset)",
}


@dataclass(frozen=True, slots=True)
class _Expected:
    """One call of a reference: its tool, and its arguments unless they are not checked."""

    name: str
    arguments: Any = None
    checked: bool = False


def mismatch(
    calls: Sequence[Called], reference: Any, mode: str = "strict", *, arguments: Any = "exact"
) -> str | None:
    """How ``calls`` fail to match the reference's (``Assertions.assert_matches``): the
    problem and both trajectories side by side; None when they match.

    Raises:
        ConfigError: a reference, mode or ``arguments`` of the wrong kind.
    """
    if mode not in MODES:
        raise ConfigError(f"assert_matches mode must be one of {', '.join(MODES)}; got {mode!r}")
    expected = _reference(reference)
    check = _argument_rule(arguments)
    actual = list(calls)
    rows = _aligned(expected, actual, check, strict=mode == "strict")
    if any(mark in _FAILING[mode] for _, _, mark in rows):
        return _mismatch(expected, actual, rows, mode)
    return None


def _reference(reference: Any) -> list[_Expected]:
    if not isinstance(reference, Mapping) and hasattr(reference, "tool_calls"):
        reference = reference.tool_calls  # a whole trajectory: a Run, a TrafficTrajectory
    if isinstance(reference, (str, bytes, Mapping)) or not isinstance(reference, Sequence):
        raise ConfigError(
            f"assert_matches expects a reference: a trajectory, or a list of expected calls "
            f"({_FORMS}); got {_described(reference)}"
        )
    return [_entry(entry) for entry in reference]


def _entry(entry: Any) -> _Expected:
    if isinstance(entry, str):
        return _Expected(entry)
    if isinstance(entry, Mapping) and isinstance(entry.get("name"), str) and set(entry) <= _KEYS:
        return _Expected(entry["name"], _parsed(entry.get("arguments")), "arguments" in entry)
    if (
        isinstance(entry, tuple)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and isinstance(entry[1], (Mapping, str))
    ):
        return _Expected(entry[0], _parsed(entry[1]), True)
    if all(hasattr(entry, name) for name in ("name", "arguments", "raw_arguments")):
        return _Expected(str(entry.name), _arguments_of(entry), True)
    raise ConfigError(
        f"each expected call of assert_matches must be {_FORMS}; got {_described(entry)}"
    )


def _described(value: Any) -> str:
    return f"{_clip(repr(value))} ({type(value).__name__})"


def _argument_rule(arguments: Any) -> Callable[[str], ArgumentMatcher]:
    """The matcher of each tool's arguments, the rule checked first."""
    if isinstance(arguments, Mapping):
        for tool, matcher in arguments.items():
            _check_matcher(matcher, f"assert_matches arguments[{tool!r}]")
        rule = dict(arguments)
        return lambda name: rule.get(name, "exact")
    _check_matcher(arguments, "assert_matches arguments")
    return lambda name: arguments


def _check_matcher(matcher: Any, where: str) -> None:
    if callable(matcher) or (isinstance(matcher, str) and matcher in _MATCHERS):
        return
    raise ConfigError(
        f"{where} must be 'exact', 'ignore', a callable (expected_args, actual_args) -> bool, "
        f"or a mapping of tool name to one of those; got {_described(matcher)}"
    )


def _arguments_of(call: Called) -> Any:
    """A call's arguments as parsed, or its raw text when they did not parse."""
    return call.raw_arguments if call.arguments is None else _parsed(call.arguments)


def _parsed(arguments: Any) -> Any:
    """Arguments as JSON reads them (text parsed; tuples as lists), or as they are."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    try:
        return json.loads(json.dumps(arguments))
    except (TypeError, ValueError):  # not JSON: compared as it is
        return arguments


def _mark(expected: _Expected, call: Called, check: Callable[[str], ArgumentMatcher]) -> str | None:
    """``=`` the call matches, ``~`` the same tool with other arguments, else None."""
    if expected.name != call.name:
        return None
    matcher = check(call.name)
    if not expected.checked or matcher == "ignore":
        return "="
    actual = _arguments_of(call)
    if callable(matcher):
        same = bool(matcher(expected.arguments, actual))
    else:
        same = expected.arguments == actual
    return "=" if same else "~"


Row: TypeAlias = "tuple[int | None, int | None, str]"  # reference index, actual index, mark


def _aligned(
    expected: Sequence[_Expected],
    actual: Sequence[Called],
    check: Callable[[str], ArgumentMatcher],
    *,
    strict: bool,
) -> list[Row]:
    """Both sides side by side: in order for ``strict``, else by a maximum matching."""
    if strict:
        return _in_order(expected, actual, check)
    pairs = _matching(expected, actual, lambda e, c: _mark(e, c, check) == "=")
    rows: list[Row] = [(i, j, "=") for i, j in pairs.items()]
    left = [i for i in range(len(expected)) if i not in pairs]
    right = [j for j in range(len(actual)) if j not in pairs.values()]
    near = _matching(
        [expected[i] for i in left], [actual[j] for j in right], lambda e, c: e.name == c.name
    )
    rows += [(left[i], right[j], "~") for i, j in near.items()]
    rows += [(left[i], None, "-") for i in range(len(left)) if i not in near]
    paired = {right[j] for j in near.values()}
    rows += [(None, j, "+") for j in right if j not in paired]
    return sorted(rows, key=_row_order)


def _row_order(row: Row) -> tuple[int, int]:
    reference, actual, _ = row
    return (reference if reference is not None else 1 << 30, actual or 0)


def _in_order(
    expected: Sequence[_Expected],
    actual: Sequence[Called],
    check: Callable[[str], ArgumentMatcher],
) -> list[Row]:
    """The strict alignment: ``difflib`` on the tools' names, then each pair's arguments."""
    names = [call.name for call in actual]
    opcodes = SequenceMatcher(None, [e.name for e in expected], names, autojunk=False)
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in opcodes.get_opcodes():
        if tag == "equal":
            rows += [
                (i, j, _mark(expected[i], actual[j], check) or "~")
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
            continue
        rows += [(i, None, "-") for i in range(i1, i2)]
        rows += [(None, j, "+") for j in range(j1, j2)]
    return rows


E = TypeVar("E")
A = TypeVar("A")


def _matching(
    left: Sequence[E], right: Sequence[A], fits: Callable[[E, A], bool]
) -> dict[int, int]:
    """A maximum matching of ``left`` to ``right`` (index to index) by augmenting paths:
    a greedy one can miss where a predicate accepts several calls."""
    edges = [[j for j, b in enumerate(right) if fits(a, b)] for a in left]
    owner: dict[int, int] = {}  # right index -> left index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(left)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _mismatch(
    expected: Sequence[_Expected],
    actual: Sequence[Called],
    rows: Sequence[Row],
    mode: str,
) -> str:
    """The problem, then both trajectories side by side."""
    from pytest_harness._report.text import tabulate

    matched = sum(mark == "=" for _, _, mark in rows)
    most = max(len(expected), len(actual))
    total = {"subset": len(actual), "superset": len(expected)}.get(mode, most)
    table_rows = [
        [
            n,
            "" if i is None else _shown_expected(expected[i]),
            "" if j is None else _shown_call(actual[j]),
            mark,
        ]
        for n, (i, j, mark) in enumerate(rows, 1)
    ]
    side = tabulate(table_rows, headers=["#", "reference", "actual", ""])
    problem = f"{_PROBLEMS[mode]}; {matched} of {total} matched"
    return f"{problem}.\n\n{side}"


def _shown_expected(expected: _Expected) -> str:
    if not expected.checked:
        return expected.name
    return _clip(f"{expected.name}({_compact(expected.arguments)})")


def _shown_call(call: Called) -> str:
    return _clip(f"{call.name}({_compact(_arguments_of(call))})")


def _compact(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, default=str)
