"""The session's report as one self-contained HTML page (``--harness-report=PATH.html``)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from pytest_harness._changes import tally
from pytest_harness._report.completeness import replay
from pytest_harness._report.markup import (
    cells,
    count,
    element,
    entry,
    folded,
    join,
    outcome,
    section,
    table,
    test_outcome,
    text,
    verdict,
    vote,
)
from pytest_harness._report.review import changes, drift, regressed
from pytest_harness._report.text import (
    OUTCOME,
    REASON_WIDTH,
    clip,
    figure,
    money,
    percent,
    seconds,
    timing,
)

Rows = Sequence[Mapping[str, Any]]


def tribunals(records: Rows) -> Markup:
    """Every tribunal run, each with its judges' votes, reasons and costs, and its errors."""
    headers = ["test", "outcome", "tribunal", "verdict", "votes", "tokens", "cost", "time"]
    body = []
    for r in records:
        name = r.get("tribunal")
        if r.get("sample") is not None:
            name = f"{name} (sample {r['sample']})"
        test = r.get(OUTCOME)
        row = cells(
            r.get("test"),
            test_outcome(test),
            name,
            verdict(r.get("outcome"), test),
            f"{r.get('votes_passed', 0)}/{r.get('votes_cast', 0)}",
            r.get("tokens", 0),
            money(r.get("cost")),
            seconds(r.get("time")),
        )
        hooks = {
            "test": r.get("test"),
            "tribunal": r.get("tribunal"),
            "outcome": _shown_outcome(r.get("outcome"), test),
            "test_outcome": test,
        }
        detail = _run_detail(r)
        body.append(entry("tribunal-run", row, hooks, detail=detail, width=len(headers)))
    return section("tribunals", "Tribunal runs", table(headers, body, class_="runs"))


def _shown_outcome(value: str | None, test: str | None) -> str | None:
    """What the failures-only toggle reads: a failure the test expected is ``xfailed``."""
    return "xfailed" if test == "xfailed" and value in ("fail", "error") else value


def _run_detail(record: Mapping[str, Any]) -> Markup:
    """Under a run: its rule and value, the judges' votes, the judges that failed."""
    parts = []
    if record.get("rule") is not None or record.get("value") is not None:
        line = f"rule: {record.get('rule') or '-'}; value: {record.get('value')!r}"
        parts.append(element("p", line, class_="rule"))
    votes = record.get("votes") or []
    if votes:
        headers = ["judge", "model", "vote", "reason", "time", "tokens", "cost"]
        rows = [
            element(
                "tr",
                cells(
                    v.get("agent"),
                    v.get("model") or "",
                    vote(v.get("passed"), v.get("vote")),
                    folded(v.get("reason")),
                    seconds(v.get("time")),
                    v.get("tokens", 0),
                    money(v.get("cost")),
                ),
                class_="judge",
                data_judge=v.get("agent"),
                data_vote=_vote_word(v.get("passed")),
            )
            for v in votes
        ]
        parts.append(table(headers, [element("tbody", *rows)], class_="judges"))
    errors = record.get("errors") or []
    if errors:
        items = [
            _labelled(
                e.get("agent"), e.get("error"), class_="judge-error", data_judge=e.get("agent")
            )
            for e in errors
        ]
        parts.append(element("ul", *items, class_="errors"))
    return join(parts)


def agreement(rows: Rows) -> Markup:
    """Per tribunal: runs with two or more votes, observed agreement, Krippendorff's alpha."""
    body = [
        element(
            "tr",
            cells(
                r.get("tribunal"),
                r.get("runs", 0),
                "n/a" if r.get("percent_agreement") is None else f"{r['percent_agreement']:.1f}%",
                figure(r.get("krippendorff_alpha")),
            ),
            class_="agreement",
            data_tribunal=r.get("tribunal"),
        )
        for r in rows
    ]
    headers = ["tribunal", "runs (2+ votes)", "agreement", "Krippendorff's alpha"]
    return section("agreement", "Agreement among judges", table(headers, body))


