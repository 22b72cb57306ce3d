"""A body as a cassette file stores it: readable JSON when that gives back the same bytes.

A JSON body is stored as the value it holds, ``{"json": value, "form": "compact"}``, and a
server-sent event stream as its events, ``{"events": [{"event": ..., "data": value}],
"form": "compact"}``, and an NDJSON stream (Ollama's) as its lines' values,
``{"lines": [value, ...], "form": "compact+newline"}``: indented with the file, so a
changed prompt or reply is a changed line in a diff, not one long escaped string. ``form``
names how ``json.dumps`` writes the value back (``FORMS``, and ``+newline`` for a trailing
newline). A body is stored so only when
writing it back gives exactly the bytes that were sent or received (key order, spacing,
escapes, number spelling): replay stays byte-exact. Anything else stays text (``string``
for a response, the bare text for a request), or base64 when it is not UTF-8.

An AWS event stream (Bedrock's binary frames) is stored as its frames, ``{"eventstream":
[{"headers": {...}, "json": payload}], "form": "compact"}``; an invoke stream's ``chunk``
payload ``{"bytes": base64(event)}`` with its event decoded in place (``"decoded":
"bytes"``). The same rule holds: stored so only when the frames write back to the same bytes.

Pure functions over plain values: no vcrpy. The SSE text is read by ``_wire.sse``, the one
reader of server-sent events.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from pytest_harness._wire import eventstream, sse


class _GoEncoder(json.JSONEncoder):
    """JSON as Go's ``encoding/json`` writes it (Ollama's bodies): ``<``, ``>``, ``&``, U+2028
    and U+2029 escaped (they occur only inside strings, so the whole text may be replaced)."""

    def encode(self, o: Any) -> str:
        text = super().encode(o)
        for char in "<>&\u2028\u2029":
            text = text.replace(char, f"\\u{ord(char):04x}")
        return text


# How json.dumps writes a value back, by the name a stored body gives it (``compact-go``: as
# Go writes it, Ollama's replies: tried last, when no other form gives the same bytes).
FORMS: dict[str, dict[str, Any]] = {
    "compact": {"separators": (",", ":"), "ensure_ascii": False},
    "compact-ascii": {"separators": (",", ":")},
    "spaced": {"ensure_ascii": False},
    "spaced-ascii": {},
    "indented": {"indent": 2, "ensure_ascii": False},
    "indented-ascii": {"indent": 2},
    "compact-go": {"separators": (",", ":"), "ensure_ascii": False, "cls": _GoEncoder},
}
NEWLINE = "+newline"


def stored(text: str) -> str | dict[str, Any]:
    """How a text body is stored: its JSON value or its events, when either gives the text
    back byte for byte; else the text itself."""
    found = _as_json(text)
    if found is None:
        found = _as_events(text)
    if found is None:
        found = _as_lines(text)
    return text if found is None else found


def is_stored_form(body: Any) -> bool:
    """Whether ``body`` is a stored JSON value, event list, list of JSON lines or event-stream
    frame list (not text, not base64)."""
    return isinstance(body, Mapping) and any(k in body for k in ("json", "events", "lines", FRAMES))


def text(body: Mapping[str, Any]) -> str:
    """The text of a stored JSON value or event list (``stored``'s inverse).

    Raises:
        ValueError: the form is not one of ``FORMS``, or the events are not a list of
            mappings with ``data`` (or ``text``).
    """
    form = str(body.get("form", ""))
    newline = form.endswith(NEWLINE)
    options = FORMS.get(form.removesuffix(NEWLINE))
    if options is None:
        raise ValueError(f"form must be one of {', '.join(FORMS)} (+newline), got {form!r:.40}")
    if "json" in body:
        written = json.dumps(body["json"], **options)
        return written + "\n" if newline else written
    if "lines" in body:
        written = _lines_text(body["lines"], options)
        return written + "\n" if newline else written
    return _events_text(body.get("events"), options)


def stream_events(body: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The events of a stored event list as (name, data): what ``_wire.sse.stream_events``
    reads from its text (``text``), without writing it out. A name is ``""`` when none was
    given; an event whose text is not JSON is left out, but for ``[DONE]``, which ends the
    list as ``(sse.DONE, {})`` (a chat stream that sent it came to its end; what follows it
    is not read)."""
    found: list[tuple[str, Any]] = []
    for event in body.get("events") or ():
        if not isinstance(event, Mapping):
            continue
        name = event.get("event")
        name = name if isinstance(name, str) else ""
        if "data" in event:
            found.append((name, event["data"]))
            continue
        text = str(event.get("text"))
        if text.startswith(sse.DONE):
            return [*found, (sse.DONE, {})]
        try:
            found.append((name, json.loads(text)))
        except (ValueError, RecursionError):
            continue
    return found


def problem(body: Mapping[str, Any]) -> str | None:
    """What makes a stored JSON value, event list or frame list unreadable, or None."""
    try:
        frames_bytes(body) if FRAMES in body else text(body)
    except (ValueError, TypeError, RecursionError) as error:
        return str(error)
    return None


def _as_json(text: str) -> dict[str, Any] | None:
    core = text.removesuffix("\n")
    if not core.startswith(("{", "[")):
        return None
    try:
        value = json.loads(core)
    except (ValueError, RecursionError):
        return None
    form = _form(value, core)
    if form is None:
        return None
    return {"json": value, "form": form + (NEWLINE if core != text else "")}


def _form(value: Any, text: str) -> str | None:
    """The name of the form that writes ``value`` back as ``text``, or None."""
    for name, options in FORMS.items():
        try:
            if json.dumps(value, **options) == text:
                return name
        except (ValueError, RecursionError):
            return None
    return None


def _as_lines(text: str) -> dict[str, Any] | None:
    """An NDJSON body (two JSON objects or arrays or more, one a line, each written in the
    same form) as its lines' values; None for anything else (a cut last line, blank lines),
    which writing the values back would not give byte for byte."""
    core = text.removesuffix("\n")
    lines = core.split("\n")
    values = [value[0] for line in lines if (value := _loads(line))]
    form = _form(values[0], lines[0]) if len(lines) >= 2 and len(values) == len(lines) else None
    if form is None or _lines_text(values, FORMS[form]) != core:
        return None
    return {"lines": values, "form": form + (NEWLINE if core != text else "")}


def _lines_text(lines: Any, options: dict[str, Any]) -> str:
    if not isinstance(lines, list):
        raise ValueError(f"lines must be a list of JSON values, got {type(lines).__name__}")
    return "\n".join(json.dumps(value, **options) for value in lines)


def _as_events(text: str) -> dict[str, Any] | None:
    """An SSE body written the usual way (``event:`` and ``data:`` lines, a blank line after
    each event) as its events (read by ``_wire.sse``); None for anything else (comments, ids,
    retries, CRLF), which writing the events back would not give byte for byte."""
    if not text.endswith("\n\n"):
        return None
    events: list[dict[str, Any]] = []
    form: str | None = None
    for name, data in sse.parse(text):
        event, form = _event(name, data, form)
        events.append(event)
    chosen = form or "compact"
    written = _events_text(events, FORMS[chosen])
    return {"events": events, "form": chosen} if written == text else None


def _event(name: str | None, data: str, form: str | None) -> tuple[dict[str, Any], str | None]:
    """An event as stored: its data as JSON when it is JSON written in the stream's form
    (the first such event's), else as text."""
    event: dict[str, Any] = {} if name is None else {"event": name}
    value = _loads(data)
    found = None if value is None else _form(value[0], data)
    if value is not None and found is not None and form in (None, found):
        event["data"] = value[0]
        return event, found
    event["text"] = data
    return event, form


def _loads(data: str) -> tuple[Any] | None:
    if not data.startswith(("{", "[")):
        return None
    try:
        return (json.loads(data),)
    except (ValueError, RecursionError):
        return None


def _events_text(events: Any, options: dict[str, Any]) -> str:
    if not isinstance(events, list):
        raise ValueError(f"events must be a list, got {type(events).__name__}")
    parts = []
    for event in events:
        if not isinstance(event, Mapping) or ("data" in event) == ("text" in event):
            raise ValueError("each event must be a mapping with 'data' or 'text'")
        name = event.get("event")
        head = f"event: {name}\n" if isinstance(name, str) else ""
        data = json.dumps(event["data"], **options) if "data" in event else str(event["text"])
        parts.append(f"{head}data: {data}\n\n")
    return "".join(parts)


def stored_body(data: bytes | str | None, *, frames: bool = False) -> str | dict[str, Any] | None:
    """How a body is stored (``stored``, or base64); with ``frames`` (a response's), an AWS
    event stream as its frames (``stored_frames``)."""
    if data is None:
        return None
    if isinstance(data, bytes):
        framed = stored_frames(data) if frames else None
        if framed is not None:
            return framed
        try:
            return stored(data.decode("utf-8"))
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(data).decode("ascii")}
    return stored(data)


