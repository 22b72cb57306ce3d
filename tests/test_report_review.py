"""The HTML report's review of re-recorded cassettes (issue 45): the ``changes`` section.

The records are shaped as the comparison of a test's new recording with its previous one
writes them (``kind``: same, changed, regressed; reasons, outcome, answers, trajectory,
verdicts, usage). The page is read with ``html.parser``, then opened in headless Chromium
(``browser``): offline, without a console error, each entry folded until clicked and then
showing old and new side by side; a screenshot is left in ``test-artifacts/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser import ARTIFACTS, Browser, Node, needs_chromium, parse
from test_report_html import ATTACK, BREAKOUT, poisoned

from pytest_harness._report.html import render, write_html
from pytest_harness._report.review import side_by_side

pytestmark = pytest.mark.harness(cassette=False)

REFUND = "tests/test_bot.py::test_refund"
GREETING = "tests/test_bot.py::test_greeting"
TRIAGE = "tests/test_bot.py::test_triage"
LONG = (
    "Refunds are paid back to the card the order was paid with. Once the parcel reaches our "
    "warehouse, the refund takes 5 days; a bank may take two more days to show it. You can "
    "follow it from the order page, under Returns, where each step is dated."
)


def regressed_record(test: str = REFUND) -> dict[str, Any]:
    """A test that regressed: a tool no longer called, tokens over budget, the test failed."""
    return {
        "test": test,
        "tests": [test],
        "cassette": "cassettes/tests/test_bot/test_refund.yaml",
        "kind": "regressed",
        "reasons": [
            "the tool search_web is no longer called",
            "tokens rose 40% (120 -> 168), over the 25% budget",
        ],
        "outcome": {"old": "passed", "new": "failed"},
        "answers": [
            {
                "caller": "application",
                "label": "call 2 · openai.chat · gpt-4o-mini",
                "old": f"{LONG}\nThanks for waiting.",
                "new": LONG.replace("takes 5 days", "takes 3 to 5 days")
                + "\nThanks for waiting.\nAnything else?",
                "fields": [],
            },
            {
                "caller": "harness",
                "label": "call 3 · openai.chat · gpt-4o-mini",
                "old": None,
                "new": '{"priority": "low"}',
                "fields": [{"field": "priority", "old": "high", "new": "low"}],
            },
        ],
        "trajectory": {
            "old": [
                {"name": "search_web", "arguments": {"q": "refund"}},
                {"name": "lookup", "arguments": {"id": 6}},
            ],
            "new": [{"name": "lookup", "arguments": {"id": 7}}],
            "added": [],
            "removed": ["search_web"],
            "reordered": False,
            "arguments": [{"tool": "lookup", "call": 1, "old": {"id": 6}, "new": {"id": 7}}],
        },
        "verdicts": [
            {
                "test": test,
                "tribunal": "Quality",
                "key": "Quality#1",
                "sample": None,
                "old": "pass",
                "new": "fail",
                "drift": "flip",
                "judges": [{"judge": "Strict", "old": True, "new": False}],
                "cassette": "cassettes/tests/test_bot/test_refund.yaml",
            }
        ],
        "usage": {
            "old": {
                "calls": 3,
                "tokens": 120,
                "input_tokens": 100,
                "output_tokens": 20,
                "cost": 0.0012,
                "latency_s": 1.9,
            },
            "new": {
                "calls": 3,
                "tokens": 168,
                "input_tokens": 100,
                "output_tokens": 68,
                "cost": 0.0017,
                "latency_s": 2.4,
            },
        },
    }


def changed_record(test: str) -> dict[str, Any]:
    """A test whose answer changed within its budgets."""
    return {
        "test": test,
        "tests": [test],
        "cassette": f"cassettes/{test.replace('::', '/')}.yaml",
        "kind": "changed",
        "reasons": ["the answer of call 1 changed"],
        "outcome": {"old": "passed", "new": "passed"},
        "answers": [
            {
                "caller": "application",
                "label": "call 1 · openai.chat · gpt-4o-mini",
                "old": "Hello! How can I help?",
                "new": "Hi! How can I help you today?",
                "fields": [],
            }
        ],
        "trajectory": None,
        "verdicts": [],
        "usage": None,
    }


def same_record(test: str) -> dict[str, Any]:
    return {"test": test, "kind": "same", "reasons": []}


def session(*changes: dict[str, Any]) -> dict[str, Any]:
    """A session's report: the changes, a verdict drift row and some usage."""
    drift = dict(regressed_record()["verdicts"][0])
    usage = [{"test": REFUND, "calls": 3, "tokens": 168, "cost": 0.0017}]
    return {"changes": list(changes), "drift": [drift], "usage": usage}