def samples(records: Rows) -> Markup:
    """Sampled tests: passes of N, the rate and its interval, the rate needed, pass^k, the
    outcome (inconclusive: what it counts as, how many more samples would decide), failures."""
    headers = ["test", "passed", "rate", "interval", "needs", "pass^k", "outcome"]
    body = []
    for r in records:
        ran = r.get("ran", r.get("samples", 0))
        sequential = r.get("sequential") or {}
        passed = f"{r.get('passes', 0)}/{ran}"
        if sequential and ran != r.get("samples"):
            passed += f" of {r.get('samples')} (decided)"
        row = cells(
            r.get("test"),
            passed,
            percent(r.get("pass_rate")),
            _interval(r),
            _needs(r, sequential),
            _pass_k(r.get("pass_k") or {}),
            _sample_outcome(r.get("outcome"), sequential),
        )
        failures = [
            _failure(f"sample {number}", f.get("reason"), "failed-sample", data_sample=number)
            for f in r.get("failures") or []
            for number in [f.get("sample")]
        ]
        stop = r.get("stopped") or {}
        if stop:
            number = stop.get("sample")
            said = f"sample {number} stopped the sampling"
            failures.append(
                _failure(said, stop.get("reason"), "stopped-sample", data_sample=number)
            )
        detail = element("ul", *failures, class_="failures") if failures else None
        hooks = {"test": r.get("test"), "outcome": r.get("outcome")}
        body.append(entry("sampled-test", row, hooks, detail=detail, width=len(headers)))
    return section("samples", "Sampled tests", table(headers, body))


def datasets(records: Rows) -> Markup:
    """Dataset gates: cases counted and passed, the rate and its interval, the rate needed,
    the outcome; under each, its failing cases."""
    headers = ["dataset gate", "source", "passed", "rate", "interval", "needs", "outcome"]
    body = []
    for r in records:
        sequential = r.get("sequential") or {}
        passed = f"{r.get('passes', 0)}/{r.get('ran', 0)} of {r.get('cases')} cases"
        if r.get("excluded"):
            passed += f" ({r['excluded']} not counted)"
        row = cells(
            r.get("test"),
            r.get("source"),
            passed,
            percent(r.get("pass_rate")),
            _interval(r),
            _needs(r, sequential),
            _sample_outcome(r.get("outcome"), sequential),
        )
        failures = [
            _failure(
                f"case {f.get('case')}", f.get("reason"), "failed-case", data_case=f.get("case")
            )
            for f in r.get("failures") or []
        ]
        detail = element("ul", *failures, class_="failures") if failures else None
        hooks = {"test": r.get("test"), "outcome": r.get("outcome")}
        body.append(entry("dataset-gate", row, hooks, detail=detail, width=len(headers)))
    return section("datasets", "Dataset gates", table(headers, body))


def _failure(label: str, reason: Any, kind: str, **data: Any) -> Markup:
    """One failure under a row: its label in bold, then its reason (folded when long)."""
    return element("li", element("b", label), ": ", folded(reason), class_=kind, **data)


def _interval(record: Mapping[str, Any]) -> Markup | str:
    """The interval at the test's confidence (95% unless sequential at another); when no
    sample ran, why (a sample stopped the sampling)."""
    interval = record.get("interval")
    if interval:
        low, high = [*interval, None, None][:2]
        return f"{percent(low)} - {percent(high)} ({percent(record.get('confidence', 0.95))})"
    stop = record.get("stopped") or {}
    if stop:
        said = f"none: sample {stop.get('sample')} stopped it: {stop.get('reason')}"
        return element("span", clip(said, REASON_WIDTH), class_="stopped")
    return "n/a - n/a"


def _needs(record: Mapping[str, Any], sequential: Mapping[str, Any]) -> str:
    """The rate needed; sequential: with its margin and confidence, and the method."""
    needs = percent(record.get("required"))
    if not sequential:
        return needs
    margin, confidence = percent(sequential.get("margin")), percent(record.get("confidence"))
    return f"{needs} ±{margin} at {confidence} ({sequential.get('method')})"


def _pass_k(pass_k: Mapping[str, Any]) -> str:
    """pass^k for each k: ``k=1 90% · k=2 81% · ...``."""
    return " · ".join(f"k={k} {percent(v)}" for k, v in pass_k.items()) or "n/a"


def _sample_outcome(value: Any, sequential: Mapping[str, Any]) -> Markup:
    """The outcome; inconclusive says what it counts as and how far it is from a decision."""
    if value != "inconclusive":
        return outcome(value)
    label = f"inconclusive (counted as {sequential.get('inconclusive')})"
    more = sequential.get("more_needed")
    if more is not None:
        label += f": about {more} more samples would likely decide it"
    return outcome("inconclusive", label)


