"""Re-recording identical answers changes no byte: what a recording leaves out, pins or keeps.

A recording run talks to servers that answer the same thing in different words: a new
date, request id, completion id, timestamp and rate-limit count on every reply, and a local
server on a new free port every session. Three things keep a cassette's file still:

- **Left out** (``kept``): the volatile headers below, which no match and no SDK reads
  back. Replay never needs them: a response's ``content-type``, ``content-length``,
  ``content-encoding``, ``transfer-encoding`` and ``retry-after`` are kept, and the match key
  reads no header at all (``matching.request_key``).
- **Pinned**: a loopback URL (``127.0.0.1``, ``localhost``, ``::1``) is stored with the port
  ``LOOPBACK_PORT`` (0, "any free port", as a server binds it), whatever port the server
  had. Why a placeholder rather than the real port: the match key already ignores loopback
  ports (a local server gets a new one every session), so the port in the file says
  nothing replay uses; a fixed placeholder keeps the line still when an interaction does
  change, and ``0`` still parses as a URL port for vcrpy and for readers.
- **Kept** (``align``): when a re-recorded interaction is the same exchange as the one the
  file holds at that place (same request key, the n-th of its key; a response equal but for
  ``VOLATILE_FIELDS`` and volatile headers; the recorded latency ignored), the file keeps its
  old interaction verbatim, so replay stays byte-exact and the file does not change (it
  gains only what the caller says a file recorded before it was kept lacks: a seam call's
  key, a price). Not
  when a volatile value of the new reply (a tool call id, a response id) reappears in a
  later request of the run: the application sent it on, so the old reply would not replay
  into the requests that follow.

Pure functions over a cassette's stored interactions (``interactions.interaction``): no vcrpy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from pytest_harness._cassettes import bodies
from pytest_harness._cassettes.matching import SEAM_FIELD, is_loopback

# Request headers left out: the address's port (the URL says where), the SDK's retry count
# and timeouts (they differ per call, not per question), the machine the recording ran on
# (a re-recording on another laptop or in CI is the same recording), and random trace ids.
VOLATILE_REQUEST_HEADERS = frozenset(
    {
        "host",
        "x-stainless-retry-count",
        "x-stainless-read-timeout",
        "x-stainless-timeout",
        "x-stainless-os",
        "x-stainless-arch",
        "x-stainless-runtime",
        "x-stainless-runtime-version",
        "idempotency-key",
        "traceparent",
        "tracestate",
        "sentry-trace",
        "baggage",
        "x-datadog-trace-id",
        "x-datadog-parent-id",
        # AWS Signature V4 (boto3, Bedrock): the signing time and the body's hash, new on
        # every call; with the signature itself (``authorization``, redacted) they say who
        # asked and when, not what. botocore's per-call id and attempt count.
        "x-amz-date",
        "x-amz-content-sha256",
        "amz-sdk-invocation-id",
        "amz-sdk-request",
    }
)
# Response headers left out: dates and timings, request and trace ids, CDN and proxy
# bookkeeping, rate-limit counters. ``set-cookie`` is redacted (``scrub``), not left out.
VOLATILE_RESPONSE_HEADERS = frozenset(
    {
        "date",
        "age",
        "expires",
        "last-modified",
        "etag",
        "x-request-id",
        "request-id",
        "x-amzn-requestid",
        "x-amzn-trace-id",
        "x-amz-cf-id",
        "x-amz-cf-pop",
        "apim-request-id",
        "x-ms-request-id",
        "x-ms-client-request-id",
        "x-cloud-trace-context",
        "cf-ray",
        "cf-cache-status",
        "alt-svc",
        "via",
        "server-timing",
        "openai-processing-ms",
        "x-envoy-upstream-service-time",
        "x-response-time",
        "x-process-time",
    }
)
# Whole families of response headers: rate-limit counters change with every request.
VOLATILE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "ratelimit-")
# Fields of a JSON reply (at any depth; in a stream, of each event) whose value differs from
# one run to the next for the same answer: ids (``chatcmpl-…``, ``msg_…``, ``resp_…``,
# ``call_…``), creation times, the backend's fingerprint, llama.cpp's timings, Ollama's
# durations (nanoseconds).
VOLATILE_FIELDS = frozenset(
    {
        "id",
        "created",
        "created_at",
        "completed_at",
        "system_fingerprint",
        "responseId",
        "response_id",
        "item_id",
        "call_id",
        "timings",
        "total_duration",
        "load_duration",
        "prompt_eval_duration",
        "eval_duration",
        # Bedrock: the random padding of each stream event, and a Converse reply's latency.
        "p",
        "latencyMs",
    }
)
# The port a loopback URL is stored with: 0 reads "a free port", as a server binds it.
LOOPBACK_PORT = 0
# Headers compared for sameness only through the body they describe.
_FOLLOWS_BODY = frozenset({"content-length"})

Interaction: TypeAlias = Mapping[str, Any]
KeyOf: TypeAlias = Callable[[Mapping[str, Any]], Hashable]


def volatile_header(name: str, *, response: bool) -> bool:
    """Whether a header is left out of a recording (``VOLATILE_*``)."""
    name = name.lower()
    if not response:
        return name in VOLATILE_REQUEST_HEADERS
    return name in VOLATILE_RESPONSE_HEADERS or name.startswith(VOLATILE_PREFIXES)


def kept(interaction: Interaction) -> dict[str, Any]:
    """``interaction`` as a cassette keeps it: volatile headers out, the loopback port pinned.

    Idempotent: an interaction already kept so comes back equal.
    """
    request = dict(interaction["request"])
    request["uri"] = pinned(str(request.get("uri", "")))
    request["headers"] = _without(request.get("headers"), response=False)
    if "response" not in interaction:  # a call that failed: no reply (``interactions.FAILURE``)
        return {**interaction, "request": request}
    response = dict(interaction["response"])
    response["headers"] = _without(response.get("headers"), response=True)
    return {**interaction, "request": request, "response": response}


def pinned(uri: str) -> str:
    """``uri`` with the port of a loopback host replaced by ``LOOPBACK_PORT``."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        return uri
    if port is None or port == LOOPBACK_PORT or not is_loopback(host):
        return uri
    shown = f"[{host}]" if ":" in host else host
    user = parts.netloc.rpartition("@")[0]
    netloc = f"{user}@{shown}:{LOOPBACK_PORT}" if user else f"{shown}:{LOOPBACK_PORT}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _without(headers: Any, *, response: bool) -> Any:
    """The headers but the volatile ones, each value text: botocore (boto3, Bedrock) sends
    header values as bytes, which a JSON file cannot hold."""
    if not isinstance(headers, Mapping):
        return headers
    return {
        _text(name): _texts(values)
        for name, values in headers.items()
        if not volatile_header(_text(name), response=response)
    }