def body_bytes(body: str | Mapping[str, Any] | None) -> bytes | None:
    """The bytes of a stored body (text, base64, JSON value or events); None for none.

    ``read.read`` checked its shape: a stored form here writes its text back.
    """
    if body is None:
        return None
    if isinstance(body, str):
        return body.encode("utf-8")
    if FRAMES in body:
        return frames_bytes(body)
    if is_stored_form(body):
        return text(body).encode("utf-8")
    if body.get("base64") is not None:
        return base64.b64decode(body["base64"])
    return str(body.get("string") or "").encode("utf-8")


# The stored body field of an AWS event stream's frames.
FRAMES = "eventstream"
# A frame field: its payload's ``bytes`` (base64 of JSON) is stored as that JSON.
_DECODED = "decoded"


def stored_frames(data: bytes) -> dict[str, Any] | None:
    """An AWS event-stream body as its frames (string headers, JSON payloads), or None: not
    one, or writing the frames back would not give ``data`` byte for byte."""
    frames = eventstream.decode(data)
    if not frames:
        return None
    texts = [f.payload.decode("utf-8", "replace") for f in frames]
    found_forms = [_form(v[0], t) for v, t in ((_loads(t), t) for t in texts) if v is not None]
    forms = set(found_forms) - {None}
    form = forms.pop() if len(forms) == 1 else None
    if form is None or any(_headers(f) is None for f in frames):
        return None
    found = {FRAMES: [_stored_frame(f, form) for f in frames], "form": form}
    try:
        return found if frames_bytes(found) == data else None
    except (ValueError, TypeError, RecursionError):
        return None


