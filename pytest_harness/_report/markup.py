"""The HTML report's building blocks: escaped text, elements, tables, folded values."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from pytest_harness._report.text import clip

# Longer text (a judge's reason, a tool's result) shows its first line, opening on a click.
_FOLD_AT = 160


def text(value: Any) -> Markup:
    """``value`` as HTML text, escaped (quotes included); None is empty."""
    return Markup("") if value is None else escape(str(value))


def markup(value: Any) -> Markup:
    """``value`` as it is when it is ``Markup``, else escaped (``text``)."""
    return value if isinstance(value, Markup) else text(value)


def join(parts: Iterable[Any], separator: str = "") -> Markup:
    """The parts one after the other (each escaped unless it is ``Markup``)."""
    return text(separator).join(markup(part) for part in parts)


def element(name: str, *content: Any, **attributes: Any) -> Markup:
    """``<name ...>content</name>``: content is escaped unless it is ``Markup``, and so is
    every attribute's value.

    ``class_`` is ``class``; underscores become dashes (``data_test`` is ``data-test``); an
    attribute that is None or False is left out, True is written bare.
    """
    written = []
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        attribute = key.rstrip("_").replace("_", "-")
        written.append(f" {attribute}" if value is True else f' {attribute}="{text(value)}"')
    return Markup(f"<{name}{''.join(written)}>{join(content)}</{name}>")


def cells(*values: Any) -> Markup:
    """A row's ``<td>`` cells (each value escaped unless it is ``Markup``)."""
    return join(element("td", value) for value in values)


def table(headers: Sequence[str], body: Iterable[Markup], **attributes: Any) -> Markup:
    """A table: a header row, then ``body`` (``<tbody>`` groups or ``<tr>`` rows)."""
    head = element("thead", element("tr", join(element("th", h) for h in headers)))
    return element("table", head, join(body), **attributes)


def section(key: str, title: str, *content: Markup) -> Markup:
    """One section of the page: ``<section id=key>`` with its heading."""
    return element("section", element("h2", text(title)), *content, id=key)


def folded(value: Any) -> Markup:
    """Text shown in full (``.full``); long or multi-line text folds into ``<details>``, its
    start as the summary, so a table of reasons stays readable."""
    if value is None or value == "":
        return Markup("")
    full = value if isinstance(value, str) else str(value)
    if len(full) <= _FOLD_AT and "\n" not in full:
        return element("span", full, class_="full")
    return element(
        "details", element("summary", clip(full, 100)), element("div", full, class_="full")
    )


def outcome(value: str | None, label: str | None = None) -> Markup:
    """A coloured verdict: pass, fail, error (or a neutral word such as ``none``)."""
    kind = value if value in ("pass", "fail", "error") else "other"
    return element("span", text(label or value or "none"), class_=f"outcome {kind}")


# A test's outcome as pytest reports it, and the verdict colour it takes.
_TEST_KINDS = {"passed": "pass", "failed": "fail", "error": "error", "xfailed": "xfailed"}


def test_outcome(value: str | None) -> Markup:
    """A test's outcome (passed, failed, error, xfailed, xpassed, skipped), coloured as a
    verdict is; an expected failure muted, never as a failure."""
    if not value:
        return Markup("")
    kind = _TEST_KINDS.get(value, "other")
    return element("span", value, class_=f"outcome test-outcome {kind}")


def verdict(value: str | None, test: str | None) -> Markup:
    """A tribunal's verdict; in an xfailed test a failing one is muted and says ``xfailed``."""
    if test == "xfailed" and value in ("fail", "error"):
        return element("span", f"{value} (xfailed)", class_="outcome xfailed")
    return outcome(value)


def vote(passed: bool | None, value: Any = None) -> Markup:
    """A judge's vote: pass or fail, with its value when that is not a plain boolean."""
    if passed is None:
        return outcome(None, "none" if value is None else repr(value))
    word = "pass" if passed else "fail"
    shown = word if value is None or isinstance(value, bool) else f"{word} ({value!r})"
    return outcome(word, shown)


def count(mapping: Mapping[str, Any] | None, *path: str) -> int:
    """``mapping[a][b]...`` as a whole number, 0 where a key is missing."""
    value: Any = mapping or {}
    for key in path:
        value = value.get(key, 0) if isinstance(value, Mapping) else 0
    return value if isinstance(value, int) else 0


def entry(
    kind: str,
    row: Markup,
    hooks: Mapping[str, Any],
    *,
    detail: Markup | None = None,
    width: int = 1,
) -> Markup:
    """One record of a table: its row and, below it, its details, as one ``<tbody>``.

    The filter box and the failures-only toggle show or hide whole entries, so a row and its
    details go together. ``hooks`` become ``data-*`` attributes of the entry and of the row
    (``test``, ``outcome``, ...): what the page's script and the tests read.
    """
    data = {f"data_{key}": value for key, value in hooks.items()}
    rows = [element("tr", row, class_=kind, **data)]
    if detail:
        rows.append(element("tr", element("td", detail, colspan=width), class_="detail"))
    return element("tbody", *rows, class_="entry", **data)