def usage(rows: Rows) -> Markup:
    """Per test: model calls, tokens and cost; then the session's total."""
    body = [
        element(
            "tr",
            cells(r.get("test"), r.get("calls", 0), r.get("tokens", 0), money(r.get("cost"))),
            class_="usage",
            data_test=r.get("test"),
        )
        for r in rows
    ]
    costs = [r["cost"] for r in rows if r.get("cost") is not None]
    total = cells(
        "total",
        sum(r.get("calls", 0) for r in rows),
        sum(r.get("tokens", 0) for r in rows),
        money(sum(costs) if costs else None),
    )
    foot = element("tfoot", element("tr", total, class_="usage-total"))
    return section(
        "usage", "Model usage", table(["test", "calls", "tokens", "cost"], [*body, foot])
    )


def _labelled(who: Any, text: Any, **attributes: Any) -> Markup:
    """A list item: who (bold), then what they said or what went wrong, folded when long."""
    return element("li", element("b", who), ": ", folded(text), **attributes)


def _vote_word(passed: bool | None) -> str:
    return "none" if passed is None else ("pass" if passed else "fail")


def runs(records: Rows) -> Markup:
    """Orchestrator runs: tools, requests, why they stopped, events, spend, time; then,
    folded, the question, each step (model message, tool call and result) and the answer."""
    headers = ["test", "outcome", "tools", "tool errors", "requests", "stop", "events"]
    headers += ["tokens", "cost", "time"]
    body = []
    for r in records:
        events = r.get("events") or {}
        row = cells(
            r.get("test"),
            test_outcome(r.get(OUTCOME)),
            ", ".join(r.get("tools") or []) or "-",
            r.get("tool_errors", 0),
            r.get("requests", 0),
            r.get("stop_reason") or r.get("source"),
            ", ".join(f"{kind} x{n}" for kind, n in events.items()) or "-",
            r.get("tokens", 0),
            money(r.get("cost")),
            timing(r.get("time"), r.get("recorded_time")),
        )
        hooks = {"test": r.get("test"), "outcome": "info", "stop": r.get("stop_reason")}
        hooks["test_outcome"] = r.get(OUTCOME)
        body.append(entry("agent-run", row, hooks, detail=_transcript(r), width=len(headers)))
    return section("runs", "Agent runs", table(headers, body))


def _transcript(record: Mapping[str, Any]) -> Markup | None:
    """A run as it went, in a ``<details>`` closed at first: question, steps, answer."""
    question, answer = record.get("question"), record.get("answer")
    steps = _steps(record.get("steps") or [])
    if not (question or answer or steps):
        return None
    said = f"question: {question}" if question else "steps"
    parts = [element("summary", clip(said, 100))]
    if question:
        parts.append(_said("question", question))
    if steps:
        parts.append(steps)
    if answer:
        parts.append(_said("answer", answer))
    return element("details", *parts, class_="run-transcript")


def _said(kind: str, value: Any) -> Markup:
    """A labelled text in full (a question, an answer, a message)."""
    return element(
        "div", element("b", f"{kind}: "), element("div", value, class_="full"), class_=kind
    )


def _steps(steps: Sequence[Mapping[str, Any]]) -> Markup | None:
    """A run's steps in order: the model's messages, and each tool call it asked for, with
    its arguments and what came back."""
    if not steps:
        return None
    rows = []
    for step in steps:
        if step.get("kind") == "message":
            said = cells(step.get("request"), "model", folded(step.get("text")), "")
            rows.append(element("tr", said, class_="step message", data_outcome="info"))
            continue
        failed = step.get("error") is not None
        result = step.get("error") if failed else step.get("result")
        tool: Any = step.get("tool")
        if step.get("server"):  # run on an MCP server
            tool = element("span", tool, " ", element("small", "MCP"), title=step["server"])
        rows.append(
            element(
                "tr",
                cells(
                    step.get("request"),
                    tool,
                    folded(_plain(step.get("arguments"))),
                    element("div", folded(_plain(result)), class_="error" if failed else None),
                ),
                class_="step",
                data_tool=step.get("tool"),
                data_outcome="error" if failed else "pass",
            )
        )
    headers = ["request", "tool", "arguments or message", "result"]
    return table(headers, [element("tbody", *rows)], class_="steps")


