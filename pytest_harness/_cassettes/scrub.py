"""Secrets never reach disk: redact requests and responses, then scan before writing.

Two layers, because a key can reach a request in more places than headers:

- **Redaction** (``redact_request`` / ``redact_response``, usable as vcrpy's
  ``before_record_request`` / ``before_record_response``) replaces the values of the known
  places with ``REDACTED``: listed headers, listed URL query parameters and listed dotted
  paths into a JSON body. A redacted header stays present, so a reader sees it was sent.
- **The pre-write scan** (``scan`` / ``check_before_write``) walks the serialized cassette and
  reports every string holding a known secret value (``secret_values_from_env``) or looking
  like a key, wherever it sits: an unlisted header, body field, or the URL path.

Pure: this module imports neither vcrpy nor litellm; requests are duck-typed.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import unquote_plus

from pytest_harness.errors import CassetteError

REDACTED = "REDACTED"


def _lower(names: Iterable[str]) -> frozenset[str]:
    return frozenset(name.lower() for name in names)


@dataclass(frozen=True, slots=True, kw_only=True)
class Redaction:
    """What to redact. Header and query names are lower-case; body fields are dotted paths."""

    request_headers: frozenset[str] = frozenset(
        {
            "authorization",
            "proxy-authorization",
            "api-key",
            "x-api-key",
            "x-goog-api-key",
            "openai-organization",
            "openai-project",
            "anthropic-organization-id",
            "cookie",
            # AWS: an STS session token (SSO, assumed roles), a live credential; Azure's
            # ``api-key`` is above and its Entra ID token travels in ``authorization``.
            "x-amz-security-token",
            # Azure API Management's subscription key: the gateway companies put in front of
            # Azure OpenAI (and of other models) asks for it in place of ``api-key``.
            "ocp-apim-subscription-key",
        }
    )
    query_params: frozenset[str] = frozenset(
        # Not Azure API Management's ``subscription-key``: a cassette's stored match keys
        # name the query parameters they leave out, so a new default here would make every
        # cassette already recorded compute its keys again (and its seam calls take the HTTP
        # path) until it is re-recorded. A gateway that takes it in the query: add it to
        # harness_redact_query; the pre-write scan finds it in a URL meanwhile.
        {"key", "api_key", "api-key", "access_token", "token", "apikey", "sig", "signature"}
    )
    response_headers: frozenset[str] = frozenset(
        {"set-cookie", "openai-organization", "openai-project", "anthropic-organization-id"}
    )
    body_fields: tuple[str, ...] = ()

    @classmethod
    def with_extra(
        cls,
        headers: Iterable[str] = (),
        query: Iterable[str] = (),
        body_fields: Iterable[str] = (),
        response_headers: Iterable[str] = (),
    ) -> Redaction:
        """The defaults plus the given names (header and query names compared lower-case)."""
        base = cls()
        return cls(
            request_headers=base.request_headers | _lower(headers),
            query_params=base.query_params | _lower(query),
            response_headers=base.response_headers | _lower(response_headers),
            body_fields=tuple(dict.fromkeys((*base.body_fields, *body_fields))),
        )


class RequestLike(Protocol):
    """What redaction touches of a request (vcrpy's ``Request`` has all of it)."""

    headers: MutableMapping[str, Any]
    uri: str
    body: Any


_R = TypeVar("_R", bound=RequestLike)


def redact_request(request: _R, redaction: Redaction) -> _R:
    """Redact headers, query values and JSON body fields of ``request`` in place; return it.

    Everything not redacted stays byte-identical. Idempotent.
    """
    for name in list(request.headers):
        if name.lower() in redaction.request_headers and request.headers[name] != REDACTED:
            request.headers[name] = REDACTED
    request.uri = _redact_query(request.uri, redaction.query_params)
    if redaction.body_fields:
        # vcrpy's ``body_bytes`` does not consume an iterator body the way ``body`` would.
        body = getattr(request, "body_bytes", request.body)
        redacted = _redact_body(body, redaction.body_fields)
        if redacted is not body:
            request.body = redacted
    return request


def _redact_query(uri: str, names: frozenset[str]) -> str:
    head, sep, query = uri.partition("?")
    if not sep:
        return uri
    query, hash_sep, fragment = query.partition("#")
    pairs = []
    for pair in query.split("&"):
        name, eq, _ = pair.partition("=")
        secret = eq and unquote_plus(name).lower() in names
        pairs.append(f"{name}={REDACTED}" if secret else pair)
    return f"{head}?{'&'.join(pairs)}{hash_sep}{fragment}"


def _redact_body(body: Any, fields: Sequence[str]) -> Any:
    """The body with listed fields replaced, or ``body`` itself when nothing changed."""
    if not isinstance(body, (bytes, str)):
        return body
    try:
        text = body.decode() if isinstance(body, bytes) else body
        data = json.loads(text)
    except (ValueError, RecursionError):
        # Not JSON (UnicodeDecodeError is a ValueError), or nested deeper than Python's parser
        # goes: no field to redact. The pre-write scan still reads it as text.
        return body
    try:
        separators, ascii_only = _style(data, text)
        changed = [_replace_at(data, field.split(".")) for field in fields]
        if not any(changed):
            return body
        out = json.dumps(data, separators=separators, ensure_ascii=ascii_only)
    except RecursionError:  # parsed at the edge of the stack, but not written back
        raise CassetteError(
            f"a request body nests too deep to write back with its fields redacted "
            f"({', '.join(fields)}): nothing was recorded or replayed for it. Send a flatter "
            "body, or remove the fields from harness_redact_body_fields."
        ) from None
    return out.encode() if isinstance(body, bytes) else out


def _replace_at(data: Any, path: list[str]) -> bool:
    for step in path[:-1]:
        data = _child(data, step)
    leaf = path[-1]
    if _child(data, leaf) in (None, REDACTED):
        return False
    data[int(leaf) if isinstance(data, list) else leaf] = REDACTED
    return True


def _child(data: Any, step: str) -> Any:
    if isinstance(data, dict):
        return data.get(step)
    if isinstance(data, list) and step.isdigit() and int(step) < len(data):
        return data[int(step)]
    return None


def _style(data: Any, original: str) -> tuple[tuple[str, str], bool]:
    """The ``json.dumps`` separators and ``ensure_ascii`` that reproduce ``original``."""
    for separators, ascii_only in itertools.product([(",", ":"), (", ", ": ")], [False, True]):
        if json.dumps(data, separators=separators, ensure_ascii=ascii_only) == original:
            return separators, ascii_only
    # Hand-formatted (indented, ...): compact unless the original spaced its separators.
    spaced = re.search(r"[,:] ", original)
    return ((", ", ": ") if spaced else (",", ":")), True


def redact_response(response: dict[str, Any], redaction: Redaction) -> dict[str, Any]:
    """Replace every value of the listed response headers by ``REDACTED``, in place.

    Returns the same (mutated) dict, as vcrpy's ``before_record_response`` expects. Idempotent.
    """
    headers = response.get("headers") or {}
    for name, values in headers.items():
        if name.lower() in redaction.response_headers:
            is_list = isinstance(values, (list, tuple))
            headers[name] = [REDACTED for _ in values] if is_list else REDACTED
    return response


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
# AUTHOR: GIT_AUTHOR_NAME holds a name, not a secret.
_NOT_SECRET_NAME = re.compile(r"AUTHOR|_(FILE|PATH|DIR|URL|HOST|PORT)$", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")


def secret_values_from_env(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of variables whose name looks secret (``*_API_KEY``, ``*TOKEN``, ...).

    Skips short values (under 12 characters), numbers, booleans, absolute paths, and names
    ending in ``_FILE``, ``_PATH``, ``_DIR``, ``_URL``, ``_HOST`` or ``_PORT``.
    Sorted longest first, so a finding names the longest secret a string holds.
    """
    values = {
        value
        for name, value in environ.items()
        if _SECRET_NAME.search(name) and not _NOT_SECRET_NAME.search(name)
        # 12+ characters also rules out booleans ("true", "false").
        if len(value) >= 12 and not _NUMBER.fullmatch(value) and not value.startswith("/")
    }
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """A likely secret in a cassette: where it is, what it looks like, a masked excerpt."""

    where: str
    kind: str
    excerpt: str


_PATTERNS = (
    ("sk- key", re.compile(r"sk-[A-Za-z0-9_-]{20,}")),
    ("Bearer token", re.compile(r"Bearer\s+([A-Za-z0-9._~+/=-]{20,})")),
    ("Google API key", re.compile(r"AIza[0-9A-Za-z_-]{30,}")),
    # Vertex AI's credentials: a Google OAuth access token.
    ("Google OAuth token", re.compile(r"\bya29\.[0-9A-Za-z_.-]{20,}")),
    # An AWS access key id, long-lived (AKIA) or an STS session's (ASIA), and a session
    # token (STS tokens are base64 of a header that starts with these bytes).
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("AWS session token", re.compile(r"\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz)[A-Za-z0-9/+=]{20,}")),
    # A JSON Web Token (Azure's Entra ID access tokens, and others'): header.payload.signature.
    ("JSON Web Token", re.compile(r"\beyJ[0-9A-Za-z_-]{8,}\.eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]+")),
)
_URL_TOKEN = re.compile(r"(?<=[/=])[A-Za-z0-9_-]{32,}(?=[/?&#;:]|$)")


def _mask(secret: str) -> str:
    # At most a quarter of a short secret, never more than 4 characters.
    return f"{secret[: min(4, len(secret) // 4)]}…({len(secret)} chars)"


def scan(data: Mapping[str, Any], secrets: Sequence[str]) -> list[Finding]:
    """Every string of a serialized cassette holding a secret or a key-like token.

    ``secrets`` are exact values to look for (``secret_values_from_env``). Request ``uri``
    fields are also searched for long mixed letter/digit tokens in path segments and query
    values. ``REDACTED`` never counts. Findings come in walk order.
    """
    wanted = [s for s in secrets if s and s != REDACTED]
    return [
        finding
        for where, key, text in _walk(data, "")
        for finding in _check(where, key, text, wanted)
    ]


def _walk(node: Any, where: str, key: str = "") -> Iterator[tuple[str, str, str]]:
    if isinstance(node, Mapping):
        for name, child in node.items():
            # ``response.body.string`` reads as ``response.body``.
            step = "" if name == "string" and key == "body" else f".{name}"
            yield from _walk(child, f"{where}{step}".lstrip("."), str(name))
    elif isinstance(node, (list, tuple)):
        for i, child in enumerate(node):
            # A header's single value reads as the header itself: ``headers.x-custom``.
            single = len(node) == 1 and isinstance(child, (str, bytes))
            yield from _walk(child, where if single else f"{where}[{i}]", key)
    elif isinstance(node, (str, bytes)):
        yield where, key, node.decode(errors="replace") if isinstance(node, bytes) else node


def _check(where: str, key: str, text: str, secrets: Sequence[str]) -> Iterator[Finding]:
    spans: list[tuple[int, int]] = []
    hits = [
        (s, "secret value", *m.span()) for s in secrets for m in re.finditer(re.escape(s), text)
    ]
    for kind, pattern in _PATTERNS:
        hits += [(m.group(m.lastindex or 0), kind, *m.span()) for m in pattern.finditer(text)]
    if key == "uri":
        hits += [
            (m.group(), "long token in URL", *m.span())
            for m in _URL_TOKEN.finditer(text)
            if re.search(r"[A-Za-z]", m.group()) and re.search(r"\d", m.group())
        ]
    for value, kind, start, end in hits:
        if not any(s < end and start < e for s, e in spans):
            spans.append((start, end))
            yield Finding(where=where, kind=kind, excerpt=_mask(value))


def check_before_write(
    data: Mapping[str, Any], secrets: Sequence[str], path: str | os.PathLike[str]
) -> None:
    """Raise ``CassetteError`` if ``scan`` finds anything; the message never holds a secret."""
    findings = scan(data, secrets)
    if not findings:
        return
    lines = "\n".join(f"  - {f.where}: {f.kind}, {f.excerpt}" for f in findings)
    raise CassetteError(
        f"refusing to write cassette {os.fspath(path)}: it holds {len(findings)} likely "
        f"secret(s); nothing was written.\n{lines}\n"
        "Redact them before recording: add the header to the ini key harness_redact_headers, "
        "the query parameter to harness_redact_query, or the JSON body field (a dotted path) "
        "to harness_redact_body_fields; or remove the secret from the request."
    )
