"""The HTML report: one self-contained page, escaped, checked in a real headless Chromium.

The page is rendered from records shaped as the session report writes them (a session's
tribunal runs, sampled tests, a calibration, verdict drift, an agent run, a conversation,
usage), and once end to end from a real pytest run with ``--harness-report=PATH.html``
whose judges answer from a loopback server. Chromium (Debian's ``chromium``, driven over
the DevTools protocol by ``browser``) opens the file offline and reports every console
error, uncaught exception and request; the DOM it ends with is parsed with ``html.parser``.
Where Chromium is missing, the browser tests are skipped and say how to get it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser import ARTIFACTS, Browser, Node, needs_chromium, parse

from pytest_harness._report import tribunals as report
from pytest_harness._report.html import render, write_html
from pytest_harness.testing import LoopbackServer, Reply

pytestmark = pytest.mark.harness(cassette=False)

ATTACK = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
BREAKOUT = '" onmouseover="window.pwned = 3'
STRICT_REASON = f"invents a refund window, see https://example.com/refunds {ATTACK}\nsecond line"
# The page's sections in order, after the summary.
SECTIONS = [
    "tribunals",
    "agreement",
    "samples",
    "calibrations",
    "drift",
    "runs",
    "app_calls",
    "transcripts",
    "usage",
]
POLICY = "tests/test_support.py::test_refund_policy"
REPLY = "tests/test_support.py::test_refund_reply"
KNOWN_GAP = "tests/test_support.py::test_known_gap"  # xfailed: its tribunal fails, as expected
SAMPLED = "tests/test_support.py::test_greeting_sampled"
UNRECORDED = "tests/test_support.py::test_greeting_unrecorded"  # no sample ran
AGENT = "tests/test_agent.py::test_order_lookup"
APP = "tests/test_app.py::test_support_bot"
MISS = "CassetteMiss: no recorded interaction matches POST /v1/chat/completions"


def vote(agent: str, passed: bool, reason: str) -> dict[str, Any]:
    return {
        "agent": agent,
        "model": "openai/gpt-4o-mini",
        "vote": passed,
        "passed": passed,
        "reason": reason,
        "time": 0.42,
        "tokens": 120,
        "cost": 0.00012,
    }


def tribunal_run(test: str, votes: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    passed = sum(bool(v["passed"]) for v in votes)
    return {
        "test": test,
        "tribunal": "Quality",
        "outcome": "pass" if passed * 2 > len(votes) else "fail",
        "value": passed * 2 > len(votes),
        "rule": "majority: more than half of the votes must pass",
        "judges": len(votes),
        "votes": votes,
        "votes_passed": passed,
        "votes_cast": len(votes),
        "errors": [],
        "agreement": None,
        "tokens": 120 * len(votes),
        "cost": 0.00036,
        "time": 1.25,
        "sample": None,
        **more,
    }


def session() -> dict[str, Any]:
    """A session's records: two tribunal runs (one failing, its reason an attack), the rest."""
    tribunals = [
        tribunal_run(
            REPLY,
            [
                vote("Lenient", True, "polite and helpful"),
                vote("Strict", True, "answers the question"),
                vote("Lenient#2", True, "friendly"),
            ],
        ),
        tribunal_run(
            POLICY,
            [
                vote("Lenient", True, "fine"),
                vote("Strict", False, STRICT_REASON),
            ],
            errors=[{"agent": "Broken", "error": "JudgeOutputError: no JSON object in it"}],
            test_outcome="failed",
        ),
        tribunal_run(
            KNOWN_GAP,
            [vote("Lenient", False, "no date given"), vote("Strict", False, "no date")],
            test_outcome="xfailed",
        ),
    ]
    tribunals[0]["test_outcome"] = "passed"
    return {
        "tribunals": tribunals,
        "agreement": report.agreement(tribunals),
        "samples": [
            {
                "test": SAMPLED,
                "samples": 10,
                "ran": 10,
                "passes": 7,
                "pass_rate": 0.7,
                "required": 0.8,
                "interval": [0.3968, 0.8922],
                "confidence": 0.95,
                "outcome": "fail",
                "pass_k": {"1": 0.7, "2": 0.466667},
                "failures": [
                    {"sample": 3, "reason": "AssertionError: Quality verdict: FAIL"},
                    {"sample": 5, "reason": "AssertionError: the reply is empty"},
                    {"sample": 9, "reason": "AssertionError: Quality verdict: FAIL"},
                ],
                "stopped": None,
            },
            {
                "test": UNRECORDED,
                "samples": 10,
                "ran": 0,
                "passes": 0,
                "pass_rate": None,
                "required": 0.8,
                "interval": None,
                "outcome": "fail",
                "failures": [],
                "stopped": {"sample": 1, "reason": MISS},
            },
        ],
        "calibrations": [calibration()],
        "drift": [
            {
                "test": POLICY,
                "tribunal": "Quality",
                "key": "Quality#1",
                "sample": None,
                "old": "pass",
                "new": "fail",
                "judges": [
                    {"judge": "Strict", "old": True, "new": False},
                    {
                        "judge": "Coherence",
                        "old": True,
                        "new": True,
                        "old_score": 5.0,
                        "new_score": 3.0,
                        "old_threshold": 3.0,
                        "new_threshold": 3.0,
                        "moved": "toward",
                    },
                ],
                "cassette": "tests/cassettes/test_support/test_refund_policy.json",
            }
        ],
        "runs": [
            {
                "test": AGENT,
                "test_outcome": "passed",
                "question": "Where is order 42? Refund it if it is late.",
                "answer": "Order 42 has shipped.\nA manager must approve a refund.",
                "tools": ["lookup_order", "refund"],
                "tool_errors": 1,
                "requests": 3,
                "stop_reason": "final_answer",
                "tokens": 900,
                "cost": 0.0011,
                "time": 0.01,
                "recorded_time": 2.31,
                "events": {"tool_call": 2, "model_request": 3},
                "steps": [
                    {"kind": "message", "request": 1, "text": "Let me look the order up."},
                    {
                        "kind": "tool",
                        "request": 1,
                        "tool": "lookup_order",
                        "arguments": '{"order": 42}',
                        "result": '{"status": "shipped"}',
                        "error": None,
                    },
                    {
                        "request": 2,
                        "tool": "refund",
                        "arguments": '{"order": 42}',
                        "result": None,
                        "error": "ToolError: refunds need a manager",
                    },
                ],
            }
        ],
        "app_calls": [app_calls()],
        "transcripts": [
            {
                "test": "tests/test_chat.py::test_impatient_customer",
                "persona": "An impatient customer whose parcel is late",
                "goal": "get a delivery date",
                "turns": [
                    {"role": "user", "content": "Where is my parcel?"},
                    {"role": "assistant", "content": "It arrives on Tuesday."},
                ],
                "stopped_by": "goal",
                "reason": "the customer got a date",
            }
        ],
        "usage": [
            {"test": REPLY, "calls": 3, "tokens": 360, "cost": 0.00036},
            {"test": POLICY, "calls": 3, "tokens": 240, "cost": None},
        ],
        "tests": [
            {"test": REPLY, "outcome": "passed"},
            {"test": POLICY, "outcome": "failed"},
            {"test": KNOWN_GAP, "outcome": "xfailed"},
            {"test": AGENT, "outcome": "passed"},
        ],
    }