def app_calls(records: Rows) -> Markup:
    """Per test, the application's own model calls: where each went, its model, tokens and
    latency; folded, the messages it sent and what came back."""
    headers = ["test", "outcome", "calls", "models", "tokens", "latency"]
    body = []
    for r in records:
        calls = r.get("calls") or []
        total = r.get("total", len(calls))
        row = cells(
            r.get("test"),
            test_outcome(r.get(OUTCOME)),
            total if total == len(calls) else f"{total} (first {len(calls)} shown)",
            ", ".join(sorted({str(c.get("model") or "?") for c in calls})),
            sum(c.get("tokens", 0) for c in calls),
            _latency(calls),
        )
        shown = [_app_call(call) for call in calls]
        hooks = {"test": r.get("test"), "outcome": "info", "test_outcome": r.get(OUTCOME)}
        detail = join(shown) if shown else None
        body.append(entry("app-calls", row, hooks, detail=detail, width=len(headers)))
    return section("app_calls", "Application model calls", table(headers, body))


def _latency(calls: Sequence[Mapping[str, Any]]) -> str:
    """The calls' latencies added up, ``recorded`` when they are the recording's (replay)."""
    known = [c["latency_s"] for c in calls if c.get("latency_s") is not None]
    if not known:
        return ""
    recorded = any(c.get("latency_recorded") for c in calls)
    return ("recorded " if recorded else "") + seconds(sum(known))


def _app_call(call: Mapping[str, Any]) -> Markup:
    """One call, folded: its heading, then the request's messages and the response."""
    latency = _latency([call])
    head = [
        call.get("endpoint"),
        call.get("model") or None,
        f"{call.get('tokens', 0)} tokens",
        latency or None,
        "replayed" if call.get("replayed") else None,
    ]
    said = " · ".join(str(part) for part in head if part)
    summary = element("summary", f"{call.get('call')}. {said}")
    sent = [
        _labelled(m.get("role"), m.get("content"), class_="message", data_role=m.get("role"))
        for m in call.get("request") or []
    ]
    parts = [summary, element("ol", *sent, class_="messages")]
    if call.get("reasoning"):
        parts.append(_said("reasoning", call.get("reasoning")))
    if call.get("response"):
        parts.append(_said("response", call.get("response")))
    asked = [
        element("li", f"{c.get('name')}({c.get('arguments') or ''})", class_="tool-call")
        for c in call.get("tool_calls") or []
    ]
    if asked:
        parts.append(element("ul", *asked, class_="tool-calls"))
    ran = [
        _labelled("ran by the provider", f"{c.get('name')}({c.get('arguments') or ''})")
        for c in call.get("provider_tool_calls") or []
    ]
    if ran:
        parts.append(element("ul", *ran, class_="provider-tool-calls"))
    if call.get("problem"):
        parts.append(element("p", f"problem: {call.get('problem')}", class_="error"))
    return element(
        "details",
        *parts,
        class_="app-call",
        data_call=call.get("call"),
        data_latency_recorded=bool(call.get("latency_recorded")),
    )


def transcripts(records: Rows) -> Markup:
    """Simulated conversations: persona, goal, how they ended; then every turn."""
    headers = ["test", "persona", "goal", "turns", "stopped by", "reason"]
    body = []
    for r in records:
        turns = r.get("turns") or []
        row = cells(
            r.get("test"),
            folded(r.get("persona")),
            folded(r.get("goal")),
            len(turns),
            r.get("stopped_by"),
            folded(r.get("reason")),
        )
        said = [
            _labelled(
                turn.get("role"),
                _plain(turn.get("content")),
                class_="turn",
                data_role=turn.get("role"),
            )
            for turn in turns
        ]
        detail = element("ol", *said, class_="turns") if said else None
        hooks = {"test": r.get("test"), "outcome": "info", "stopped_by": r.get("stopped_by")}
        body.append(entry("transcript", row, hooks, detail=detail, width=len(headers)))
    return section("transcripts", "Simulated conversations", table(headers, body))


