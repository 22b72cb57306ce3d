"""Reading a recorded response body: its text, its JSON, or its server-sent events (SSE).

SSE is read loosely: ``event:`` names an event, its ``data:`` lines join with newlines, a
blank line ends it, other fields and ``:`` comments are skipped. A last event without its
blank line still counts (a cut-off stream keeps what arrived); one cut mid-JSON is left out
by ``json_events``. Pure (standard library only); nothing here raises on a bad body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["decode", "events", "is_event_stream", "json_events", "loads"]

_LINES = re.compile(r"\r\n|\r|\n")
_FIRST_FIELD = re.compile(r"\A\s*(?:data|event):")


def decode(body: bytes | str | None) -> str | None:
    """The body as text, or None when it is not UTF-8 (or not a body)."""
    if isinstance(body, (bytes, bytearray)):
        try:
            return bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return body if isinstance(body, str) else None


def loads(text: str | None) -> Any:
    """The JSON value of the text, or None when it is not JSON."""
    try:
        return None if text is None else json.loads(text)
    except (ValueError, RecursionError):
        return None


def is_event_stream(headers: Mapping[str, Any], text: str) -> bool:
    """SSE by its content type (headers: name -> value or list of values, any case) or look."""
    items = headers.items() if isinstance(headers, Mapping) else ()
    for name, value in items:
        if isinstance(name, str) and name.lower() == "content-type":
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, str) and "text/event-stream" in v.lower() for v in values):
                return True
    return _FIRST_FIELD.match(text) is not None


def events(text: str) -> Iterator[tuple[str, str]]:
    """``(event name, data)`` of each event with data; the name is ``""`` when none was given."""
    name = ""
    data: list[str] = []
    for line in _LINES.split(text):
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "", []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if data:
        yield name, "\n".join(data)


def json_events(text: str) -> list[tuple[str, Any]]:
    """The events whose data is JSON, decoded; the others (``[DONE]``, a cut event) left out."""
    found = []
    for name, data in events(text):
        try:
            found.append((name, json.loads(data)))
        except (ValueError, RecursionError):
            continue
    return found
