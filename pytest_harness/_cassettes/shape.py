"""The shape of a cassette file, checked as a file the harness did not write is read, so that
no later reader (vcrpy, matching, redaction, the secret scan, a merge) meets a value of a
type it does not expect.

``SCHEMA`` is a JSON Schema of the fields the harness reads; every other field is free-form
(``"jsonValue": true``). jsonschema is imported only when a file is checked: a file whose
checksum holds (every file the harness wrote) is not. What JSON Schema cannot say, since it
assumes JSON, is code: the values YAML can hold and JSON cannot, the nesting depth, the
length of an integer.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from pytest_harness._cassettes import bodies
from pytest_harness._cassettes.checksum import CHECKSUM, MATCH_KEY, MATCH_KEYS
from pytest_harness._cassettes.interactions import FAILURE

# Free-form values (metadata, fields the harness does not read) nest at most this deep. The
# harness writes a handful of levels; the limit keeps every later walk of the data (the
# secret scan, json.dumps, vcrpy's deepcopy) far from Python's recursion limit.
MAX_DEPTH = 100
# Python writes integers of up to 4,300 digits (about 14,284 bits); YAML can hold longer ones.
_INT_BITS = 14_000

# Beside JSON Schema's keywords: "expected" is what a message says the value must be (else
# its type's name); "title" names a mapping's keys in a message; "jsonValue" is any value a
# JSON file can hold (``_json_problem``); the formats are ``_FORMATS``.
_KEYS = {"type": "string"}
_FREE = {"jsonValue": True}
_TEXT = {"type": ["string", "null"]}
_BASE64 = {"type": ["string", "null"], "format": "base64"}
_HEADERS = {
    "type": ["object", "null"],
    "expected": "a mapping of names to lists of text",
    "propertyNames": {"type": "string", "title": "a name"},
    "additionalProperties": {
        "type": ["string", "array"],
        "expected": "text or a list of text",
        "minItems": 1,
        "items": {"type": "string"},
    },
}
_REQUEST = {
    "type": "object",
    "propertyNames": _KEYS,
    "required": ["method", "uri"],
    "properties": {
        "method": {"type": "string"},
        "uri": {"type": "string", "format": "absolute-url"},
        "headers": _HEADERS,
        "body": {
            "type": ["string", "object", "null"],
            "expected": "text or a mapping with 'base64' or 'json'",
            "propertyNames": _KEYS,
            "properties": {"json": True, "form": True, "base64": _BASE64},
            "additionalProperties": _FREE,
            "if": {"type": "object", "required": ["json"]},
            "then": {"format": "stored-body"},
            "else": {"required": ["base64"]},
        },
    },
    "additionalProperties": _FREE,
}
_RESPONSE = {
    "type": "object",
    "propertyNames": _KEYS,
    "required": ["status"],
    "properties": {
        "status": {
            "type": "object",
            "propertyNames": _KEYS,
            "required": ["code"],
            "properties": {
                "code": {
                    "type": "integer",
                    "allOf": [
                        {"minimum": 100, "maximum": 599, "expected": "an HTTP status (100-599)"}
                    ],
                },
                "message": _TEXT,
            },
            "additionalProperties": _FREE,
        },
        "headers": _HEADERS,
        "body": {
            "type": ["object", "null"],
            "expected": "a mapping with 'string', 'base64', 'json' or 'events'",
            "propertyNames": _KEYS,
            "properties": {
                "string": _TEXT,
                "base64": _BASE64,
                "json": True,
                "events": True,
                "form": True,
            },
            "additionalProperties": _FREE,
            "if": {"anyOf": [{"required": ["json"]}, {"required": ["events"]}]},
            "then": {"format": "stored-body"},
        },
    },
    "additionalProperties": _FREE,
}
_INTERACTION = {
    "type": "object",
    "expected": "a mapping with 'request' and 'response'",
    "propertyNames": _KEYS,
    # A call that got no reply keeps how it failed in place of one (``interactions.Failure``).
    "if": {"required": [FAILURE]},
    "then": {"required": ["request"]},
    "else": {"required": ["request", "response"]},
    "properties": {
        "request": _REQUEST,
        "response": _RESPONSE,
        FAILURE: {
            "type": "object",
            "properties": {
                "kind": {"enum": ["abandoned", "error"], "expected": "'abandoned' or 'error'"},
                "type": {"type": "string"},
            },
            "required": ["kind", "type"],
            "jsonValue": True,
        },
        MATCH_KEY: _TEXT,
    },
    "additionalProperties": _FREE,
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "expected": "a mapping with 'interactions'",
    "propertyNames": _KEYS,
    "properties": {
        "version": {"type": ["integer", "null"]},
        "metadata": {"type": ["object", "null"], "jsonValue": True},
        CHECKSUM: _TEXT,
        MATCH_KEYS: {
            "type": ["object", "null"],
            "expected": "a mapping with 'ignore' and 'blank', lists of text",
            "required": ["ignore", "blank"],
            "properties": {
                "ignore": {"type": "array", "items": {"type": "string"}},
                "blank": {"type": "array", "items": {"type": "string"}},
            },
            "jsonValue": True,
        },
        "interactions": {"type": ["array", "null"], "items": _INTERACTION},
    },
    "additionalProperties": _FREE,
}


def problem(data: Any) -> str | None:
    """What makes parsed cassette ``data`` unreadable (the part, what is wrong), or None."""
    too_long = _long_integer(data)  # first: jsonschema's messages would not write one out
    if too_long is not None:
        prefix, field = _place(too_long[0], data)
        return f"{prefix}{field or 'the file'} {too_long[1]}"
    error = next(_validator().iter_errors(data), None)
    if error is None:
        return None
    prefix, field = _place(list(error.absolute_path), data)
    return prefix + _message(error, field, "it" if prefix else "the file")


def _place(path: list[Any], data: Any) -> tuple[str, str]:
    """Where ``path`` points, as messages say it: ``("interaction 3 of 3: ", "request.uri")``."""
    prefix = ""
    if len(path) >= 2 and path[0] == "interactions" and isinstance(path[1], int):
        prefix = f"interaction {path[1] + 1} of {len(data['interactions'])}: "
        path = path[2:]
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)
    return prefix, field.removeprefix(".")


@functools.cache
def _validator() -> Any:
    """``SCHEMA``'s validator, with its own keyword and formats (built once)."""
    import jsonschema

    def json_value(validator: Any, on: bool, instance: Any, schema: Any) -> Iterator[Any]:
        found = _json_problem(instance) if on else None
        if found is not None:
            yield jsonschema.ValidationError(found[1], path=found[0])

    checker = jsonschema.FormatChecker(formats=())
    for name, check in _FORMATS.items():
        checker.checks(name, raises=ValueError)(check)
    extended = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator, validators={"jsonValue": json_value}
    )
    return extended(SCHEMA, format_checker=checker)