def _plain(value: Any) -> str | None:
    """A step's or turn's value as text: strings as they are, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, sort_keys=True, default=repr)
    except ValueError:
        return repr(value)


def calibrations(records: Rows) -> Markup:
    """Every calibration of the session, one ``<article>`` each."""
    return section("calibrations", "Judge calibration", *(_calibration(r) for r in records))


def _calibration(record: Mapping[str, Any]) -> Markup:
    verdict = record.get("outcome")
    title = element(
        "h3",
        element("span", record.get("test"), class_="test"),
        " · ",
        element("span", record.get("tribunal"), class_="tribunal"),
        " ",
        outcome(verdict) if verdict else "",
    )
    about = (
        f"{record.get('items', 0)} labelled items from {record.get('source') or 'a list'}; "
        f"a judge is flagged above a flip rate of {percent(record.get('max_flip_rate'))}"
    )
    parts = [title, element("p", about, class_="about"), _scores(record)]
    shared = record.get("agreement") or {}
    if shared:
        agreed = shared.get("percent_agreement")
        line = (
            "agreement among the judges: "
            + ("n/a" if agreed is None else f"{agreed:.1f}%")
            + f", Krippendorff's alpha {figure(shared.get('krippendorff_alpha'))}"
        )
        parts.append(element("p", line, class_="calibration-agreement"))
    if record.get("probes"):
        parts.append(_probes(record["probes"]))
    flagged = record.get("flagged") or []
    if flagged:
        line = "flagged by the bias probes: " + ", ".join(str(name) for name in flagged)
        parts.append(element("p", line, class_="flagged-judges"))
    failures = [element("li", folded(f)) for f in record.get("failures") or []]
    if failures:
        parts.append(element("ul", *failures, class_="failures"))
    return element(
        "article",
        *parts,
        class_="entry calibration",
        data_test=record.get("test"),
        data_tribunal=record.get("tribunal"),
        data_outcome=verdict or ("fail" if flagged else "info"),
    )


def _scores(record: Mapping[str, Any]) -> Markup:
    """Per judge, then the panel: scored, no verdict, accuracy, kappa, TP/FN/FP/TN."""
    rows = [
        _score_row(judge.get("judge"), judge, kind="judge-score")
        for judge in record.get("judges") or []
    ]
    rows.append(_score_row("panel", record.get("panel") or {}, kind="panel-score"))
    headers = ["judge", "scored", "no verdict", "accuracy", "kappa", "TP", "FN", "FP", "TN"]
    return table(headers, [element("tbody", *rows)], class_="scores")


def _score_row(name: Any, score: Mapping[str, Any], *, kind: str) -> Markup:
    confusion = score.get("confusion")
    missing = list(score.get("no_verdict") or [])
    return element(
        "tr",
        cells(
            name,
            score.get("scored", 0),
            f"{len(missing)} ({', '.join(map(str, missing))})" if missing else 0,
            percent(score.get("accuracy")),
            figure(score.get("kappa")),
            count(confusion, "pass", "pass"),
            count(confusion, "pass", "fail"),
            count(confusion, "fail", "pass"),
            count(confusion, "fail", "fail"),
        ),
        class_=kind,
        data_judge=name,
    )


def _probes(probes: Sequence[Mapping[str, Any]]) -> Markup:
    """Each judge under each probe: flips of applicable items, the rate, the flipped items."""
    rows = [
        element(
            "tr",
            cells(
                p.get("judge"),
                p.get("probe"),
                f"{p.get('flips', 0)}/{p.get('applicable', 0)}",
                percent(p.get("rate")),
                outcome("fail", "flagged") if p.get("flagged") else "no",
                ", ".join(str(item) for item in p.get("items") or []) or "-",
            ),
            class_="probe flagged" if p.get("flagged") else "probe",
            data_judge=p.get("judge"),
            data_probe=p.get("probe"),
        )
        for p in probes
    ]
    headers = ["judge", "probe", "flips", "flip rate", "flagged", "items that flipped"]
    return table(headers, [element("tbody", *rows)], class_="probes")


def conflicts(records: Rows) -> Markup:
    """The tests that differ between merged reports (``python -m pytest_harness merge``):
    which test, in which reports, what differs. Every version of such a test is kept in
    the sections below, each naming its report."""
    body = [
        entry(
            "conflict",
            join(
                [
                    element("td", record.get("test")),
                    element("td", ", ".join(str(r) for r in record.get("reports") or [])),
                    element("td", element("ul", *(element("li", d) for d in _differs(record)))),
                ]
            ),
            {"test": record.get("test"), "outcome": "conflict"},
        )
        for record in records
    ]
    headers = ["test", "reports", "what differs"]
    title = "Conflicts between the merged reports"
    return section("conflicts", title, table(headers, body, class_="conflicts"))


def _differs(record: Mapping[str, Any]) -> list[str]:
    return [str(said) for said in record.get("differs") or []]


def matrix(data: Mapping[str, Any]) -> Markup:
    """The model matrix (``--harness-models``): a row per test or case, a column per model;
    each cell the outcome, pass rate and interval (a sampled test), tokens, cost, latency,
    and the application's responses, so a row shows the models' answers side by side."""
    models = list(data.get("models") or [])
    body = []
    for row in data.get("rows") or []:
        found = row.get("cells") or {}
        shown = [_matrix_cell(model, found.get(model)) for model in models]
        failed = any(c.get(OUTCOME) in ("failed", "error") for c in found.values())
        hooks = {"test": row.get("row"), "outcome": "fail" if failed else "pass"}
        body.append(entry("matrix-row", join([element("td", row.get("row")), *shown]), hooks))
    return section("matrix", "Model matrix", table(["test", *models], body, class_="matrix"))


def _matrix_cell(model: str, cell: Mapping[str, Any] | None) -> Markup:
    """One model's cell of a row: its outcome and figures, then its responses in order."""
    if cell is None:
        return element("td", "-", class_="matrix-cell", data_model=model)
    samples = cell.get("samples") or {}
    figures = [f"{cell.get('tokens', 0)} tokens", money(cell.get("cost"))]
    figures.append(seconds(cell.get("latency_s")))
    if samples.get("ran"):
        rate = f"{samples.get('passes')}/{samples.get('ran')} {percent(samples.get('pass_rate'))}"
        low, high = samples.get("interval") or (None, None)
        figures.insert(0, f"{rate} ({percent(low)}-{percent(high)})")
    answers = [
        element("li", folded(said), class_="response") for said in cell.get("responses") or []
    ]
    return element(
        "td",
        test_outcome(cell.get(OUTCOME)),
        element("p", " · ".join(f for f in figures if f), class_="figures"),
        element("ol", *answers, class_="responses") if answers else "",
        class_="matrix-cell",
        data_model=model,
        data_outcome=cell.get(OUTCOME),
    )


