"""The report page's review of what changed since the previous recording: verdict drift, and
each re-recorded test that regressed or changed, folded, with its answers, tool calls and
usage side by side (old | new, the changed words marked)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from difflib import SequenceMatcher
from itertools import zip_longest
from typing import Any

from markupsafe import Markup

from pytest_harness import _drift as drift_
from pytest_harness._changes import counts, tally
from pytest_harness._report.markup import (
    cells,
    element,
    entry,
    join,
    outcome,
    section,
    table,
    test_outcome,
    vote,
)
from pytest_harness._report.text import clip, money, seconds

Rows = Sequence[Mapping[str, Any]]

# The kinds that get an entry, in the page's order; ``same`` (and a new recording, with
# nothing to compare) is only counted.
SHOWN = ("regressed", "changed")
_SUMMARY_WIDTH = 140  # the reasons in an entry's one-line summary, at most
# What a changed line is diffed by: its words and runs of punctuation, each with the spaces
# before it, so that a word followed by other words or by punctuation is the same word.
_WORDS = re.compile(r"\s*\w+|\s*[^\w\s]+|\s+")
# Two lines share a row when more alike than this (``SequenceMatcher.ratio``), else one is
# removed and the other added: difflib.Differ's cutoff is .75, for code; prose that was
# reworded is less alike and still reads best side by side.
_ALIKE = 0.5
# Comparing each line of a block with each costs (lines x lines) per pair found: past this
# many pairs, a page of long rewritten answers would take minutes to write.
_PAIRS = 200


def changes(records: Rows) -> Markup:
    """The re-recorded tests: a line counting each kind, then one folded entry per test that
    regressed, then per test that changed; a test that stayed the same is only counted."""
    shown = [r for kind in SHOWN for r in records if r.get("kind") == kind and not r.get("new")]
    title = "Changes since the previous recording"
    line = element("p", counts(records), class_="change-counts")
    return section("changes", title, line, *(_change(r) for r in shown))


def regressed(records: Rows) -> bool:
    """Whether any test regressed: the changes then come first on the page."""
    return tally(records)["regressed"] > 0


def _change(record: Mapping[str, Any]) -> Markup:
    """One test's entry: closed, its summary the kind, the test and its reasons in short."""
    kind, reasons = record.get("kind"), [str(r) for r in record.get("reasons") or []]
    summary = element(
        "summary",
        element("span", kind, class_="kind", data_kind=kind),
        " ",
        element("span", record.get("test"), class_="test"),
        " ",
        element("span", clip("; ".join(reasons), _SUMMARY_WIDTH), class_="reasons-short"),
    )
    parts = [
        element("ul", *(element("li", r) for r in reasons), class_="reasons") if reasons else "",
        _recorded(record),
        _outcome_change(record.get("outcome")),
        *(_answer(a) for a in record.get("answers") or []),
        _trajectory(record.get("trajectory")),
        _verdicts(record.get("verdicts") or []),
        _usage(record.get("usage")),
    ]
    return element(
        "details",
        summary,
        element("div", *parts, class_="change-body"),
        class_="entry change",
        data_test=record.get("test"),
        data_kind=kind,
        data_outcome="fail" if kind == "regressed" else "info",
    )


def _recorded(record: Mapping[str, Any]) -> Markup:
    """The cassette, and the tests that recorded into it when more than the one named."""
    said = []
    if record.get("cassette"):
        said.append(f"cassette: {record['cassette']}")
    tests = [str(t) for t in record.get("tests") or []]
    if tests and tests != [record.get("test")]:
        said.append(f"recorded by: {', '.join(tests)}")
    return element("p", " · ".join(said), class_="recorded") if said else Markup("")


def _outcome_change(change: Mapping[str, Any] | None) -> Markup:
    """The test's outcome in each recording: ``outcome: passed -> failed``, or
    ``outcome: passed, as before``."""
    old, new = (change or {}).get("old"), (change or {}).get("new")
    if old is None and new is None:
        return Markup("")
    if old == new:
        return element("p", "outcome: ", test_outcome(new), ", as before", class_="outcome-change")
    return element(
        "p",
        "outcome: ",
        test_outcome(old) or "none",
        element("span", " -> ", class_="arrow"),
        test_outcome(new) or "none",
        class_="outcome-change",
    )


def _answer(answer: Mapping[str, Any]) -> Markup:
    """A model call whose answer differs: its label, the answers side by side, then the
    fields of a structured reply that changed."""
    caller = answer.get("caller")
    heading = element(
        "h4",
        answer.get("label") or "a model call",
        " ",
        element("span", caller, class_="caller") if caller else "",
    )
    old, new = answer.get("old"), answer.get("new")
    parts = [heading]
    if old is not None or new is not None:
        absent = "no such call in the {} recording"
        parts.append(side_by_side(_text(old), _text(new), absent=absent, class_="answer-diff"))
    fields = answer.get("fields") or []
    if fields:
        rows = [
            element(
                "tr",
                cells(f.get("field"), _text(f.get("old")), _text(f.get("new"))),
                class_="field-change",
                data_field=f.get("field"),
            )
            for f in fields
        ]
        parts.append(table(["field", "old", "new"], [element("tbody", *rows)], class_="fields"))
    return element("div", *parts, class_="answer-change", data_caller=caller)


