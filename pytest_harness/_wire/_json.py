"""Typed reads of untrusted JSON: a value is read only when it has the expected type."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def as_str(value: Any) -> str:
    """The value when it is a string, else ""."""
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> int:
    """The value when it is an integer (not a boolean), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_dict(value: Any) -> dict[str, Any]:
    """The value when it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (other items left out); [] when it is no list."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def content_types(headers: Any) -> list[str]:
    """The content type a response's headers give (name -> value or list of values, any
    case, as a cassette stores them), lower-cased; [] when none is given."""
    items = headers.items() if isinstance(headers, Mapping) else ()
    for name, value in items:
        if isinstance(name, str) and name.lower() == "content-type":
            values = value if isinstance(value, list) else [value]
            return [v.lower() for v in values if isinstance(v, str)]
    return []


def json_text(value: Any) -> str:
    """A value as text: a string as it is, other JSON written out (keys sorted), None as ""."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)


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
    except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return None