def _texts(values: Any) -> Any:
    if isinstance(values, (list, tuple)):
        return [_text(value) for value in values]
    return _text(values)


def _text(value: Any) -> Any:
    """A header name or value as text; HTTP's own encoding (Latin-1) gives every byte back."""
    return value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else value


def align(
    old: Sequence[Interaction],
    new: Sequence[Interaction],
    key: KeyOf,
    gains: Collection[str] = (SEAM_FIELD,),
) -> list[Any]:
    """The interactions a re-recorded file holds: ``new``, each the same exchange as the one
    ``old`` holds at its place kept as ``old`` has it, in ``old``'s order.

    A kept interaction takes the seam call's key the new one has (a file recorded before
    keys were kept gains them; an equal key changes no byte), and each other field of
    ``gains`` the new one has and it lacks (what it keeps stays: the same answer, priced
    when it was first recorded).

    The n-th new interaction of a request key takes the place of the n-th old one of that
    key: kept verbatim when the answers are the same (``same_answer``) and no volatile value
    of the new answer reappears in a later request, else replaced. New interactions with no
    old one at their place follow, in recording order; old ones with none are dropped.
    """
    places: dict[Hashable, list[int]] = {}
    for index, interaction in enumerate(old):
        places.setdefault(key(interaction["request"]), []).append(index)
    seen: dict[Hashable, int] = {}
    placed: list[tuple[int, Any]] = []
    added: list[Any] = []
    for position, interaction in enumerate(new):
        request_key = key(interaction["request"])
        occurrence = seen[request_key] = seen.get(request_key, 0) + 1
        slots = places.get(request_key, [])
        if occurrence > len(slots):
            added.append(interaction)
            continue
        earlier = old[slots[occurrence - 1]]
        swaps = _same_outcome(earlier, interaction)
        reused = swaps is not None and not _sent_on(swaps, new[position + 1 :])
        placed.append(
            (slots[occurrence - 1], _reused(earlier, interaction, gains) if reused else interaction)
        )
    return [interaction for _, interaction in sorted(placed, key=lambda p: p[0])] + added