def review() -> dict[str, Any]:
    """Two changed tests, one regressed, two the same, in the order the comparison met them."""
    return session(
        changed_record(GREETING),
        same_record("tests/test_bot.py::test_bye"),
        regressed_record(),
        changed_record(TRIAGE),
        same_record("tests/test_bot.py::test_thanks"),
    )


def entries(page: Node) -> list[Node]:
    return page.find("section", id="changes").find_all("details", "change")


def diff_rows(diff: Node) -> list[tuple[str, str, str]]:
    """A side-by-side table's rows: (kind, old cell's text, new cell's text)."""
    return [
        (
            (row.classes - {"line"}).pop(),
            row.find("td", "old").text,
            row.find("td", "new").text,
        )
        for row in diff.find("tbody").find_all("tr")
    ]


# The page's content, without a browser.


def test_a_regression_puts_the_changes_first_regressed_then_changed_same_only_counted() -> None:
    page = parse(render(review()))
    sections = [s.attrs["id"] for s in page.find_all("section")]
    assert sections == ["summary", "changes", "drift", "usage"]
    assert [a.attrs["href"] for a in page.find("nav").find_all("a")] == [
        "#changes",
        "#drift",
        "#usage",
    ]
    changes = page.find("section", id="changes")
    assert changes.find("p", "change-counts").text == "1 regressed · 2 changed · 2 same"
    shown = [(e.attrs["data-kind"], e.attrs["data-test"]) for e in entries(page)]
    assert shown == [("regressed", REFUND), ("changed", GREETING), ("changed", TRIAGE)]
    assert all("open" not in e.attrs for e in entries(page))  # folded until clicked
    assert [e.attrs["data-outcome"] for e in entries(page)] == ["fail", "info", "info"]
    counts = {li.attrs["data-key"]: li.attrs["data-count"] for li in page.find_all("li", "count")}
    assert counts == {"regressed": "1", "changed": "2", "drift": "1", "usage": "3"}


def test_without_a_regression_the_changes_sit_just_before_the_drift() -> None:
    data = session(changed_record(GREETING), same_record(TRIAGE))
    data["tribunals"] = [{"test": GREETING, "tribunal": "Quality", "outcome": "pass"}]
    page = parse(render(data))
    sections = [s.attrs["id"] for s in page.find_all("section")]
    assert sections == ["summary", "tribunals", "changes", "drift", "usage"]
    assert [li.attrs["data-key"] for li in page.find_all("li", "count")][:2] == [
        "changed",
        "tribunals",
    ]


def test_only_same_records_are_counted_with_no_entry() -> None:
    page = parse(render({"changes": [same_record(GREETING), same_record(TRIAGE)]}))
    changes = page.find("section", id="changes")
    assert changes.find("p", "change-counts").text == "0 regressed · 0 changed · 2 same"
    assert entries(page) == []
    assert page.find_all("li", "count") == []  # nothing regressed or changed


