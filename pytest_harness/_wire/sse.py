"""Server-sent events: the one reader of an SSE body, for every stream the harness reads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_harness._wire._json import content_types

_LINES = re.compile(r"\r\n|\r|\n")
_FIRST_FIELD = re.compile(r"\A\s*(?:data|event):")
# The data of the last event of an OpenAI-style stream (Chat Completions and the providers
# compatible with it): not JSON. The SDK stops reading at an event whose data starts so.
DONE = "[DONE]"


def is_event_stream(headers: Mapping[str, Any], text: str) -> bool:
    """SSE by its content type (headers: name -> value or list of values, any case) or look."""
    if any("text/event-stream" in kind for kind in content_types(headers)):
        return True
    return _FIRST_FIELD.match(text) is not None


def parse(text: str) -> Iterator[tuple[str | None, str]]:
    """``(event name, data)`` of each event with data; the name is None when none was given
    (a stored event list tells ``event: `` with no name from no ``event`` line at all)."""
    name: str | None = None
    data: list[str] = []
    for line in _LINES.split(text):
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = None, []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if data:
        yield name, "\n".join(data)


def events(text: str) -> Iterator[tuple[str, str]]:
    """``(event name, data)`` of each event with data; the name is ``""`` when none was given."""
    for name, data in parse(text):
        yield name or "", data


def json_events(text: str) -> list[tuple[str, Any]]:
    """The events whose data is JSON, decoded; the others (``[DONE]``, a cut event) left out."""
    return [(name, value[0]) for name, data in events(text) if (value := _decoded(data))]


def stream_events(text: str) -> list[tuple[str, Any]]:
    """A model stream's events whose data is JSON, decoded, up to its ``data: [DONE]``, kept
    last as ``(DONE, {})`` (``ended`` finds it); what follows it is not read, as the SDK
    reads none of it. Other events whose data is not JSON (a cut one) are left out."""
    found: list[tuple[str, Any]] = []
    for name, data in events(text):
        if data.startswith(DONE):
            return [*found, (DONE, {})]
        value = _decoded(data)
        if value:
            found.append((name, value[0]))
    return found


def ended(events: Sequence[tuple[str, Any]]) -> tuple[list[tuple[str, Any]], bool]:
    """A model stream's events without the ``(DONE, {})`` that ends them, and whether it came."""
    if events and tuple(events[-1]) == (DONE, {}):
        return list(events[:-1]), True
    return list(events), False


def _decoded(data: str) -> tuple[Any] | None:
    """The JSON value of an event's data, in a 1-tuple (JSON has ``null``), or None."""
    try:
        return (json.loads(data),)
    except (ValueError, RecursionError):
        return None