def app_calls() -> dict[str, Any]:
    """A test whose application made 23 model calls, the first 2 kept (replayed, with the
    latencies the cassette recorded)."""
    call = {
        "endpoint": "http://127.0.0.1:8080/v1/chat/completions",
        "api": "openai.chat",
        "model": "gpt-4o-mini",
        "replayed": True,
        "streamed": False,
        "reasoning": None,
        "finish_reason": "stop",
        "prompt_tokens": 20,
        "completion_tokens": 5,
        "tokens": 25,
        "latency_recorded": True,
        "problem": None,
    }
    first = {
        **call,
        "call": 1,
        "request": [
            {"role": "system", "content": "You are a support bot."},
            {"role": "user", "content": "Where is my order?"},
        ],
        "response": None,
        "tool_calls": [{"name": "lookup_order", "arguments": '{"order": 42}'}],
        "provider_tool_calls": [],
        "latency_s": 1.5,
    }
    second = {
        **call,
        "call": 2,
        "request": [
            {"role": "user", "content": "Where is my order?"},
            {"role": "tool", "content": '{"status": "shipped"}'},
        ],
        "response": "It shipped yesterday.",
        "tool_calls": [],
        "provider_tool_calls": [{"name": "web_search_call", "arguments": '{"query": "ship"}'}],
        "latency_s": 0.81,
    }
    return {"test": APP, "test_outcome": "passed", "total": 23, "calls": [first, second]}