def test_an_entry_summarises_its_reasons_then_shows_everything_that_changed() -> None:
    page = parse(render(review()))
    refund = entries(page)[0]
    summary = refund.find("summary")
    assert summary.find("span", "kind").text == "regressed"
    assert summary.find("span", "test").text == REFUND
    assert summary.find("span", "reasons-short").text == (
        "the tool search_web is no longer called; tokens rose 40% (120 -> 168), over the 25% budget"
    )
    assert [li.text for li in refund.find("ul", "reasons").find_all("li")] == [
        "the tool search_web is no longer called",
        "tokens rose 40% (120 -> 168), over the 25% budget",
    ]
    assert (
        refund.find("p", "recorded").text == "cassette: cassettes/tests/test_bot/test_refund.yaml"
    )
    assert refund.find("p", "outcome-change").text == "outcome: passed -> failed"
    application, harness = refund.find_all("div", "answer-change")
    assert application.find("h4").text == "call 2 · openai.chat · gpt-4o-mini application"
    assert harness.attrs["data-caller"] == "harness"
    fields = harness.find("table", "fields").find_all("tr", "field-change")
    assert [[td.text for td in f.find_all("td")] for f in fields] == [["priority", "high", "low"]]
    greeting = entries(page)[1]
    assert greeting.find("p", "outcome-change").text == "outcome: passed, as before"
    assert greeting.find_all("div", "trajectory-change") == greeting.find_all("h4", "usage") == []
    flip = refund.find("tr", "verdict-flip")
    assert [td.text for td in flip.find_all("td")][1:4] == [
        "Quality#1",
        "pass -> fail",
        "Strict: pass -> fail",
    ]


def test_an_answers_lines_are_aligned_side_by_side_and_the_changed_words_marked() -> None:
    page = parse(render(review()))
    application, harness = entries(page)[0].find_all("div", "answer-change")
    diff = application.find("table", "diff")
    assert [th.text for th in diff.find_all("th")] == ["old", "new"]
    kinds = [kind for kind, _, _ in diff_rows(diff)]
    assert kinds == ["changed", "same", "added"]
    first = diff.find("tbody").find("tr")
    assert [n.text for n in first.find_all("ins")] == ["3 to"]
    assert first.find_all("del") == []
    assert first.find("td", "old").text == LONG  # the whole line, the same words unmarked
    assert diff_rows(diff)[2] == ("added", "", "Anything else?")
    # No call in the old recording: its column says so, the new one is all added.
    assert diff_rows(harness.find("table", "diff")) == [
        ("added", "no such call in the old recording", '{"priority": "low"}')
    ]


def test_the_side_by_side_diff_pairs_changed_lines_and_marks_words_both_ways() -> None:
    old = "Hello!\nYour order 41 ships today from Paris.\nBye."
    new = "Hello!\nYour order 42 ships today from Lyon.\nBye.\nP.S. thanks"
    diff = parse(side_by_side(old, new, absent="none in the {} one"))
    assert diff_rows(diff) == [
        ("same", "Hello!", "Hello!"),
        (
            "changed",
            "Your order 41 ships today from Paris.",
            "Your order 42 ships today from Lyon.",
        ),
        ("same", "Bye.", "Bye."),
        ("added", "", "P.S. thanks"),
    ]
    changed = diff.find_all("tr", "changed")[0]
    assert [n.text for n in changed.find_all("del")] == ["41", "Paris"]
    assert [n.text for n in changed.find_all("ins")] == ["42", "Lyon"]
    moved = parse(side_by_side("I can help?", "I can help you today?", absent="{}"))
    assert [n.text for n in moved.find_all("ins")] == ["you today"]  # "help" stayed
    assert moved.find_all("del") == []
    removed = parse(side_by_side("a\nb", "a", absent="none in the {} one"))
    assert diff_rows(removed) == [("same", "a", "a"), ("removed", "b", "")]
    assert [n.text for n in removed.find_all("del")] == ["b"]
    gone = parse(side_by_side("a", None, absent="none in the {} one"))
    assert diff_rows(gone) == [("removed", "a", "none in the new one")]


def test_a_long_rewritten_text_is_paired_line_by_line_in_order() -> None:
    """Past 200 pairs of lines to compare, a rewritten block's lines are paired in order."""
    old = "\n".join(f"line {n} of the old answer" for n in range(30))
    new = "\n".join(f"row {n} in the new reply" for n in range(35))
    rows = diff_rows(parse(side_by_side(old, new, absent="{}")))
    assert [kind for kind, _, _ in rows] == ["changed"] * 30 + ["added"] * 5
    assert rows[7] == ("changed", "line 7 of the old answer", "row 7 in the new reply")