def _headers(frame: eventstream.Frame) -> dict[str, str] | None:
    """A frame's headers as a mapping, when all are strings and named once."""
    kept = {h.name: h.value for h in frame.headers if h.type == 7 and isinstance(h.value, str)}
    return kept if len(kept) == len(frame.headers) else None


def _stored_frame(frame: eventstream.Frame, form: str) -> dict[str, Any]:
    """A frame as stored: its payload as JSON (an invoke chunk's event too) when written in
    the stream's form, else as base64."""
    stored: dict[str, Any] = {"headers": _headers(frame)}
    raw = frame.payload.decode("utf-8", "replace")
    value = _loads(raw)
    if value is None or _form(value[0], raw) != form:
        return {**stored, "base64": base64.b64encode(frame.payload).decode("ascii")}
    payload = value[0]
    inner = _chunk_event(payload, form)
    if inner is not None:
        return {**stored, "json": {**payload, "bytes": inner[0]}, _DECODED: "bytes"}
    return {**stored, "json": payload}


def _chunk_event(payload: Any, form: str) -> tuple[Any] | None:
    """The event an invoke chunk's ``bytes`` holds, when it is JSON in ``form``."""
    if not isinstance(payload, dict) or not isinstance(payload.get("bytes"), str):
        return None
    try:
        raw = base64.b64decode(payload["bytes"], validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    value = _loads(raw)
    return value if value is not None and _form(value[0], raw) == form else None


def frames_bytes(body: Mapping[str, Any]) -> bytes:
    """The bytes of a stored frame list (``stored_frames``' inverse).

    Raises:
        ValueError: the form is not one of ``FORMS``, or a frame is not a mapping of string
            ``headers`` with a ``json`` or ``base64`` payload.
    """
    form = str(body.get("form", ""))
    options = FORMS.get(form)
    if options is None:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, got {form!r:.40}")
    frames = body.get(FRAMES)
    if not isinstance(frames, list):
        raise ValueError(f"{FRAMES} must be a list, got {type(frames).__name__}")
    return eventstream.encode(_frame(item, options) for item in frames)


def _frame(item: Any, options: dict[str, Any]) -> eventstream.Frame:
    headers = item.get("headers") if isinstance(item, Mapping) else None
    if not isinstance(headers, Mapping) or ("json" in item) == ("base64" in item):
        raise ValueError("each frame must be a mapping with 'headers' and 'json' or 'base64'")
    if not all(isinstance(v, str) for v in headers.values()):
        raise ValueError("a frame's headers must be text")
    kept = tuple(eventstream.Header(str(name), 7, value) for name, value in headers.items())
    if "base64" in item:
        return eventstream.Frame(kept, base64.b64decode(str(item["base64"])))
    payload = item["json"]
    if item.get(_DECODED) == "bytes" and isinstance(payload, Mapping):
        inner = json.dumps(payload.get("bytes"), **options).encode("utf-8")
        payload = {**payload, "bytes": base64.b64encode(inner).decode("ascii")}
    return eventstream.Frame(kept, json.dumps(payload, **options).encode("utf-8"))
