"""Newline-delimited JSON (``application/x-ndjson``): the one reader of an NDJSON body, as
Ollama streams its replies (one JSON object a line)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_harness._wire._json import content_types

# The content types of a body of JSON lines.
_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")


def by_type(headers: Mapping[str, Any]) -> bool:
    """Whether the headers (name -> value or list of values, any case) say NDJSON."""
    return any(kind.startswith(_TYPES) for kind in content_types(headers))


def by_look(text: str) -> bool:
    """Whether the text looks like JSON lines: two lines or more, each whole line a JSON
    object (the last may be cut short, in a stream cut off)."""
    whole = text.split("\n")[:-1]  # the text after the last newline may be cut short
    return len(text.strip().split("\n")) >= 2 and all(_decoded(line) for line in whole)


def values(text: str) -> list[Any]:
    """The JSON values of the lines, in order; a line that is not JSON (a cut one, a blank
    one) left out."""
    return [value[0] for line in text.split("\n") if (value := _decoded(line))]


def _decoded(line: str) -> tuple[Any] | None:
    """The JSON object or array of a line, in a 1-tuple, or None."""
    if not line.lstrip().startswith(("{", "[")):
        return None
    try:
        return (json.loads(line),)
    except (ValueError, RecursionError):
        return None