def test_the_tool_calls_are_side_by_side_with_removed_calls_and_new_arguments_marked() -> None:
    page = parse(render(review()))
    trajectory = entries(page)[0].find("div", "trajectory-change")
    assert diff_rows(trajectory.find("table", "diff")) == [
        ("removed", 'search_web({"q": "refund"})', ""),
        ("changed", 'lookup({"id": 6})', 'lookup({"id": 7})'),
    ]
    changed = trajectory.find("tr", "changed")
    assert [n.text for n in changed.find_all("del")] == ["6"]
    assert [n.text for n in changed.find_all("ins")] == ["7"]
    assert trajectory.find("p", "trajectory-notes").text == "removed: search_web"
    (argument,) = trajectory.find_all("li", "argument-change")
    assert argument.text == 'lookup, call 1: {"id": 6} -> {"id": 7}'


def test_usage_shows_each_figure_old_and_new_and_the_change_in_percent() -> None:
    page = parse(render(review()))
    rows = entries(page)[0].find("table", "usage-changes").find_all("tr", "usage-change")
    assert [[td.text for td in r.find_all("td")] for r in rows] == [
        ["calls", "3", "3", "+0%"],
        ["tokens", "120", "168", "+40%"],
        ["input tokens", "100", "100", "+0%"],
        ["output tokens", "20", "68", "+240%"],
        ["cost", "$0.001200", "$0.001700", "+42%"],
        ["latency", "1.90s", "2.40s", "+26%"],
    ]


def test_every_value_of_a_change_is_escaped() -> None:
    record = poisoned(regressed_record())
    record["kind"] = "regressed"  # the kind picks the entries; every other value is poisoned
    record["usage"]["new"]["calls"] = ATTACK  # not a number: shown as text, no change said
    markup = render({"changes": [record, poisoned(changed_record(GREETING)) | {"kind": "changed"}]})
    assert "<script>window" not in markup
    assert "<img" not in markup
    page = parse(markup)
    (script,) = page.find_all("script")  # the page's own, nothing else
    assert "failures-only" in script.text
    assert [a for n in page.find_all() for a in n.attrs if a.startswith("on")] == []
    assert page.find("body").text.count(ATTACK) > 25
    (refund, greeting) = entries(page)
    assert refund.attrs["data-test"] == REFUND + BREAKOUT + ATTACK
    assert greeting.find("td", "old").text == "Hello! How can I help?" + BREAKOUT + ATTACK


@pytest.mark.parametrize("absent", ["missing", "null"])
def test_records_without_their_optional_keys_still_render(absent: str) -> None:
    optional = ["tests", "cassette", "outcome", "answers", "trajectory", "verdicts", "usage"]
    bare = {"test": REFUND, "kind": "regressed", "reasons": ["the answer changed"]}
    if absent == "null":
        bare |= dict.fromkeys(optional)
    partial = {
        "test": TRIAGE,
        "kind": "changed",
        "reasons": [],
        "answers": [{"old": "a", "new": None}, {"fields": [{"field": "x"}]}],
        "trajectory": {"old": [{"name": "lookup"}], "new": None},
        "verdicts": [{"test": TRIAGE}],
        "usage": {"old": {"tokens": 0}, "new": {"tokens": 5}},
        "outcome": {"new": "failed"},
    }
    nothing = {"test": GREETING, "kind": "changed", "reasons": [], "outcome": {"old": None}}
    page = parse(render({"changes": [bare, partial, nothing]}))
    refund, triage, greeting = entries(page)
    assert greeting.find("div", "change-body").children == []
    assert refund.find("div", "change-body").text == "the answer changed"
    assert triage.find("summary").text == f"changed {TRIAGE} "
    one, two = triage.find_all("div", "answer-change")
    assert one.find("h4").text == "a model call "
    assert diff_rows(one.find("table", "diff")) == [
        ("removed", "a", "no such call in the new recording")
    ]
    assert [td.text for td in two.find("tr", "field-change").find_all("td")] == ["x", "", ""]
    calls = triage.find("div", "trajectory-change").find("table", "diff")
    assert diff_rows(calls) == [("removed", "lookup({})", "no tool call in the new recording")]
    assert triage.find("p", "outcome-change").text == "outcome: none -> failed"
    assert [td.text for td in triage.find("tr", "usage-change").find_all("td")] == [
        "tokens",
        "0",
        "5",
        "",
    ]


