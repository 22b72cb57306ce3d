"""The shape of a cassette, checked once as a file is read, so that no later reader (vcrpy,
matching, redaction, the secret scan, a merge) meets a value of a type it does not expect.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pytest_harness._cassettes import bodies
from pytest_harness._cassettes.checksum import CHECKSUM, MATCH_KEY, MATCH_KEYS
from pytest_harness._cassettes.interactions import FAILURE, failure

# The shape of a cassette, checked once as a file is read, so that no later reader (vcrpy,
# matching, redaction, the secret scan, a merge) meets a value of a type it does not expect.

# Free-form values (metadata, fields the harness does not read) nest at most this deep. The
# harness writes a handful of levels; the limit keeps every later walk of the data (the
# secret scan, json.dumps, vcrpy's deepcopy) far from Python's recursion limit.
MAX_DEPTH = 100

_KINDS = {
    dict: "a mapping",
    list: "a list",
    str: "text",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
}
# The schemes of the exchanges that are not HTTP (``store.HarnessCassette.lookup``), whose URI
# names what they are: ``tool:<name>`` (a recorded tool's call), ``stdio:...`` (MCP over stdio).
_EXCHANGES = frozenset({"tool", "stdio"})
# Python writes integers of up to 4,300 digits (about 14,284 bits); YAML can hold longer ones.
_INT_BITS = 14_000
# The fields the harness reads, by where they sit; any other field is free-form.
_READ = {
    "": frozenset({"version", "metadata", "interactions"}),
    "interaction": frozenset({"request", "response", FAILURE}),
    "request.": frozenset({"method", "uri", "body", "headers"}),
    "request.body.": frozenset({"base64", "json", "lines", "form"}),
    "response.": frozenset({"status", "headers", "body"}),
    "response.status.": frozenset({"code", "message"}),
    "response.body.": frozenset(
        {"string", "base64", "json", "events", "lines", "eventstream", "form"}
    ),
}


def problem(data: Any) -> str | None:
    """What makes parsed cassette ``data`` unreadable (the part, what is wrong), or None."""
    if not isinstance(data, dict):
        return f"expected a mapping with 'interactions', got {_kind(data)}"
    problem = (
        _free(data, "")
        or _typed(data, "version", int)
        or _plain(data.get("metadata"), "metadata")
        or _typed(data, "metadata", dict)
        or _typed(data, "interactions", list)
        or _typed(data, CHECKSUM, str)
        or _settings_problem(data.get(MATCH_KEYS))
    )
    if problem is not None:
        return problem
    interactions = data.get("interactions") or []
    for number, item in enumerate(interactions, 1):
        problem = _interaction(item)
        if problem is not None:
            return f"interaction {number} of {len(interactions)}: {problem}"
    return None


def _settings_problem(settings: Any) -> str | None:
    """The problem with the file's ``match_keys`` (``ignore`` and ``blank``: lists of text;
    it is plain JSON: ``_free`` checked it)."""
    if settings is None:
        return None
    expected = f"{MATCH_KEYS} must be a mapping with 'ignore' and 'blank', lists of text"
    if not isinstance(settings, dict):
        return f"{expected}, got {_kind(settings)}"
    for name in ("ignore", "blank"):
        values = settings.get(name)
        if not (isinstance(values, list) and all(isinstance(value, str) for value in values)):
            return f"{expected}; {MATCH_KEYS}.{name} is {_kind(values)}"
    return None


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


def _free(node: dict[Any, Any], part: str) -> str | None:
    """The first problem (``_plain``) in the fields of ``node`` the harness does not read.

    ``part`` names where ``node`` sits (a key of ``_READ``).
    """
    read, where = _READ[part], part if part.endswith(".") else ""
    for key, value in node.items():
        if not isinstance(key, str):
            named = where.rstrip(".") or ("it" if part else "the file")
            return f"{named} has a key that is not text: {_kind(key)}"
        if key not in read:
            problem = _plain(value, f"{where}{key}")
            if problem is not None:
                return problem
    return None


def _plain(value: Any, where: str) -> str | None:
    """Where ``value`` holds what JSON cannot (a YAML date, bytes, a non-text key), nests
    deeper than ``MAX_DEPTH``, or repeats a mapping or list (a YAML alias); else None."""
    seen: set[int] = set()
    todo: list[tuple[Any, str, int]] = [(value, where, 0)]
    while todo:
        node, at, depth = todo.pop()
        if isinstance(node, (dict, list)):
            if depth >= MAX_DEPTH:
                return f"{where} nests deeper than {MAX_DEPTH} levels"
            if id(node) in seen:  # json.dumps would write it out again (forever, if a cycle)
                return f"{at} repeats a value (a YAML alias): write it out in full"
            seen.add(id(node))
            if isinstance(node, list):
                todo += [(child, f"{at}[{i}]", depth + 1) for i, child in enumerate(node)]
                continue
            for key, child in node.items():
                if not isinstance(key, str):
                    return f"{at} has a key that is not text: {_kind(key)}"
                todo.append((child, f"{at}.{key}", depth + 1))
        elif node is not None and not isinstance(node, (str, int, float)):
            return f"{at} is {_kind(node)}, which a JSON cassette cannot hold"
        elif isinstance(node, int) and node.bit_length() > _INT_BITS:
            return f"{at} is {_kind(node)}, too long to write as JSON"
    return None


def _typed(node: Mapping[str, Any], key: str, expected: type, where: str = "") -> str | None:
    """The problem with ``node[key]``: absent or null is fine, else it must be ``expected``."""
    value = node.get(key)
    if value is None or (isinstance(value, expected) and not isinstance(value, bool)):
        return None
    return f"{where}{key} must be {_KINDS[expected]}, got {_kind(value)}"


def _required(node: Mapping[str, Any], key: str, expected: type, where: str) -> str | None:
    if key not in node:
        return f"{where}{key} is missing"
    if node[key] is None:
        return f"{where}{key} must be {_KINDS[expected]}, got null"
    return _typed(node, key, expected, where)


def _interaction(item: Any) -> str | None:
    if not isinstance(item, dict):
        return f"expected a mapping with 'request' and 'response', got {_kind(item)}"
    if FAILURE in item:  # a call that got no reply: how it failed, in place of one
        return (
            _free(item, "interaction")
            or _required(item, "request", dict, "")
            or _request(item["request"])
            or _failure_problem(item[FAILURE])
            or _typed(item, MATCH_KEY, str)
        )
    return (
        _free(item, "interaction")
        or _required(item, "request", dict, "")
        or _required(item, "response", dict, "")
        or _request(item["request"])
        or _response(item["response"])
        or _typed(item, MATCH_KEY, str)  # free-form otherwise, as latency_s is
    )


def _failure_problem(value: Any) -> str | None:
    if failure({FAILURE: value}) is None:
        return (
            f"{FAILURE} must be a mapping with 'kind' ('abandoned' or 'error'), 'after_s', "
            f"'type' and 'message', got {_kind(value)}"
        )
    return _plain(value, FAILURE)


def _request(request: dict[str, Any]) -> str | None:
    body = request.get("body")
    return (
        _free(request, "request.")
        or _required(request, "method", str, "request.")
        or _required(request, "uri", str, "request.")
        or _url(request["uri"])
        or _headers(request, "request.")
        or (None if body is None or isinstance(body, str) else _request_body(body))
    )


def _request_body(body: Any) -> str | None:
    if not isinstance(body, dict):
        return f"request.body must be text or a mapping with 'base64' or 'json', got {_kind(body)}"
    if "json" in body or "lines" in body:  # lines: a JSON Lines body
        return _free(body, "request.body.") or _stored_form(body, "request.body")
    return _free(body, "request.body.") or _base64(body, "request.body.", required=True)


def _stored_form(body: dict[str, Any], where: str) -> str | None:
    problem = bodies.problem(body)
    return None if problem is None else f"{where}: {problem}"


def _response(response: dict[str, Any]) -> str | None:
    return (
        _free(response, "response.")
        or _required(response, "status", dict, "response.")
        or _status(response["status"])
        or _headers(response, "response.")
        or _response_body(response.get("body"))
    )


def _status(status: dict[str, Any]) -> str | None:
    where = "response.status."
    problem = (
        _free(status, where)
        or _required(status, "code", int, where)
        or _typed(status, "message", str, where)
    )
    if problem is None and not 100 <= status["code"] <= 599:
        problem = f"{where}code must be an HTTP status (100-599), got {_kind(status['code'])}"
    return problem


def _response_body(body: Any) -> str | None:
    where = "response.body."
    if body is None:
        return None
    if not isinstance(body, dict):
        return (
            "response.body must be a mapping with 'string', 'base64', 'json' or 'events', "
            f"got {_kind(body)}"
        )
    if bodies.is_stored_form(body):
        return _free(body, where) or _stored_form(body, "response.body")
    return _free(body, where) or _typed(body, "string", str, where) or _base64(body, where)


def _url(uri: str) -> str | None:
    try:
        parts = urlsplit(uri)
        _ = parts.port  # raises ValueError for a port that is not a number in 0-65535
    except ValueError as error:
        return f"request.uri is not a URL ({error}): {uri!r:.100}"
    if parts.scheme in _EXCHANGES and (parts.netloc or parts.path):
        return None
    if not parts.scheme or not parts.netloc:
        return f"request.uri must be an absolute URL, got {uri!r:.100}"
    return None


def _headers(message: Mapping[str, Any], where: str) -> str | None:
    headers = message.get("headers")
    if headers is None:
        return None
    if not isinstance(headers, dict):
        return f"{where}headers must be a mapping of names to lists of text, got {_kind(headers)}"
    for name, values in headers.items():
        if not isinstance(name, str):
            return f"{where}headers has a name that is not text: {_kind(name)}"
        # A list of text; the usual list of one is checked first, fast (1,000s per cassette).
        if isinstance(values, list) and len(values) == 1 and isinstance(values[0], str):
            continue
        listed = values if isinstance(values, list) else [values]
        if not listed or [value for value in listed if not isinstance(value, str)]:
            return f"{where}headers.{name} must be text or a list of text, got {_kind(values)}"
    return None


def _base64(body: dict[str, Any], where: str, *, required: bool = False) -> str | None:
    problem = (_required if required else _typed)(body, "base64", str, where)
    if problem is not None or body.get("base64") is None:
        return problem
    try:
        base64.b64decode(body["base64"])
    except binascii.Error as error:
        return f"{where}base64 is not base64 ({error})"
    return None
