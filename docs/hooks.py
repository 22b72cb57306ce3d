"""MkDocs hooks: the reference tables of options, ini keys and markers, from the plugin itself.

A reference page holds a line ``<!-- reference: options -->`` (or ``ini``, ``markers``);
at build time it becomes a table of what the plugin registers, recorded by calling its
``pytest_addoption`` and ``add_markers`` (``Registration``). The docs cannot drift from the
code, and a page naming a table that does not exist fails the build.

Such a page reads as a placeholder where it is opened as a file (on a code host): it carries
a note, between ``<!-- unbuilt`` and ``<!-- /unbuilt -->``, saying it is generated and how
to build or read it. The build drops the note: the built page has what it promises.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any, cast

import pytest
from mkdocs.exceptions import PluginError

from pytest_harness import plugin

PLACEHOLDER = re.compile(r"^<!-- reference: (?P<table>[\w-]+) -->$", re.MULTILINE)
# The note an unbuilt page shows in place of what the build renders (its links point into
# the repository, outside the site: they go with it).
UNBUILT_NOTE = re.compile(r"^<!-- unbuilt\b.*?^<!-- /unbuilt -->[ \t]*\n", re.M | re.S)


class CombinedParameters(logging.Filter):
    """Drops griffe's two warnings about an ``Args`` entry that names two parameters.

    The package's docstrings describe alternative parameters in one entry
    (``min_accuracy / min_kappa: thresholds ...``); griffe reads ``min_accuracy / min_kappa``
    as one name that is missing from the signature. Every other docstring warning still
    fails the strict build.
    """

    COMBINED = re.compile(r"parameter '\w+( / \w+)+'", re.IGNORECASE)

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.COMBINED.search(record.getMessage())


def on_config(config: Any) -> Any:
    """Install the filter on griffe's logger (as mkdocstrings names it), once."""
    griffe = logging.getLogger("mkdocs.plugins.griffe")
    if not any(isinstance(f, CombinedParameters) for f in griffe.filters):
        griffe.addFilter(CombinedParameters())
    return config


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Drop the page's note to readers of the unbuilt file, render its reference tables and
    list its API namespaces' exports."""
    return _exports(_tables(UNBUILT_NOTE.sub("", markdown), page))


def _tables(markdown: str, page: Any) -> str:
    """Replace each reference placeholder of the page with its table."""

    def table(match: re.Match[str]) -> str:
        name = match["table"]
        if name not in TABLES:
            known = ", ".join(sorted(TABLES))
            raise PluginError(
                f"{page.file.src_uri}: unknown reference table {name!r}; expected one of {known}"
            )
        return TABLES[name]()

    return PLACEHOLDER.sub(table, markdown)


# `::: pytest_harness.team` alone on a line, without options of its own.
AUTODOC = re.compile(r"^::: (?P<module>pytest_harness(?:\.\w+)*)[ \t]*$(?!\n[ \t]+options:)", re.M)


def _exports(markdown: str) -> str:
    """Give each ``::: module`` of a namespace with ``__all__`` exactly those members.

    A namespace re-exports its public names from private modules: its page lists every
    name of its ``__all__``, wherever it is defined, documented or not (an undocumented
    export shows as such, it does not vanish), and nothing else. Filters (``!^_``) still
    choose the members of those classes.
    """

    def members(match: re.Match[str]) -> str:
        exported = getattr(importlib.import_module(match["module"]), "__all__", None)
        if exported is None:
            return match[0]
        listed = "".join(f"\n        - {name}" for name in exported)
        return f"{match[0]}\n    options:\n      members:{listed}"

    return AUTODOC.sub(members, markdown)


class Registration:
    """What the plugin registers: it stands in for pytest's parser (``pytest_addoption``)
    and config (``add_markers``) and records each call, in order."""

    def __init__(self) -> None:
        self.options: dict[str, dict[str, Any]] = {}  # option: its argparse keywords
        self.ini: dict[str, dict[str, Any]] = {}  # key: its help, type and default
        self.markers: dict[str, str] = {}  # signature (after "@pytest.mark."): its help
        plugin.pytest_addoption(cast(pytest.Parser, self))
        plugin.add_markers(cast(pytest.Config, self))

    def getgroup(self, name: str, description: str = "") -> Registration:
        return self

    def addoption(self, name: str, **keywords: Any) -> None:
        self.options[name] = keywords

    def addini(self, name: str, help: str, type: str, default: Any) -> None:
        self.ini[name] = {"help": help, "type": type, "default": default}

    def addinivalue_line(self, name: str, line: str) -> None:
        signature, _, help = line.partition(": ")
        self.markers[signature] = help


def options_table() -> str:
    rows = (
        (
            _anchor(name.lstrip("-"), _code(_usage(name, keywords), ONE_LINE)),
            _option_kind(keywords),
            _default(keywords["default"]),
            _text(keywords["help"]),
        )
        for name, keywords in Registration().options.items()
    )
    return _table(("Option", "Takes", "Default", "Meaning"), rows)


def ini_table() -> str:
    rows = (
        (
            _anchor(name, _code(name, ONE_LINE)),
            key["type"],
            _default(key["default"]),
            _text(key["help"]),
        )
        for name, key in Registration().ini.items()
    )
    return _table(("Ini key", "Type", "Default", "Meaning"), rows)


def markers_table() -> str:
    rows = (
        (
            _anchor(_marker(signature), _code(f"@pytest.mark.{signature}", AT_SPACES)),
            _text(help),
        )
        for signature, help in Registration().markers.items()
    )
    return _table(("Marker", "Meaning"), rows)


# A name in a table cell breaks where the theme lets code break, anywhere (a narrow column
# made ``--harness-record={none,new,al l}``): names stay on one line, a marker's signature
# breaks between its arguments only.
ONE_LINE = "white-space: nowrap"
AT_SPACES = "word-break: normal"

TABLES: dict[str, Callable[[], str]] = {
    "options": options_table,
    "ini": ini_table,
    "markers": markers_table,
}


def _usage(name: str, keywords: dict[str, Any]) -> str:
    """How the option is written: ``--harness-report[=PATH]``, ``--harness-model=MODEL``."""
    if keywords.get("action") is not None:
        return name
    value = f"={keywords.get('metavar') or 'VALUE'}"
    return f"{name}[{value}]" if keywords.get("nargs") == "?" else name + value


def _marker(signature: str) -> str:
    """A marker's name: ``harness`` for ``harness(cassette=None, ...)``."""
    return signature.partition("(")[0]


def _option_kind(keywords: dict[str, Any]) -> str:
    if keywords.get("action") == "store_true":
        return "flag"
    return "optional value" if keywords.get("nargs") == "?" else "value"


def _default(value: object) -> str:
    if value is None or value == "" or value == []:
        return "(not set)"
    if isinstance(value, bool):
        return _code(str(value).lower())
    return _code(str(value))


def _anchor(name: str, cell: str) -> str:
    """The cell with an id, so another page can link ``reference/ini.md#harness_model``."""
    return f'<span id="{name}"></span>{cell}'


def _code(text: str, style: str = "") -> str:
    """Inline code, with a CSS ``style`` (attr_list) if given."""
    return f"`{text}`" + (f'{{ style="{style}" }}' if style else "")


def _text(text: str) -> str:
    """Help text as a table cell: one line, pipes escaped, angle brackets kept literal."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")


def _table(header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