# The page in a real headless Chromium (skipped, saying how to get it, where it is missing).


@needs_chromium
def test_chromium_shows_the_review_folded_then_old_and_new_side_by_side(tmp_path: Path) -> None:
    path = tmp_path / "review.html"
    write_html(path, review())
    with Browser(tmp_path) as browser:
        browser.open(path)
        before = browser.evaluate(LAID_OUT)
        browser.evaluate(OPEN_FIRST)
        after = browser.evaluate(LAID_OUT)
        dom = parse(browser.dom())
        shot = browser.screenshot(ARTIFACTS / "review.png")
    assert browser.errors == []
    assert browser.external_requests == []
    assert dom.find("span", id="shown").text == "4 of 4 shown"  # 3 changes, 1 drift row
    assert before == {"opened": [], "diff": None}
    assert after["opened"] == [REFUND]
    old, new = after["diff"]["old"], after["diff"]["new"]
    assert old["top"] == new["top"]  # one row: the columns side by side
    assert old["right"] <= new["left"]
    assert old["width"] == pytest.approx(new["width"], abs=2)
    assert old["height"] > 2 * old["line"]  # the long line wraps, in its column
    assert after["diff"]["page"] <= after["diff"]["window"]  # nothing runs off to the right
    assert after["colours"]["ins"] != after["colours"]["del"]
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")  # an artefact to look at


@needs_chromium
def test_the_filter_and_the_failures_toggle_work_on_the_changes(tmp_path: Path) -> None:
    path = tmp_path / "review.html"
    write_html(path, review())
    with Browser(tmp_path) as browser:
        browser.open(path)
        failing = browser.evaluate(TOGGLE + SHOWN)
        by_word = browser.evaluate(TOGGLE + TYPE.format(words="help  TODAY") + SHOWN)
        folded_word = browser.evaluate(TYPE.format(words="search_web") + SHOWN)
    assert browser.errors == []
    assert failing == [["change", REFUND], ["drift", REFUND]]  # a regression is a failure
    assert by_word == [["change", GREETING], ["change", TRIAGE]]
    assert folded_word == [["change", REFUND]]  # words inside a closed entry count too


# Script run in the page: where the first entry's first answer's columns are, and which
# entries are open; opening the first entry; the filter box, the failures toggle, the
# entries still rendered as [kind, test].
LAID_OUT = """(() => {
  const opened = Array.from(document.querySelectorAll("details.change[open]"))
    .map((entry) => entry.getAttribute("data-test"));
  const row = document.querySelector("details.change .answer-diff tbody tr");
  if (!row || !row.checkVisibility()) return {opened: opened, diff: null};
  const box = (cell) => {
    const r = cell.getBoundingClientRect();
    return {top: r.top, left: r.left, right: r.right, width: r.width, height: r.height,
            line: parseFloat(getComputedStyle(cell).lineHeight)};
  };
  const colour = (tag) => getComputedStyle(row.querySelector(tag) ||
    document.querySelector("details.change " + tag)).backgroundColor;
  return {opened: opened,
          diff: {old: box(row.querySelector("td.old")), new: box(row.querySelector("td.new")),
                 page: document.documentElement.scrollWidth, window: window.innerWidth},
          colours: {ins: colour("ins"), del: colour("del")}};
})();
"""
OPEN_FIRST = 'document.querySelector("details.change > summary").click();'
TYPE = """(() => {{ const box = document.getElementById("filter");
box.value = "{words}"; box.dispatchEvent(new Event("input")); }})();
"""
TOGGLE = "document.getElementById('failures-only').click();\n"
SHOWN = """Array.from(document.querySelectorAll(".entry"))
  .filter((entry) => entry.getClientRects().length > 0)
  .map((entry) => [entry.firstElementChild.className || entry.classList[1],
                   entry.getAttribute("data-test")]);
"""