def _trajectory(trajectory: Mapping[str, Any] | None) -> Markup:
    """The tool calls of each recording side by side, one call a line (an added call, a
    removed one, changed arguments marked), then what changed, said in words."""
    if not trajectory or trajectory.get("old") == trajectory.get("new"):
        return Markup("")  # the same calls: nothing to show
    old = [_call(c) for c in trajectory.get("old") or []]
    new = [_call(c) for c in trajectory.get("new") or []]
    notes = [
        f"{label}: {', '.join(str(n) for n in names)}"
        for label, names in (
            ("added", trajectory.get("added")),
            ("removed", trajectory.get("removed")),
        )
        if names
    ]
    if trajectory.get("reordered"):
        notes.append("the calls are in another order")
    arguments = [
        element(
            "li",
            element("b", f"{a.get('tool')}, call {a.get('call')}: "),
            _compact(a.get("old")),
            element("span", " -> ", class_="arrow"),
            _compact(a.get("new")),
            class_="argument-change",
            data_tool=a.get("tool"),
        )
        for a in trajectory.get("arguments") or []
    ]
    absent = "no tool call in the {} recording"
    parts = [
        element("h4", "tool calls"),
        side_by_side("\n".join(old) or None, "\n".join(new) or None, absent=absent, class_="calls"),
        element("p", " · ".join(notes), class_="trajectory-notes") if notes else "",
        element("ul", *arguments, class_="argument-changes") if arguments else "",
    ]
    return element("div", *parts, class_="trajectory-change")


def _call(call: Any) -> str:
    """A tool call on one line: ``name({"q": "refund"})``."""
    if not isinstance(call, Mapping):
        return _compact(call)
    return f"{call.get('name')}({_compact(call.get('arguments') or {})})"


def _verdicts(rows: Rows) -> Markup:
    """The verdicts that flipped, drawn as the drift section draws them."""
    if not rows:
        return Markup("")
    body = [element("tr", _drift_row(r), class_="verdict-flip") for r in rows]
    return join([element("h4", "verdicts"), table(_DRIFT_HEADERS, [element("tbody", *body)])])


# The usage figures compared, each with how it is written.
_FIGURES = (
    ("calls", "calls", str),
    ("tokens", "tokens", str),
    ("input_tokens", "input tokens", str),
    ("output_tokens", "output tokens", str),
    ("cost", "cost", money),
    ("latency_s", "latency", seconds),
)


def _usage(usage: Mapping[str, Any] | None) -> Markup:
    """Calls, tokens, cost and latency in each recording, and the change in percent."""
    old, new = (usage or {}).get("old") or {}, (usage or {}).get("new") or {}
    rows = [
        element(
            "tr",
            cells(label, _figure(old.get(key), shown), _figure(new.get(key), shown)),
            element("td", _growth(old.get(key), new.get(key)), class_="growth"),
            class_="usage-change",
            data_figure=key,
        )
        for key, label, shown in _FIGURES
        if old.get(key) is not None or new.get(key) is not None
    ]
    if not rows:
        return Markup("")
    headers = ["", "old", "new", "change"]
    usage_table = table(headers, [element("tbody", *rows)], class_="usage-changes")
    return join([element("h4", "usage"), usage_table])


def _figure(value: Any, shown: Callable[[Any], str]) -> str:
    if value is None:
        return ""
    return shown(value) if _number(value) else str(value)


def _growth(old: Any, new: Any) -> str:
    """``+40%``: how far ``new`` moved from ``old``; empty when it cannot be said."""
    if not (_number(old) and _number(new)) or old == 0:
        return ""
    change = 100 * (new - old) / old
    return f"{change:+.0f}%" if abs(change) >= 10 or change == 0 else f"{change:+.1f}%"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def side_by_side(old: str | None, new: str | None, *, absent: str, class_: str = "") -> Markup:
    """Two texts in two columns, old | new, their lines aligned (``difflib.SequenceMatcher``):
    a line only one side has is marked added or removed; in a line that changed, the words
    that differ are ``<del>`` (old) and ``<ins>`` (new). A side that is None says ``absent``
    (its ``{}`` is ``old`` or ``new``)."""
    rows = list(_aligned((old or "").splitlines(), (new or "").splitlines()))
    rows = rows or [(Markup(""), Markup(""), "same")]
    left, right, kind = rows[0]
    if old is None:
        left = element("span", absent.format("old"), class_="absent")
    if new is None:
        right = element("span", absent.format("new"), class_="absent")
    rows[0] = (left, right, kind)
    body = [
        element(
            "tr",
            element("td", left, class_="old"),
            element("td", right, class_="new"),
            class_=f"line {kind}",
        )
        for left, right, kind in rows
    ]
    return table(["old", "new"], [element("tbody", *body)], class_=f"diff {class_}".strip())