def _message(error: Any, field: str, whole: str) -> str:
    """What is wrong with ``field`` (empty: the ``whole`` file, or interaction)."""
    schema, value, kind = error.schema, error.instance, error.validator
    if kind == "jsonValue":
        return f"{field} {error.message}"
    if kind == "format":
        return f"{field}{error.cause}"
    if kind == "required":
        missing = next(name for name in error.validator_value if name not in value)
        return f"{field}.{missing} is missing" if field else f"{missing} is missing"
    if "propertyNames" in error.relative_schema_path:
        named = schema.get("title", "a key")
        return f"{field or whole} has {named} that is not text: {_kind(value)}"
    expected = schema.get("expected")
    if kind == "type" and expected is None:
        types = error.validator_value
        types = [types] if isinstance(types, str) else types
        expected = " or ".join(_TYPE_NAMES[name] for name in types if name != "null")
    if not field:
        return f"expected {expected}, got {_kind(value)}"
    return f"{field} must be {expected}, got {_kind(value)}"


_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "text", "integer": "an integer"}


def _kind(value: Any) -> str:
    """What a value is, for messages: its type and a short excerpt (never all of a big one)."""
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        count = len(value)
        name = "a mapping" if isinstance(value, dict) else "a list"
        return f"{name} of {count} item{'' if count == 1 else 's'}"
    if isinstance(value, int) and value.bit_length() > _INT_BITS:
        return f"an integer of {value.bit_length()} bits"
    shown = repr(value[:60] if isinstance(value, (str, bytes)) else value)
    name = _KINDS.get(type(value)) or f"a {type(value).__name__} value"
    return f"{name} ({shown[:80]})"


_KINDS = {
    dict: "a mapping",
    list: "a list",
    str: "text",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
}


def _json_problem(value: Any) -> tuple[list[Any], str] | None:
    """Where in ``value`` (a path under it) it holds what JSON cannot (a YAML date, bytes, a
    non-text key), repeats a mapping or list (a YAML alias), or nests deeper than
    ``MAX_DEPTH``; and what. None when it is plain JSON."""
    seen: set[int] = set()
    todo: list[tuple[Any, list[Any], int]] = [(value, [], 0)]
    while todo:
        node, at, depth = todo.pop()
        if isinstance(node, (dict, list)):
            if depth >= MAX_DEPTH:
                return [], f"nests deeper than {MAX_DEPTH} levels"
            if id(node) in seen:  # json.dumps would write it out again (forever, if a cycle)
                return at, "repeats a value (a YAML alias): write it out in full"
            seen.add(id(node))
            if isinstance(node, list):
                todo += [(child, [*at, i], depth + 1) for i, child in enumerate(node)]
                continue
            for key, child in node.items():
                if not isinstance(key, str):
                    return at, f"has a key that is not text: {_kind(key)}"
                todo.append((child, [*at, key], depth + 1))
        elif node is not None and not isinstance(node, (str, int, float)):
            return at, f"is {_kind(node)}, which a JSON cassette cannot hold"
    return None


def _long_integer(data: Any) -> tuple[list[Any], str] | None:
    """Where the file holds an integer too long to write as JSON (YAML can hold one)."""
    seen: set[int] = set()
    todo: list[tuple[Any, list[Any]]] = [(data, [])]
    while todo:
        node, at = todo.pop()
        if isinstance(node, (dict, list)) and id(node) not in seen:
            seen.add(id(node))
            pairs = node.items() if isinstance(node, dict) else enumerate(node)
            todo += [(child, [*at, key]) for key, child in pairs]
        elif isinstance(node, int) and node.bit_length() > _INT_BITS:
            return at, f"is {_kind(node)}, too long to write as JSON"
    return None


def _absolute_url(uri: Any) -> bool:
    if not isinstance(uri, str):
        return True
    try:
        parts = urlsplit(uri)
        _ = parts.port  # raises ValueError for a port that is not a number in 0-65535
    except ValueError as error:
        raise ValueError(f" is not a URL ({error}): {uri!r:.100}") from None
    if not parts.scheme or not parts.netloc:
        raise ValueError(f" must be an absolute URL, got {uri!r:.100}")
    return True


def _base64(text: Any) -> bool:
    try:
        base64.b64decode(text) if isinstance(text, str) else None
    except binascii.Error as error:
        raise ValueError(f" is not base64 ({error})") from None
    return True


def _stored_body(body: Any) -> bool:
    found = bodies.problem(body) if isinstance(body, Mapping) else None
    if found is not None:
        raise ValueError(f": {found}")
    return True


_FORMATS = {"absolute-url": _absolute_url, "base64": _base64, "stored-body": _stored_body}