def calibration() -> dict[str, Any]:
    def score(accuracy: float, kappa: float | None, tp: int, fn: int, fp: int, tn: int) -> Any:
        confusion = {"pass": {"pass": tp, "fail": fn}, "fail": {"pass": fp, "fail": tn}}
        return {"accuracy": accuracy, "kappa": kappa, "confusion": confusion, "scored": 8}

    return {
        "test": "tests/test_judges.py::test_judges_agree_with_people",
        "tribunal": "Pairwise",
        "source": "labels/pairs.jsonl",
        "items": 8,
        "panel": {**score(0.875, 0.75, 4, 0, 1, 3), "no_verdict": []},
        "judges": [
            {"judge": "Lenient", **score(0.625, 0.25, 4, 0, 3, 1), "no_verdict": []},
            {"judge": "Strict", **score(0.875, None, 3, 1, 0, 4), "no_verdict": ["item 7"]},
        ],
        "agreement": {"percent_agreement": 75.0, "krippendorff_alpha": 0.467},
        "probes": [
            {
                "judge": "Lenient",
                "probe": "position",
                "flips": 3,
                "applicable": 8,
                "rate": 0.375,
                "flagged": True,
                "items": ["item 2", "item 4", "item 6"],
            },
            {
                "judge": "Strict",
                "probe": "position",
                "flips": 0,
                "applicable": 8,
                "rate": 0.0,
                "flagged": False,
                "items": [],
            },
        ],
        "flagged": ["Lenient"],
        "max_flip_rate": 0.1,
        "outcome": "fail",
        "failures": ["Lenient is flagged by the position probe: items item 2, item 4, item 6"],
    }


def cells(row: Node) -> list[str]:
    return [td.text for td in row.find_all("td")]


def rows(page: Node, kind: str) -> dict[str, list[str]]:
    """``{data-test: cell texts}`` of the page's ``<tr class=kind>`` rows."""
    return {row.attrs["data-test"]: cells(row) for row in page.find_all("tr", kind)}


# The page's content, without a browser.


def test_the_page_shows_every_section_and_the_sessions_counts() -> None:
    page = parse(render(session()))
    sections = [s.attrs["id"] for s in page.find_all("section")]
    assert sections == ["summary", *SECTIONS]
    assert [a.attrs["href"] for a in page.find("nav").find_all("a")] == [f"#{s}" for s in SECTIONS]
    counts = {li.attrs["data-key"]: li.attrs["data-count"] for li in page.find_all("li", "count")}
    assert counts == {
        "tests": "4",
        "tribunals": "3",
        "samples": "2",
        "calibrations": "1",
        "drift": "1",
        "runs": "1",
        "app_calls": "23",  # all of them, the 2 kept and the rest
        "transcripts": "1",
        "usage": "6",  # model calls
    }
    tests = page.find("li", "count", data_key="tests")
    assert tests.find("span", "split").text == "1 failed, 2 passed, 1 xfailed"
    tribunals = page.find("li", "count", data_key="tribunals")
    assert tribunals.find("span", "split").text == "2 fail, 1 pass"
    calibrations = page.find("li", "count", data_key="calibrations")
    assert calibrations.find("span", "split").text == "flagged: Lenient"


def test_a_tribunal_run_shows_its_verdict_each_judges_vote_and_reason_and_its_errors() -> None:
    page = parse(render(session()))
    spent = ["$0.000360", "1.25s"]  # cost and time, the same in each run
    assert rows(page, "tribunal-run") == {
        REPLY: [REPLY, "passed", "Quality", "pass", "3/3", "360", *spent],
        POLICY: [POLICY, "failed", "Quality", "fail", "1/2", "240", *spent],
        KNOWN_GAP: [KNOWN_GAP, "xfailed", "Quality", "fail (xfailed)", "0/2", "240", *spent],
    }
    run = page.find("tbody", "entry", data_test=POLICY)
    assert run.attrs["data-outcome"] == "fail"
    assert run.attrs["data-test-outcome"] == "failed"
    test, verdict = run.find("tr", "tribunal-run").find_all("span", "outcome")
    assert test.classes == {"outcome", "test-outcome", "fail"}  # the test failed
    assert verdict.classes == {"outcome", "fail"}  # coloured
    judges = run.find_all("tr", "judge")
    assert [cells(j)[:3] for j in judges] == [
        ["Lenient", "openai/gpt-4o-mini", "pass"],
        ["Strict", "openai/gpt-4o-mini", "fail"],
    ]
    assert cells(judges[0])[3:] == ["fine", "0.42s", "120", "$0.000120"]
    # The whole reason, as text: folded (it has two lines) but all of it in the page.
    assert judges[1].find("details").find(cls="full").text == STRICT_REASON
    assert run.find("li", "judge-error").text == "Broken: JudgeOutputError: no JSON object in it"
    assert run.find("p", "rule").text.startswith("rule: majority: more than half")


