"""How a request finds its recording: a canonical key, and a readable account of a miss.

Two requests match when method, scheme, host, port, path, query and JSON body agree, the
body compared in canonical form (keys sorted, volatile fields removed on both sides).
Loopback hosts match without their port: a local model server gets a new free port every
session, and a recording made against one port must replay against another.

A request the model seam made carries its call number in ``SEAM_HEADER`` (the cassette's
call hook adds it): the traffic check tells the seam's calls from the application's by the
request itself. The header is never matched on, and never saved (``untagged``).

A seam call also has a key of what the seam was asked (``seam_key``): model, messages,
tools, response format, parameters and endpoint, before litellm builds any request. The
cassette stores it beside the call's interaction, and replay answers the seam call by it
without building the request (``_model.seam``'s fast path), falling back to the HTTP match.

Pure functions over plain values: no vcrpy, no litellm.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, TypeAlias
from urllib.parse import parse_qsl, urlencode, urlsplit

from pytest_harness import _wire

RequestKey: TypeAlias = tuple[str, str, str, str, str, str, str]

_DEFAULT_PORTS = {"http": "80", "https": "443"}
_LOOPBACK_NAMES = {"localhost", "::1", "[::1]"}
_LOOPBACK = ("localhost", "127.0.0.1", "::1")

SEAM_HEADER = "x-pytest-harness-call"
SEAM_FIELD = "seam"  # the interaction field of a cassette file that keeps a seam call's key


def seam_call(headers: Mapping[str, Any]) -> int | None:
    """The seam's call number a request carries (``SEAM_HEADER``), or None: the application's."""
    for name, value in headers.items():
        if name.lower() == SEAM_HEADER:
            value = value[0] if isinstance(value, list) and value else value
            number = isinstance(value, str) and value.isascii() and value.isdigit()
            return int(value) if number else None
    return None


def untagged(request: dict[str, Any]) -> dict[str, Any]:
    """A request as saved (``{"headers": {name: [values]}, ...}``) without ``SEAM_HEADER``."""
    headers = request.get("headers") or {}
    if not any(name.lower() == SEAM_HEADER for name in headers):
        return request
    kept = {name: value for name, value in headers.items() if name.lower() != SEAM_HEADER}
    return {**request, "headers": kept}


def canonical_body(body: bytes | str | None, ignore: Sequence[str] = ()) -> str:
    """The body as sorted, compact JSON without the ``ignore`` dotted paths; else as text."""
    if body is None:
        return ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
        for path in ignore:
            _drop(data, path.split("."))
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (ValueError, RecursionError):
        # Not JSON, or nested deeper than Python's parser goes: compared as the text it is.
        return text


def _drop(data: Any, path: list[str]) -> None:
    """Remove the field at ``path`` (a list item, by its index, becomes null: the others
    keep their places)."""
    if not path:
        return
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        if not rest:
            data.pop(head, None)
        else:
            _drop(data.get(head), rest)
    elif isinstance(data, list) and head.isdigit() and int(head) < len(data):
        if not rest:
            data[int(head)] = None
        else:
            _drop(data[int(head)], rest)


# What a seam call's key leaves out: how it is sent, not what it asks (the retries, the time
# it may take, the headers, the key it is sent with: a secret, never stored, not even hashed).
_NOT_ASKED = frozenset(
    {"api_key", "extra_headers", "timeout", "num_retries", "max_retries", "caching"}
)
_ENDPOINTS = ("api_base", "base_url")


def seam_key(kwargs: Mapping[str, Any], ignore: Sequence[str] = (), note: str = "") -> str | None:
    """The key of what a seam call asks (litellm's keyword arguments), or None when they hold
    a value JSON cannot write (a client object, a class): such a call is matched by HTTP only.

    Left out: ``_NOT_ASKED``, the call hooks' notes (keys starting with ``note``), and the
    ``ignore`` dotted paths (the match-ignored and redacted body fields, as the HTTP match
    leaves them out). A loopback endpoint is keyed without its port, as the HTTP match is.
    """
    asked = {
        name: value
        for name, value in kwargs.items()
        if name not in _NOT_ASKED and not (note and name.startswith(note))
    }
    for name in _ENDPOINTS:
        if isinstance(asked.get(name), str):
            asked[name] = _portless(asked[name])
    try:
        data = json.loads(json.dumps(asked)) if ignore else asked
        for path in ignore:
            _drop(data, path.split("."))
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=64)
def _portless(url: str) -> str:
    """``url`` with a loopback host's port left out (a local server's port changes)."""
    parts = urlsplit(url)
    try:
        host = (parts.hostname or "").lower()
        parts.port  # noqa: B018 (raises for a port that is not a number)
    except ValueError:
        return url
    if not is_loopback(host):
        return url
    return parts._replace(netloc="loopback").geturl()


def is_loopback(host: str) -> bool:
    return host in _LOOPBACK_NAMES or host.startswith("127.")


def split_host(entry: str) -> tuple[str, str]:
    """``(name, port)`` of a ``name`` or ``name:port`` entry (port "" when none; a bare IPv6
    address has no port)."""
    if entry.count(":") != 1:
        return entry, ""
    name, _, port = entry.rpartition(":")
    return name, port


def host_filter(hosts: Iterable[str]) -> Callable[[str], bool]:
    """A test of a URL: is its host one of ``hosts`` (``name`` or ``name:port``)?

    ``localhost``, ``127.0.0.1`` and ``::1`` stand for each other: a service on loopback
    answers to all three.
    """
    names: set[str] = set()
    for host in hosts:
        host = host.strip().lower()
        if host:
            names.add(host)
            base, port = split_host(host)
            if is_loopback(base):
                names.update(f"{alias}:{port}" if port else alias for alias in _LOOPBACK)
    if not names:
        return lambda uri: False

    def passes(uri: str) -> bool:
        parts = urlsplit(uri)
        host = (parts.hostname or "").lower()
        return host in names or f"{host}:{parts.port}" in names

    return passes


def request_key(
    method: str,
    uri: str,
    body: bytes | str | None,
    ignore: Sequence[str] = (),
    blank: Collection[str] = (),
) -> RequestKey:
    """The key under which a request is recorded and looked up.

    Args:
        method, uri, body: the request.
        ignore: dotted body fields left out (the match-ignored and the redacted ones).
        blank: query parameters (lower-case names) whose value is left out (the redacted
            ones): a request matches its recording whether or not it was redacted yet.
    """
    parts = urlsplit(uri)
    host = (parts.hostname or "").lower()
    port = str(parts.port or _DEFAULT_PORTS.get(parts.scheme, ""))
    if is_loopback(host):
        host, port = "loopback", ""
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode(sorted((k, "" if k.lower() in blank else v) for k, v in pairs))
    return (
        method.upper(),
        parts.scheme,
        host,
        port,
        parts.path,
        query,
        canonical_body(body, ignore),
    )


def digest(key: RequestKey) -> str:
    """A short text that stands for ``key`` (32 hex digits of its SHA-256).

    What a cassette file stores as an interaction's ``match_key`` and what a cassette's index
    is keyed by: a key holds the whole canonical body, a kilobyte or more.
    """
    return hashlib.sha256(json.dumps(key).encode("ascii")).hexdigest()[:32]


def describe(key: RequestKey) -> str:
    """A few lines naming the request: endpoint, model, the last two messages (``role:
    text``, as the report shows them: ``_wire.read_request``), the same layout for each API
    the cassette reads (``_wire.request_api``)."""
    method, scheme, host, port, path, query, body = key
    where = f"{host}:{port}" if port else host
    lines = [f"{method} {scheme}://{where}{path}" + (f"?{query}" if query else "")]
    data = _wire.as_dict(_wire.loads(body))  # None for text, or JSON too deep to parse
    api = _wire.request_api(path, body)
    model = _wire.request_model(path, data, api)
    if model:
        lines.append(f"model: {model}")
    if api is not None:
        sent = _wire.read_request(api, body).conversation
        lines += [_message_line(turn.role, turn.shown) for turn in sent[-2:]]
    return "\n".join(lines)


def _message_line(role: str, text: str) -> str:
    text = " ".join(text.split())
    if len(text) > 120:
        text = text[:117] + "..."
    return f"{role}: {text}"


def closest(key: RequestKey, recorded: Iterable[RequestKey]) -> RequestKey | None:
    """The recorded key most like ``key``: same endpoint first, then the most similar body."""

    def score(other: RequestKey) -> tuple[int, float]:
        same_endpoint = sum(a == b for a, b in zip(key[:6], other[:6], strict=True))
        similarity = difflib.SequenceMatcher(None, key[6], other[6], autojunk=False).ratio()
        return same_endpoint, similarity

    return max(recorded, key=score, default=None)


def diff(recorded: RequestKey, wanted: RequestKey, limit: int = 60) -> str:
    """A unified diff of two requests, bodies pretty-printed so changes show line by line."""
    before, after = _pretty(recorded), _pretty(wanted)
    lines = list(
        difflib.unified_diff(before, after, "recorded request", "this request", lineterm="", n=2)
    )
    if len(lines) > limit:
        lines = [*lines[:limit], f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)


def _pretty(key: RequestKey) -> list[str]:
    method, scheme, host, port, path, query, body = key
    head = [f"{method} {scheme}://{host}{':' + port if port else ''}{path}?{query}"]
    try:
        shown = json.dumps(json.loads(body), indent=2, sort_keys=True, ensure_ascii=False)
    except (ValueError, RecursionError):  # text, or JSON too deep to parse (canonical_body)
        shown = body
    return head + shown.splitlines()