def _reused(old: Interaction, new: Interaction, gains: Collection[str]) -> dict[str, Any]:
    gained = {name: new[name] for name in gains if name in new and name not in old}
    if SEAM_FIELD in new:
        gained[SEAM_FIELD] = new[SEAM_FIELD]
    return kept({**old, **gained})


def _same_outcome(old: Interaction, new: Interaction) -> set[str] | None:
    """``same_answer`` of two interactions' responses; two calls that got no reply are the
    same when they failed alike (the seconds they ran aside)."""
    if "response" in old and "response" in new:
        return same_answer(old["response"], new["response"])
    failures = [
        {k: v for k, v in (i.get("failure") or {}).items() if k != "after_s"} for i in (old, new)
    ]
    same = "response" not in old and "response" not in new and failures[0] == failures[1]
    return set() if same else None


def same_answer(old: Mapping[str, Any], new: Mapping[str, Any]) -> set[str] | None:
    """Whether two stored responses give the same answer: None if not, else the volatile
    text values of ``new`` that differ from ``old``'s (an empty set: equal to the byte).

    Status, headers (but the volatile ones and ``content-length``) and body are compared;
    a JSON body or event stream with its ``VOLATILE_FIELDS`` set aside.
    """
    if _status(old) != _status(new) or _headers(old) != _headers(new):
        return None
    old_body, old_values = _steady_body(old.get("body"))
    new_body, new_values = _steady_body(new.get("body"))
    if old_body != new_body or len(old_values) != len(new_values):
        return None
    return {
        fresh
        for before, fresh in zip(old_values, new_values, strict=True)
        if fresh != before and isinstance(fresh, str)
    }


def _status(response: Mapping[str, Any]) -> tuple[Any, Any]:
    status = response.get("status") or {}
    return status.get("code"), status.get("message") or ""


def _headers(response: Mapping[str, Any]) -> dict[str, Any]:
    headers = response.get("headers") or {}
    return {
        name.lower(): values if isinstance(values, list) else [values]
        for name, values in headers.items()
        if not volatile_header(name, response=True) and name.lower() not in _FOLLOWS_BODY
    }


def _steady_body(body: Any) -> tuple[Any, list[Any]]:
    """A stored body with its volatile fields set aside, and their values in walk order."""
    if isinstance(body, Mapping) and isinstance(body.get("string"), str):
        body = {"string": body["string"], **_structured(body["string"])}
    if not bodies.is_stored_form(body):
        return body, []
    values: list[Any] = []
    steady = {name: _set_aside(value, values) for name, value in body.items() if name != "string"}
    return steady, values


def _structured(text: str) -> dict[str, Any]:
    """A text body (a cassette written before bodies were stored as JSON) as stored now."""
    found = bodies.stored(text)
    return dict(found) if isinstance(found, dict) else {}


def _set_aside(value: Any, values: list[Any]) -> Any:
    if isinstance(value, Mapping):
        steady: dict[str, Any] = {}
        for name, child in value.items():
            if name in VOLATILE_FIELDS:
                values.append(child)
                steady[name] = None
            else:
                steady[name] = _set_aside(child, values)
        return steady
    if isinstance(value, list):
        return [_set_aside(child, values) for child in value]
    return value


def _sent_on(values: Iterable[str], later: Sequence[Interaction]) -> bool:
    """Whether any of ``values`` appears in a later request (the application sent it on)."""
    wanted = [value for value in values if len(value) >= 4]  # "1" would be found anywhere
    if not wanted:
        return False
    sent = [_request_text(interaction["request"]) for interaction in later]
    return any(value in text for value in wanted for text in sent)


def _request_text(request: Mapping[str, Any]) -> str:
    body = request.get("body")
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return f"{request.get('uri', '')}\n{text}"