def _aligned(old: list[str], new: list[str]) -> Iterator[tuple[Markup, Markup, str]]:
    """Rows of (old line, new line, kind): ``same``, ``changed``, ``added`` or ``removed``."""
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for line, again in zip(old[i1:i2], new[j1:j2], strict=True):
                yield join([line]), join([again]), "same"
        else:
            yield from _paired(old[i1:i2], new[j1:j2])


def _paired(old: list[str], new: list[str]) -> Iterator[tuple[Markup, Markup, str]]:
    """The rows of a block of lines that differ: the two most alike lines (as
    ``difflib.Differ`` finds them) share a row, their words diffed, and the lines before and
    after them are paired the same way; a line alike to none is removed or added. A block
    too large to compare each line with each (a text rewritten) is paired in order."""
    if len(old) * len(new) > _PAIRS:
        yield from _in_order(old, new)
        return
    best, pair = _ALIKE, None
    for i, before in enumerate(old):
        for j, after in enumerate(new):
            matcher = SequenceMatcher(None, before, after, autojunk=False)
            # The quick bounds first, as Differ does: most pairs stop there.
            if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
                continue
            if (ratio := matcher.ratio()) > best:
                best, pair = ratio, (i, j)
    if pair is None:
        yield from _in_order(old, [])
        yield from _in_order([], new)
        return
    i, j = pair
    yield from _paired(old[:i], new[:j])
    yield (*_words(old[i], new[j]), "changed")
    yield from _paired(old[i + 1 :], new[j + 1 :])


def _in_order(old: list[str], new: list[str]) -> Iterator[tuple[Markup, Markup, str]]:
    """The rows of a block of lines that differ, the first old line beside the first new."""
    for before, after in zip_longest(old, new):
        if after is None:
            yield element("del", before), Markup(""), "removed"
        elif before is None:
            yield Markup(""), element("ins", after), "added"
        else:
            yield (*_words(before, after), "changed")


def _words(old: str, new: str) -> tuple[Markup, Markup]:
    """Two versions of a line, the words only one has marked: ``<del>`` and ``<ins>``."""
    before, after = _WORDS.findall(old), _WORDS.findall(new)
    left: list[Markup] = []
    right: list[Markup] = []
    matcher = SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        was, now = "".join(before[i1:i2]), "".join(after[j1:j2])
        if tag == "equal":
            left.append(join([was]))
            right.append(join([now]))
            continue
        left.append(_marked("del", was))
        right.append(_marked("ins", now))
    return join(left), join(right)


def _marked(tag: str, words: str) -> Markup:
    """``words`` in ``<tag>``, the spaces before them left out of the mark."""
    bare = words.lstrip()
    spaces = words[: len(words) - len(bare)]
    return join([spaces, element(tag, bare) if bare else ""])


def _text(value: Any) -> str | None:
    """An answer or a field's value as text: strings as they are, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return _compact(value)


def _compact(value: Any) -> str:
    """A value on one line, as JSON (its keys sorted) where it can be."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    except ValueError:
        return repr(value)


_DRIFT_HEADERS = ["test", "tribunal", "verdict", "judges whose votes changed", "cassette"]


def drift(rows: Rows) -> Markup:
    """Verdicts that flipped since the previous recording, and the judges whose votes did."""
    body = []
    for r in rows:
        old, new = r.get("old"), r.get("new")
        hooks = {"test": r.get("test"), "tribunal": r.get("tribunal"), "outcome": new or "gone"}
        hooks.update(old=old or "none", new=new or "none")
        body.append(entry("drift", _drift_row(r), hooks))
    title = "Verdict drift since the previous recording"
    return section("drift", title, table(_DRIFT_HEADERS, body))


def _drift_row(row: Mapping[str, Any]) -> Markup:
    """A flipped verdict's cells: test, tribunal run, old -> new, the judges, the cassette."""
    name = row.get("key") or row.get("tribunal")
    if row.get("sample") is not None:
        name = f"{name} (sample {row['sample']})"
    old, new = row.get("old"), row.get("new")
    change = join(
        [
            outcome(old, old or "new run"),
            element("span", " -> ", class_="arrow"),
            outcome(new, new or "gone"),
        ]
    )
    judges = [
        element(
            "li",
            element("b", j.get("judge")),
            ": ",
            vote(j.get("old")),
            " -> ",
            vote(j.get("new")),
            _score_change(j),
            class_="changed-vote",
            data_judge=j.get("judge"),
        )
        for j in row.get("judges") or []
    ]
    return cells(row.get("test"), name, change, element("ul", *judges), row.get("cassette"))


def _score_change(change: Mapping[str, Any]) -> Markup | str:
    """A judge's score as it moved (``drift.score_change``), or nothing without scores."""
    said = drift_.score_change(change)
    return "" if said is None else element("span", f" (score {said})", class_="score-change")