def test_the_agreement_section_shows_krippendorffs_alpha_over_the_runs_with_two_votes() -> None:
    page = parse(render(session()))
    agreement = page.find("section", id="agreement")
    headers = [th.text for th in agreement.find_all("th")]
    assert headers == ["tribunal", "runs (2+ votes)", "agreement", "Krippendorff's alpha"]
    # Quality's runs: [T, T, T], [T, F] (a third judge errored) and [F, F]. Only [T, F] adds
    # off the diagonal: o_TF = o_FT = 1 / (2 - 1). n_T = 4, n_F = 3, n = 7.
    # alpha = 1 - 6 * 2 / (2 * 4 * 3) = 0.5; observed agreement 1 - 2 / 7 = 71.4%.
    assert cells(agreement.find("tr", "agreement", data_tribunal="Quality")) == [
        "Quality",
        "3",
        "71.4%",
        "0.500",
    ]


def test_samples_calibration_drift_runs_conversations_and_usage_show_their_rows() -> None:
    page = parse(render(session()))
    sampled, unrecorded = page.find_all("tr", "sampled-test")
    assert cells(sampled) == [
        SAMPLED,
        "7/10",
        "70.0%",
        "39.7% - 89.2% (95.0%)",
        "80.0%",
        "k=1 70.0% · k=2 46.7%",
        "fail",
    ]
    stop = "none: sample 1 stopped it: CassetteMiss: no recorded intera…"  # clipped, in full below
    assert cells(unrecorded)[1:4] == ["0/0", "n/a", stop]
    stopped = page.find("tbody", "entry", data_test=UNRECORDED).find("li", "stopped-sample")
    assert stopped.text == f"sample 1 stopped the sampling: {MISS}"
    failed = page.find_all("li", "failed-sample")
    assert [li.text for li in failed][1] == "sample 5: AssertionError: the reply is empty"

    calibrated = page.find("article", "calibration")
    assert calibrated.attrs["data-outcome"] == "fail"
    scores = {tr.attrs["data-judge"]: cells(tr)[1:] for tr in calibrated.find_all("tr")[1:4]}
    assert scores == {
        "Lenient": ["8", "0", "62.5%", "0.250", "4", "0", "3", "1"],
        "Strict": ["8", "1 (item 7)", "87.5%", "n/a", "3", "1", "0", "4"],
        "panel": ["8", "0", "87.5%", "0.750", "4", "0", "1", "3"],
    }
    probes = calibrated.find_all("tr", "probe")
    assert [(p.attrs["data-judge"], "flagged" in p.classes) for p in probes] == [
        ("Lenient", True),
        ("Strict", False),
    ]
    assert cells(probes[0])[2:] == ["3/8", "37.5%", "flagged", "item 2, item 4, item 6"]
    assert calibrated.find("p", "flagged-judges").text == "flagged by the bias probes: Lenient"
    agreed = calibrated.find("p", "calibration-agreement").text
    assert agreed == "agreement among the judges: 75.0%, Krippendorff's alpha 0.467"

    drift = page.find("tr", "drift")
    assert (drift.attrs["data-old"], drift.attrs["data-new"]) == ("pass", "fail")
    assert cells(drift)[1:3] == ["Quality#1", "pass -> fail"]
    changed = [li.text for li in drift.find_all("li", "changed-vote")]
    assert changed == [
        "Strict: pass -> fail",
        "Coherence: pass -> pass (score 5 -> 3, moved toward the threshold 3)",
    ]

    assert cells(page.find("tr", "agent-run"))[1:6] == [
        "passed",
        "lookup_order, refund",
        "1",
        "3",
        "final_answer",
    ]
    steps = [cells(tr) for tr in page.find_all("tr", "step")]
    assert steps == [
        ["1", "model", "Let me look the order up.", ""],
        ["1", "lookup_order", '{"order": 42}', '{"status": "shipped"}'],
        ["2", "refund", '{"order": 42}', "ToolError: refunds need a manager"],
    ]
    turns = [li.text for li in page.find_all("li", "turn")]
    assert turns == ["user: Where is my parcel?", "assistant: It arrives on Tuesday."]
    assert cells(page.find("tr", "usage-total")) == ["total", "6", "600", "$0.000360"]


