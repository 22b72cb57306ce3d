"""The session's report as one self-contained HTML page (``--harness-report=PATH.html``).

``render(data)`` turns the JSON report's dict (``report.session.write``) into a page that
needs nothing but itself: its style and its small script are inline, it names no URL, and its
Content-Security-Policy lets the page load nothing at all and run only its own script and
style (by their hashes), so even markup that slipped past escaping could neither run nor
fetch anything.
Everything from the records is escaped (``markup``).

The keys of ``data`` (every list may be missing or empty; each section shows when it has
rows, and a page with none says nothing was recorded):

- ``tribunals``: tribunal runs (``report.tribunals.record``), each with its judges' votes;
- ``agreement``: per tribunal, percent agreement and Fleiss' kappa (``report.tribunals.agreement``);
- ``samples``: sampled tests (``samples.Sampling.record``);
- ``calibrations``: judge calibrations against labels, with their bias probes;
- ``drift``: verdicts that flipped since the previous recording (``drift.compare``);
- ``runs`` and ``transcripts``: orchestrator runs and simulated conversations
  (``report.runs``), with their steps and turns;
- ``usage``: per test, model calls, tokens and cost (``spend``).

Hooks for tests and scripts: each section is ``<section id=KEY>``; each record is a
``.entry`` (a ``<tbody>``, or an ``<article>`` for a calibration) with ``data-test`` and
``data-outcome`` (pass, fail, error; ``info`` when a record has no verdict), whose row has
the record's kind as its class (``tribunal-run``, ``sampled-test``, ``drift``, ``agent-run``,
``transcript``). The filter box keeps the entries whose text holds every word typed; the
failures-only box keeps those that failed (``fail`` or ``error``).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_harness.report.html import agents, calibration, sections
from pytest_harness.report.html.markup import Html, element, join, text
from pytest_harness.report.tables import money

Rows = Sequence[Mapping[str, Any]]

# In the page's order: (key of data, its section).
_SECTIONS: tuple[tuple[str, Callable[[Rows], Html]], ...] = (
    ("tribunals", sections.tribunals),
    ("agreement", sections.agreement),
    ("samples", sections.samples),
    ("calibrations", calibration.calibrations),
    ("drift", sections.drift),
    ("runs", agents.runs),
    ("transcripts", agents.transcripts),
    ("usage", sections.usage),
)

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 1.5rem 3rem; color: #1d1d1f; }
header { position: sticky; top: 0; background: #fff; padding: .8rem 0 .5rem;
  border-bottom: 1px solid #ddd; z-index: 1; }
h1 { font-size: 1.3rem; margin: 0 0 .4rem; }
h2 { font-size: 1.1rem; margin: 2rem 0 .6rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .3rem; }
nav a { margin-right: .8rem; }
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
tr.probe.flagged td { background: #fbe0e0; }
.error { color: #8a1010; }
ul.errors, ul.failures, ol.turns { margin: .3rem 0; padding-left: 1.2rem; }
td ul { margin: 0; padding-left: 1rem; }
#shown { margin-left: 1rem; color: #666; }
tr.panel-score td { font-weight: 600; }
[hidden] { display: none !important; }
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
      var keep = (!failing.checked || outcome === "fail" || outcome === "error") &&
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
    sections = [show(data.get(key) or []) for key, show in _SECTIONS if data.get(key)]
    recorded = any(data.get(key) for key, _ in _SECTIONS if key != "agreement")
    if not recorded:
        body = join([_header(None), _nothing()])
        return _document(body, script=False)
    body = join([_header(data), _summary(data), *sections])
    return _document(body, script=True)


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


def _document(body: Html, *, script: bool) -> str:
    """The whole page: the policy that keeps it offline, its style, the body, its script."""
    scripts = _digest(_SCRIPT) if script else "'none'"
    policy = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
        f"style-src {_digest(_STYLE)}; script-src {scripts}"
    )
    head = join(
        [
            Html('<meta charset="utf-8">'),
            Html(f'<meta http-equiv="Content-Security-Policy" content="{text(policy)}">'),
            Html('<meta name="viewport" content="width=device-width, initial-scale=1">'),
            element("title", _TITLE),
            element("style", Html(_STYLE)),
        ]
    )
    ending = element("script", Html(_SCRIPT)) if script else ""
    page = element("html", element("head", head), element("body", body, ending), lang="en")
    return f"<!DOCTYPE html>\n{page}\n"


def _digest(source: str) -> str:
    """A CSP source naming inline text by its SHA-256 hash."""
    hashed = base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{hashed}'"


def _header(data: Mapping[str, Any] | None) -> Html:
    """The title; with records, links to the sections and the filter and failures-only box."""
    parts = [element("h1", _TITLE)]
    if data is not None:
        links = [element("a", key, href=f"#{key}") for key, _ in _SECTIONS if data.get(key)]
        parts.append(element("nav", *links))
        controls = [
            Html('<input id="filter" type="search" placeholder="filter: words in a row">'),
            " ",
            element("label", Html('<input id="failures-only" type="checkbox">'), " failures only"),
            " ",
            element("span", "", id="shown"),
        ]
        parts.append(element("div", *controls, class_="controls"))
    return element("header", *parts)


def _nothing() -> Html:
    said = (
        "Nothing recorded: no tribunal ran, no test was sampled, no judge calibrated, "
        "no agent run or conversation finished and no model was called."
    )
    return element("section", element("p", said), id="empty")


def _summary(data: Mapping[str, Any]) -> Html:
    """The session at a glance: how many of each record, and how many failed."""
    tribunals = data.get("tribunals") or []
    samples = data.get("samples") or []
    calibrations = data.get("calibrations") or []
    usage = data.get("usage") or []
    flagged = sorted({str(n) for c in calibrations for n in c.get("flagged") or []})
    costs = [u["cost"] for u in usage if u.get("cost") is not None]
    counts = [
        ("tribunals", len(tribunals), "tribunal runs", _split(tribunals, "outcome")),
        ("samples", len(samples), "sampled tests", _split(samples, "outcome")),
        ("calibrations", len(calibrations), "calibrations", _named("flagged", flagged)),
        ("drift", len(data.get("drift") or []), "verdicts flipped", ""),
        ("runs", len(data.get("runs") or []), "agent runs", ""),
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