# In the page's order: (key of data, its section).
_SECTIONS: tuple[tuple[str, Callable[[Any], Markup]], ...] = (
    ("conflicts", conflicts),
    ("matrix", matrix),
    ("tribunals", tribunals),
    ("agreement", agreement),
    ("samples", samples),
    ("datasets", datasets),
    ("calibrations", calibrations),
    ("changes", changes),
    ("replay", replay),
    ("drift", drift),
    ("runs", runs),
    ("app_calls", app_calls),
    ("transcripts", transcripts),
    ("usage", usage),
)

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 1.5rem 3rem; color: #1d1d1f; }
header { position: sticky; top: 0; background: #fff; padding: .8rem 0 .5rem;
  border-bottom: 1px solid #ddd; z-index: 1; }
h1 { font-size: 1.3rem; margin: 0 0 .4rem; }
h2 { font-size: 1.1rem; margin: 2rem 0 .6rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .3rem; }
nav a { margin-right: .8rem; }
.replay .cassette { display: block; color: #666; font-size: .85rem; }
.controls { margin-top: .4rem; }
.controls input[type=search] { width: 22rem; padding: .2rem .4rem; }
.counts { display: flex; flex-wrap: wrap; gap: .5rem; list-style: none; padding: 0; }
.count { border: 1px solid #ddd; border-radius: 6px; padding: .4rem .7rem; }
.count .number { font-size: 1.2rem; font-weight: 600; margin-right: .3rem; }
.count .split { display: block; color: #666; font-size: .85rem; }
table { border-collapse: collapse; margin: .3rem 0; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left;
  vertical-align: top; }
th { background: #f4f4f6; }
tr.detail > td { background: #fafafa; padding: .4rem .8rem .6rem 1.6rem; }
.full { white-space: pre-wrap; overflow-wrap: anywhere; max-width: 60rem; }
details > summary { cursor: pointer; }
details[open] > summary { color: #666; }
.outcome { border-radius: 4px; padding: 0 .35rem; font-weight: 600; }
.outcome.pass { background: #dff3e2; color: #0f5c1d; }
.outcome.fail { background: #fbe0e0; color: #8a1010; }
.outcome.error { background: #fdf0d2; color: #7a4b00; }
.outcome.other { background: #eee; color: #444; }
.outcome.xfailed { background: #f1f1f4; color: #6b6b75; font-weight: 400;
  font-style: italic; }
.stopped { color: #7a4b00; }
details.app-call, details.run-transcript { margin: .2rem 0; }
ol.messages { margin: .3rem 0; padding-left: 1.4rem; }
.question, .answer, .response, .reasoning { margin: .3rem 0; }
tr.probe.flagged td { background: #fbe0e0; }
tr.conflict td { background: #fdf0d2; }
.error { color: #8a1010; }
ul.errors, ul.failures, ol.turns { margin: .3rem 0; padding-left: 1.2rem; }
td ul { margin: 0; padding-left: 1rem; }
#shown { margin-left: 1rem; color: #666; }
tr.panel-score td { font-weight: 600; }
[hidden] { display: none !important; }
table.matrix td.matrix-cell { min-width: 16rem; }
ol.responses { margin: .3rem 0; padding-left: 1.2rem; }
.change-counts { color: #444; }
details.change { border: 1px solid #ddd; border-radius: 6px; margin: .4rem 0;
  padding: .3rem .6rem; }
details.change[open] { padding-bottom: .7rem; }
details.change > summary .test { font-weight: 600; margin-right: .4rem; }
details.change > summary .reasons-short { color: #555; }
.kind { border-radius: 4px; padding: 0 .35rem; font-weight: 600; margin-right: .3rem; }
.kind[data-kind=regressed] { background: #fbe0e0; color: #8a1010; }
.kind[data-kind=changed] { background: #fdf0d2; color: #7a4b00; }
.change-body h4 { font-size: .95rem; margin: .9rem 0 .3rem; }
.change-body h4 .caller { color: #666; font-weight: 400; }
ul.reasons { margin: .4rem 0; padding-left: 1.2rem; }
.recorded { color: #666; font-size: .9rem; }
table.diff { width: 100%; table-layout: fixed; }
table.diff th { width: 50%; }
table.diff td { white-space: pre-wrap; overflow-wrap: anywhere; }
table.diff.calls td { font-family: ui-monospace, monospace; font-size: .85rem; }
table.diff tr.changed td { background: #fffbea; }
table.diff tr.removed td.old { background: #fdecec; }
table.diff tr.added td.new { background: #eaf7ec; }
table.diff del { background: #f8c9c9; color: #6d0b0b; text-decoration: none; }
table.diff ins { background: #c5ebcc; color: #0b4a17; text-decoration: none; }
.absent { color: #777; font-style: italic; }
.growth { font-variant-numeric: tabular-nums; }
"""

_SCRIPT = """
(function () {
  var filter = document.getElementById("filter");
  var failing = document.getElementById("failures-only");
  var shown = document.getElementById("shown");
  var entries = Array.prototype.slice.call(document.querySelectorAll(".entry"));
  function apply() {
    var words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var visible = 0;
    entries.forEach(function (entry) {
      var outcome = entry.getAttribute("data-outcome");
      var said = entry.textContent.toLowerCase();
      var needed = outcome === "fail" || outcome === "error" || outcome === "conflict";
      var keep = (!failing.checked || needed) &&
        words.every(function (word) { return said.indexOf(word) !== -1; });
      entry.hidden = !keep;
      visible += keep ? 1 : 0;
    });
    shown.textContent = visible + " of " + entries.length + " shown";
  }
  filter.addEventListener("input", apply);
  failing.addEventListener("change", apply);
  apply();
})();
"""

_TITLE = "pytest-harness report"


def render(data: Mapping[str, Any]) -> str:
    """The report page for the session's records ``data`` (the JSON report's dict)."""
    shown = _shown_sections(data)
    sections = [show(data[key]) for key, show in shown]
    if not any(key != "agreement" for key, _ in shown):
        body = join([_header(None), _nothing()])
        return _document(body, script=False)
    body = join([_header(data), _summary(data), *sections])
    return _document(body, script=True)


def _shown_sections(data: Mapping[str, Any]) -> list[tuple[str, Callable[[Any], Markup]]]:
    """The sections that have records, in the page's order; the changes come first when a
    test regressed: that is where a reviewer looks first."""
    shown = [(key, show) for key, show in _SECTIONS if data.get(key)]
    if regressed(data.get("changes") or []):
        shown.sort(key=lambda section: section[0] != "changes")  # a stable sort
    return shown


def write_html(path: Path, data: Mapping[str, Any]) -> None:
    """Write the report page to ``path`` at once (a temporary file, then a rename), so a
    reader never sees half a page; the folder is created when missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(render(data), encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _document(body: Markup, *, script: bool) -> str:
    """The whole page: the policy that keeps it offline, its style, the body, its script."""
    scripts = _digest(_SCRIPT) if script else "'none'"
    policy = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
        f"style-src {_digest(_STYLE)}; script-src {scripts}"
    )
    head = join(
        [
            Markup('<meta charset="utf-8">'),
            Markup(f'<meta http-equiv="Content-Security-Policy" content="{text(policy)}">'),
            Markup('<meta name="viewport" content="width=device-width, initial-scale=1">'),
            element("title", _TITLE),
            element("style", Markup(_STYLE)),
        ]
    )
    ending = element("script", Markup(_SCRIPT)) if script else ""
    page = element("html", element("head", head), element("body", body, ending), lang="en")
    return f"<!DOCTYPE html>\n{page}\n"


def _digest(source: str) -> str:
    """A CSP source naming inline text by its SHA-256 hash."""
    hashed = base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{hashed}'"


def _header(data: Mapping[str, Any] | None) -> Markup:
    """The title; with records, links to the sections and the filter and failures-only box."""
    parts = [element("h1", _TITLE)]
    if data is not None:
        links = [element("a", key, href=f"#{key}") for key, _ in _shown_sections(data)]
        parts.append(element("nav", *links))
        controls = [
            Markup('<input id="filter" type="search" placeholder="filter: words in a row">'),
            " ",
            element(
                "label", Markup('<input id="failures-only" type="checkbox">'), " failures only"
            ),
            " ",
            element("span", "", id="shown"),
        ]
        parts.append(element("div", *controls, class_="controls"))
    return element("header", *parts)


def _nothing() -> Markup:
    said = (
        "Nothing recorded: no tribunal ran, no test was sampled, no judge calibrated, "
        "no agent run or conversation finished and no model was called."
    )
    return element("section", element("p", said), id="empty")


def _summary(data: Mapping[str, Any]) -> Markup:
    """The session at a glance: how many of each record, and how many failed."""
    tribunals = data.get("tribunals") or []
    samples = data.get("samples") or []
    gates = data.get("datasets") or []
    calibrations = data.get("calibrations") or []
    usage = data.get("usage") or []
    flagged = sorted({str(n) for c in calibrations for n in c.get("flagged") or []})
    costs = [u["cost"] for u in usage if u.get("cost") is not None]
    tests = _distinct(data.get("tests") or [])
    app = data.get("app_calls") or []
    changed = tally(data.get("changes") or [])
    counts = [
        ("conflicts", len(data.get("conflicts") or []), "tests differ between reports", ""),
        ("regressed", changed["regressed"], "tests regressed", ""),
        ("changed", changed["changed"], "tests changed", ""),
        ("tests", len(tests), "tests with records", _split(tests, "outcome")),
        ("tribunals", len(tribunals), "tribunal runs", _split(tribunals, "outcome")),
        ("samples", len(samples), "sampled tests", _split(samples, "outcome")),
        ("datasets", len(gates), "dataset gates", _split(gates, "outcome")),
        ("calibrations", len(calibrations), "calibrations", _named("flagged", flagged)),
        ("replay", _incomplete(data.get("replay") or []), "replays not complete", ""),
        ("drift", len(data.get("drift") or []), "verdicts flipped", ""),
        ("runs", len(data.get("runs") or []), "agent runs", ""),
        ("app_calls", sum(r.get("total", 0) for r in app), "application calls", ""),
        ("transcripts", len(data.get("transcripts") or []), "conversations", ""),
        ("usage", sum(u.get("calls", 0) for u in usage), "model calls", _spend(usage, costs)),
    ]
    items = [
        element(
            "li",
            element("span", number, class_="number"),
            label,
            element("span", split, class_="split") if split else "",
            class_="count",
            data_key=key,
            data_count=number,
        )
        for key, number, label, split in counts
        if number
    ]
    return element("section", element("ul", *items, class_="counts"), id="summary")


def _incomplete(replays: Rows) -> int:
    """How many replayed tests left a recording unused or ran something live."""
    return sum(1 for r in replays if r.get("unused") or r.get("live"))


def _distinct(tests: Rows) -> list[dict[str, Any]]:
    """Each test once: a merged report keeps every version of a conflicting test (each
    naming its report); such a test counts once, its outcome ``conflict`` unless all its
    versions agree."""
    found: dict[Any, dict[str, Any]] = {}
    for test in tests:
        seen = found.setdefault(test.get("test"), dict(test))
        if seen.get("outcome") != test.get("outcome"):
            seen["outcome"] = "conflict"
    return list(found.values())


def _split(records: Rows, key: str) -> str:
    """``"2 pass, 1 fail"``: how many records have each value of ``key``."""
    seen: dict[str, int] = {}
    for record in records:
        seen[str(record.get(key))] = seen.get(str(record.get(key)), 0) + 1
    return ", ".join(f"{n} {value}" for value, n in sorted(seen.items()))


def _named(label: str, names: Sequence[str]) -> str:
    return f"{label}: {', '.join(names)}" if names else ""


def _spend(usage: Rows, costs: Sequence[float]) -> str:
    tokens = sum(u.get("tokens", 0) for u in usage)
    return f"{tokens} tokens" + (f", {money(sum(costs))}" if costs else "")