def test_an_agent_run_shows_its_question_steps_and_answer_folded_and_its_recorded_time() -> None:
    page = parse(render(session()))
    run = page.find("tbody", "entry", data_test=AGENT)
    assert cells(run.find("tr", "agent-run"))[-1] == "recorded 2.31s (replay 0.01s)"
    transcript = run.find("details", "run-transcript")
    assert "open" not in transcript.attrs  # folded until clicked
    question = "Where is order 42? Refund it if it is late."
    assert transcript.find("summary").text == f"question: {question}"
    assert transcript.find("div", "question").find(cls="full").text == question
    answer = transcript.find("div", "answer").find(cls="full").text
    assert answer == "Order 42 has shipped.\nA manager must approve a refund."  # lines kept
    kinds = [tr.attrs.get("data-tool", "message") for tr in transcript.find_all("tr", "step")]
    assert kinds == ["message", "lookup_order", "refund"]  # in the order they happened


def test_an_application_call_shows_the_messages_it_sent_and_the_response_folded() -> None:
    page = parse(render(session()))
    entry = page.find("tbody", "entry", data_test=APP)
    row = [APP, "passed", "23 (first 2 shown)", "gpt-4o-mini", "50", "recorded 2.31s"]
    assert cells(entry.find("tr", "app-calls")) == row
    first, second = entry.find_all("details", "app-call")
    assert "open" not in first.attrs
    assert "open" not in second.attrs
    assert first.find("summary").text == (
        "1. http://127.0.0.1:8080/v1/chat/completions · gpt-4o-mini · 25 tokens · "
        "recorded 1.50s · replayed"
    )
    sent = [
        (li.attrs["data-role"], li.find(cls="full").text) for li in first.find_all("li", "message")
    ]
    assert sent[:2] == [("system", "You are a support bot."), ("user", "Where is my order?")]
    assert first.find("li", "tool-call").text == 'lookup_order({"order": 42})'
    assert first.find_all("ul", "provider-tool-calls") == []
    (ran,) = second.find("ul", "provider-tool-calls").find_all("li")
    assert ran.text == 'ran by the provider: web_search_call({"query": "ship"})'
    assert second.find_all("li", "tool-call") == []  # the provider's search is not the app's
    assert first.find_all("div", "response") == []  # it only asked for a tool
    assert second.find("div", "response").find(cls="full").text == "It shipped yesterday."
    assert second.find("li", "message", data_role="tool").text == 'tool: {"status": "shipped"}'


def test_every_value_from_the_records_is_escaped() -> None:
    data = poisoned(session())
    data["runs"][0]["events"][ATTACK] = 1
    markup = render(data)
    assert "<script>window" not in markup
    assert "<img" not in markup
    page = parse(markup)
    (script,) = page.find_all("script")  # the page's own, nothing else
    assert "failures-only" in script.text
    handlers = [a for n in page.find_all() for a in n.attrs if a.startswith("on")]
    assert handlers == []
    texts = page.find("body").text
    assert texts.count(ATTACK) > 40  # shown, as text, wherever the records' values are
    poisoned_run = page.find("tr", "tribunal-run", data_test=POLICY + BREAKOUT + ATTACK)
    assert poisoned_run.attrs["data-outcome"] == "fail" + BREAKOUT + ATTACK


def test_the_page_names_no_url_and_forbids_loading_anything() -> None:
    markup = render(session())
    page = parse(markup)
    links = [n.attrs["href"] for n in page.find_all() if "href" in n.attrs]
    assert links
    assert all(link.startswith("#") for link in links)
    assert [n.tag for n in page.find_all() if "src" in n.attrs] == []
    style = page.find("style").text
    assert "url(" not in style
    assert "@import" not in style
    (policy,) = [m.attrs["content"] for m in page.find_all("meta") if "http-equiv" in m.attrs]
    assert policy.startswith("default-src 'none';")
    # The reason's URL is text: shown, never a link.
    assert "see https://example.com/refunds" in page.find("body").text


def test_a_section_shows_only_when_it_has_rows() -> None:
    data = {"usage": session()["usage"], "tribunals": [], "drift": None}
    page = parse(render(data))
    assert [s.attrs["id"] for s in page.find_all("section")] == ["summary", "usage"]
    assert [li.attrs["data-key"] for li in page.find_all("li", "count")] == ["usage"]


@pytest.mark.parametrize("data", [{}, {key: [] for key in SECTIONS}], ids=["no keys", "empty"])
def test_a_session_with_nothing_recorded_says_so(data: dict[str, Any]) -> None:
    page = parse(render(data))
    assert page.find("section", id="empty").text.startswith("Nothing recorded")
    assert page.find_all("table") == page.find_all("script") == page.find_all("input") == []


def test_records_without_their_optional_keys_still_render() -> None:
    data = {
        "tribunals": [{"test": "t::a", "tribunal": "Quality", "outcome": "error"}],
        "samples": [{"test": "t::b", "passes": 1, "samples": 2, "outcome": "fail"}],
        "calibrations": [{"test": "t::c", "tribunal": "Quality"}],
        "drift": [{"test": "t::d", "tribunal": "Quality", "old": None, "new": "pass"}],
        "runs": [{"test": "t::e"}],
        "transcripts": [{"test": "t::f", "turns": [{"role": "user", "content": {"x": 1}}]}],
        "usage": [{"test": "t::g"}],
        "app_calls": [{"test": "t::h"}],
    }
    page = parse(render(data))
    assert cells(page.find("tr", "tribunal-run")) == [
        "t::a",
        "",
        "Quality",
        "error",
        "0/0",
        "0",
        "",
        "",
    ]
    assert cells(page.find("tr", "app-calls")) == ["t::h", "", "0", "", "0", ""]
    assert cells(page.find("tr", "agent-run"))[1:] == ["", "-", "0", "0", "", "-", "0", "", ""]
    assert cells(page.find("tr", "sampled-test"))[1:4] == ["1/2", "n/a", "n/a - n/a"]
    assert cells(page.find("tr", "panel-score")) == [
        "panel",
        "0",
        "0",
        "n/a",
        "n/a",
        "0",
        "0",
        "0",
        "0",
    ]
    assert cells(page.find("tr", "drift"))[2] == "new run -> pass"
    assert page.find("li", "turn").find(cls="full").text == '{\n  "x": 1\n}'


def test_write_html_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "reports" / "session.html"
    write_html(path, {})
    assert "Nothing recorded" in path.read_text(encoding="utf-8")
    write_html(path, session())
    assert path.read_text(encoding="utf-8") == render(session())
    assert [p.name for p in path.parent.iterdir()] == ["session.html"]  # no temporary left


def poisoned(value: Any) -> Any:
    """``value`` with an attribute breakout and a script appended to every string in it."""
    if isinstance(value, str):
        return value + BREAKOUT + ATTACK
    if isinstance(value, list):
        return [poisoned(v) for v in value]
    if isinstance(value, dict):
        return {k: poisoned(v) for k, v in value.items()}
    return value


# The page in a real headless Chromium (skipped, saying how to get it, where it is missing).


@needs_chromium
def test_the_browser_catches_script_errors_console_errors_and_requests(tmp_path: Path) -> None:
    """The detector the other browser tests trust: a page that errs in every way is caught."""
    page = tmp_path / "broken.html"
    page.write_text(BROKEN_PAGE, encoding="utf-8")
    with Browser(tmp_path) as browser:
        browser.open(page)
        browser.evaluate("document.getElementById('b').click()")  # its handler throws
        dom = parse(browser.dom())
    assert dom.find("p", id="p").text == "changed by the script"  # the DOM after scripts ran
    errors = "\n".join(browser.errors)
    assert "Uncaught ReferenceError: notDefined is not defined" in errors
    assert "something broke" in errors  # console.error
    assert "Uncaught Error: clicked" in errors  # thrown after the load, by a handler
    assert "all is well" not in errors  # console.log is not an error
    assert browser.external_requests == ["http://harness.invalid/pixel.png"]


@needs_chromium
def test_chromium_loads_the_report_offline_without_a_console_error(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    write_html(path, session())
    with Browser(tmp_path) as browser:
        browser.open(path)
        dom = parse(browser.dom())
        pwned = browser.evaluate("typeof window.pwned")
        shot = browser.screenshot(ARTIFACTS / "report.png")
    assert browser.errors == []
    assert browser.external_requests == []
    assert pwned == "undefined"  # the reason's script did not run: it is text
    assert dom.find("span", id="shown").text == "10 of 10 shown"  # the page's own script ran
    outcomes = [r.attrs["data-outcome"] for r in dom.find_all("tr", "tribunal-run")]
    assert outcomes == ["pass", "fail", "xfailed"]
    strict = dom.find("tbody", data_test=POLICY).find("tr", "judge", data_judge="Strict")
    assert strict.find(cls="full").text == STRICT_REASON
    assert [p.attrs["data-judge"] for p in dom.find_all("tr", "flagged")] == ["Lenient"]
    assert len(dom.find_all("script")) == 1
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")  # an artefact to look at


@needs_chromium
def test_the_filter_and_the_failures_toggle_hide_whole_entries(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    write_html(path, session())
    with Browser(tmp_path) as browser:
        browser.open(path)
        by_word = browser.evaluate(TYPE.format(words="refund_policy") + SHOWN)
        by_words = browser.evaluate(TYPE.format(words="  strict INVENTS ") + SHOWN)
        failing = browser.evaluate(TYPE.format(words="") + TOGGLE + SHOWN)
        counted = browser.evaluate("document.getElementById('shown').textContent")
        everything = browser.evaluate(TOGGLE + SHOWN)
    assert browser.errors == []
    assert by_word == [["tribunal-run", POLICY], ["drift", POLICY]]
    assert by_words == [["tribunal-run", POLICY]]  # every word, in any case, anywhere in it
    assert failing == [  # the xfailed test's failing tribunal is no failure
        ["tribunal-run", POLICY],
        ["sampled-test", SAMPLED],
        ["sampled-test", UNRECORDED],
        ["calibration", "tests/test_judges.py::test_judges_agree_with_people"],
        ["drift", POLICY],
    ]
    assert counted == "5 of 10 shown"
    assert len(everything) == 10


@needs_chromium
def test_a_merged_reports_conflicts_come_first_and_stay_with_the_failures(
    tmp_path: Path,
) -> None:
    """A merged report's conflicts are the page's first section, and the failures-only
    toggle keeps them: a test that passed in one CI job and failed in another needs a look."""
    path = tmp_path / "merged.html"
    said = "outcome: passed (one.json), failed (two.json)"
    conflict = {"test": POLICY, "reports": ["one.json", "two.json"], "differs": [said]}
    write_html(path, {**session(), "conflicts": [conflict]})
    with Browser(tmp_path) as browser:
        browser.open(path)
        failing = browser.evaluate(TOGGLE + SHOWN)
        first = browser.evaluate("document.querySelector('section[id]:not(#summary)').id")
    assert browser.errors == []
    assert first == "conflicts"
    assert failing[0] == ["conflict", POLICY]
    assert len(failing) == 6  # the five failures above, and the conflict


@needs_chromium
def test_chromium_keeps_transcripts_and_calls_folded_until_clicked(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    write_html(path, session())
    with Browser(tmp_path) as browser:
        browser.open(path)
        before = browser.evaluate(VISIBLE)
        browser.evaluate(UNFOLD)
        after = browser.evaluate(VISIBLE)
        colours = browser.evaluate(VERDICT_COLOURS)
    assert browser.errors == []
    assert before == {"question": False, "answer": False, "message": False, "response": False}
    assert after == {"question": True, "answer": True, "message": True, "response": True}
    # An xfailed test's failing verdict is not drawn as a failure.
    assert colours["failed"] != colours["xfailed"]
    assert colours["failed"] == colours["failed test"]


@needs_chromium
def test_chromium_shows_the_empty_page_without_a_console_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.html"
    write_html(path, {})
    with Browser(tmp_path) as browser:
        browser.open(path)
        said = browser.evaluate("document.getElementById('empty').innerText")
    assert browser.errors == []
    assert browser.external_requests == []
    assert said.startswith("Nothing recorded")


@needs_chromium
def test_a_sessions_report_html_opens_in_chromium_with_every_vote(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """End to end: a pytest run whose judges answer over HTTP writes the page Chromium reads."""
    with LoopbackServer(handler=judge) as judges:
        pytester.makeconftest(SUITE.format(url=judges.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        pytester.makepyfile(test_replies=TESTS)
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "--harness-report=out/report.html"
        )
    result.assert_outcomes(passed=1, failed=1, xfailed=1)
    path = pytester.path / "out" / "report.html"
    with Browser(tmp_path) as browser:
        browser.open(path)
        dom = parse(browser.dom())
        browser.screenshot(ARTIFACTS / "session-report.png")
    assert browser.errors == []
    assert browser.external_requests == []
    outcomes = {
        r.attrs["data-test"]: r.attrs["data-outcome"] for r in dom.find_all("tr", "tribunal-run")
    }
    assert outcomes == {
        "test_replies.py::test_polite": "pass",
        "test_replies.py::test_rude": "fail",
        "test_replies.py::test_rude_known": "xfailed",  # the test expected it: no failure
    }
    tested = {
        r.attrs["data-test"]: r.find("span", "test-outcome").text
        for r in dom.find_all("tr", "tribunal-run")
    }
    assert set(tested.values()) == {"passed", "failed", "xfailed"}
    assert tested["test_replies.py::test_rude_known"] == "xfailed"
    rude = dom.find("tbody", "entry", data_test="test_replies.py::test_rude")
    votes = [(cells(j)[0], cells(j)[2], cells(j)[3]) for j in rude.find_all("tr", "judge")]
    assert votes == [("Lenient", "fail", "rude"), ("Strict", "fail", f"rude {ATTACK}")]
    assert dom.find("tr", "agreement", data_tribunal="Quality")
    assert [td.text for td in dom.find("tr", "usage-total").find_all("td")][1] == "6"  # calls


BROKEN_PAGE = """<!DOCTYPE html>
<html><body><p id="p">as written</p><button id="b">b</button>
<img src="http://harness.invalid/pixel.png">
<script>
console.log("all is well");
console.error("something broke");
document.getElementById("p").textContent = "changed by the script";
document.getElementById("b").addEventListener("click", function () { throw new Error("clicked"); });
notDefined();
</script></body></html>
"""

# Script run in the report: type words into the filter box, tick the failures-only box, and
# list the entries still rendered (display none has no boxes) as [kind, test].
TYPE = """(() => {{ const box = document.getElementById("filter");
box.value = "{words}"; box.dispatchEvent(new Event("input")); }})();
"""
TOGGLE = "document.getElementById('failures-only').click();\n"
# Whether the first of each folded part has boxes (is rendered), and clicking every fold open.
VISIBLE = """(() => {
  const shown = (selector) => document.querySelector(selector).checkVisibility();
  return {question: shown(".run-transcript .question"), answer: shown(".run-transcript .answer"),
          message: shown(".app-call li.message"), response: shown(".app-call .response")};
})();
"""
UNFOLD = """document.querySelectorAll(".run-transcript > summary, .app-call > summary")
  .forEach((summary) => summary.click());
"""
VERDICT_COLOURS = """(() => {
  const colour = (test, n) => getComputedStyle(document.querySelector(
    `tr.tribunal-run[data-test="${test}"]`).querySelectorAll(".outcome")[n]).backgroundColor;
  return {"failed": colour(POLICY, 1), "xfailed": colour(KNOWN_GAP, 1),
          "failed test": colour(POLICY, 0)};
})();
""".replace("KNOWN_GAP", json.dumps(KNOWN_GAP)).replace("POLICY", json.dumps(POLICY))
SHOWN = """Array.from(document.querySelectorAll(".entry"))
  .filter((entry) => entry.getClientRects().length > 0)
  .map((entry) => [entry.firstElementChild.className || entry.classList[1],
                   entry.getAttribute("data-test")]);
"""

SUITE = """
import pytest
from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule


class Lenient(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = {{
        "type": "object",
        "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
        "required": ["pass", "reason"],
    }}
    instructions = "You are a lenient judge of support replies."


class Strict(Lenient):
    instructions = "You are a strict judge of support replies."


class Quality(Tribunal):
    agents = [Lenient, Strict]

    @rule("majority")
    def passed(result):
        return result.processed["pass"]
"""

TESTS = """
import pytest
from conftest import Quality

pytestmark = pytest.mark.harness(cassette=False)

def test_polite(harness):
    harness.assert_verdict(Quality, "Thanks for waiting, it ships today.")

def test_rude(harness):
    harness.assert_verdict(Quality, "Go away, rude customer.")

@pytest.mark.xfail(reason="rude replies are a known gap")
def test_rude_known(harness):
    harness.assert_verdict(Quality, "Go away, rude customer.")
"""


def judge(body: dict[str, Any]) -> Reply:
    """Both judges pass a polite reply; the strict one's reason for a rude one is an attack."""
    strict = "strict" in body["messages"][0]["content"]
    polite = "rude" not in body["messages"][-1]["content"]
    reason = "polite" if polite else (f"rude {ATTACK}" if strict else "rude")
    return Reply(content=json.dumps({"pass": polite, "reason": reason}))
