"""One stored interaction: how a recorded exchange is written (``interaction``), and what is
read back from it: how its call failed (``Failure``), its price (``Priced``), its seam key,
its latency, the model reply it holds. A value of the wrong shape (edited by hand) reads as
none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_harness import _wire
from pytest_harness._cassettes import bodies, matching, steady
from pytest_harness._model.response import Usage
from pytest_harness.errors import CallAbandoned, ReplayedFailure, type_name


def interaction(
    request: Mapping[str, Any],
    response: Mapping[str, Any],
    latency_s: float | None = None,
    seam: str | None = None,
) -> dict[str, Any]:
    """One recorded exchange as the file stores it: JSON bodies as JSON (``bodies``),
    volatile headers left out and the loopback port pinned (``steady.kept``), the
    exchange's latency in seconds when it was measured, its price when it was priced
    (``PRICE``, kept in the recorded response until now), and the key of what the model
    seam asked (``matching.seam_key``) when the seam made it."""
    raw = dict(request)
    raw["body"] = bodies.stored_body(raw["body"])
    if FAILURE in response:  # no reply: how the call failed, in its place
        failed = response[FAILURE]
        how = failed.stored() if isinstance(failed, Failure) else failed
        stored = steady.kept({"request": raw, FAILURE: how})
        return stored if seam is None else {**stored, matching.SEAM_FIELD: seam}
    body = bodies.stored_body((response.get("body") or {}).get("string"), frames=True)
    shown = body if isinstance(body, dict) else {"string": body or ""}
    answer = {name: value for name, value in response.items() if name not in _KEPT_APART}
    stored = steady.kept({"request": raw, "response": {**answer, "body": shown}})
    if latency_s is not None:
        stored[LATENCY] = round(latency_s, 3)
    priced = price(response)
    if priced is not None:
        stored[PRICE] = priced.stored()
    if seam is not None:
        stored[matching.SEAM_FIELD] = seam
    return stored


# The interaction field that holds how long the exchange took when it was recorded (seconds).
LATENCY = "latency_s"
# The interaction field that holds what its reply cost when it was recorded (``Priced``).
PRICE = "price"
# What a recorded response carries until it is written, then the interaction holds apart.
_KEPT_APART = frozenset({LATENCY, PRICE})
# The interaction field of a model call of the harness that got no reply while recorded (it
# failed, or its caller abandoned it), in place of its response (``Failure``).
FAILURE = "failure"


@dataclass(frozen=True, slots=True)
class Failure:
    """How a model call of the harness ended without a reply while recorded: replay ends it
    the same way, at the same place (``error``).

    Stored as ``{"kind": ..., "after_s": ..., "type": ..., "message": ...}``.

    Attributes:
        kind: ``abandoned`` (its caller cancelled it: a tribunal's or a team member's
            deadline passed) or ``error`` (it raised).
        after_s: the seconds it had run.
        type: the type name of the error it raised (``CancelledError`` when abandoned).
        message: the error's message.
    """

    kind: str
    after_s: float
    type: str
    message: str

    @classmethod
    def of(cls, error: BaseException, seconds: float) -> Failure:
        """The failure of a call that raised ``error`` (``asyncio.CancelledError``: its
        caller abandoned it) after ``seconds``."""
        kind = "abandoned" if isinstance(error, asyncio.CancelledError) else "error"
        return cls(kind, round(seconds, 3), type_name(error), str(error))

    def stored(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "after_s": self.after_s,
            "type": self.type,
            "message": self.message,
        }

    def error(self) -> BaseException:
        """What replay raises in the call's place: ``CallAbandoned`` (the deadline that cut
        the call off counts it as timed out, without waiting), or the recorded error again
        (``ReplayedFailure``, named by the recorded type)."""
        if self.kind == "abandoned":
            return CallAbandoned(
                f"this model call was abandoned after {self.after_s:g} s while recording (its "
                "caller gave up on it: a tribunal's or a team member's timeout) and nothing "
                "abandoned it at the same place in replay. Record the test again "
                "(pytest --harness-live)."
            )
        return ReplayedFailure(self.message, recorded_type=self.type)


def failure(interaction: Mapping[str, Any]) -> Failure | None:
    """How a stored interaction's call failed (``Failure``), or None: it holds a reply (or
    its failure is of the wrong shape: edited by hand)."""
    kept = interaction.get(FAILURE)
    if not isinstance(kept, Mapping):
        return None
    kind, after, type_, message = (kept.get(k) for k in ("kind", "after_s", "type", "message"))
    if kind not in ("abandoned", "error") or not isinstance(type_, str):
        return None
    seconds = 0.0 if isinstance(after, bool) or not isinstance(after, (int, float)) else after
    return Failure(kind, float(seconds), type_, message if isinstance(message, str) else "")


@dataclass(frozen=True, slots=True)
class Priced:
    """A recorded model reply's price, as litellm gave it when the reply was recorded: what
    replay needs of litellm, kept so that replay never imports it.

    Attributes:
        cost: the reply's cost in USD, or None: litellm had no price for the model.
        provider: the provider litellm placed the call with (``openai`` for a model
            named without a prefix that it sends to OpenAI), or None when not known.
        usage: the tokens litellm counted itself, for a reply that carried no usage (a
            llama.cpp stream sends none); None when the reply said its own.
    """

    cost: float | None
    provider: str | None = None
    usage: Usage | None = None

    def stored(self) -> dict[str, Any]:
        """As the file stores it: ``{"cost": ..., "provider": ..., "usage": {...}}`` (what
        is None left out, but the cost)."""
        kept: dict[str, Any] = {"cost": self.cost}
        if self.provider is not None:
            kept["provider"] = self.provider
        if self.usage is not None:
            kept["usage"] = {name: getattr(self.usage, name) for name in _USAGE_FIELDS}
        return kept


_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def price(interaction: Mapping[str, Any]) -> Priced | None:
    """The price an interaction (or a recorded response) keeps, or None: recorded before
    prices were kept, not a model reply, or a value of the wrong shape (hand-edited)."""
    kept = interaction.get(PRICE)
    if isinstance(kept, Priced):
        return kept
    if not isinstance(kept, Mapping):
        return None
    cost, provider = kept.get("cost"), kept.get("provider")
    if isinstance(cost, bool) or not isinstance(cost, (int, float, type(None))):
        return None
    if cost is not None and not 0 <= cost < float("inf"):
        return None
    return Priced(
        None if cost is None else float(cost),
        provider if isinstance(provider, str) else None,
        _usage(kept.get("usage")),
    )


def _usage(kept: Any) -> Usage | None:
    """A kept usage, or None (none kept, or of the wrong shape)."""
    if not isinstance(kept, Mapping):
        return None
    counts = [kept.get(name) for name in _USAGE_FIELDS]
    whole = [n for n in counts if isinstance(n, int) and not isinstance(n, bool) and n >= 0]
    if len(whole) != len(counts):
        return None
    prompt, completion, total = whole
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def seam(interaction: Mapping[str, Any]) -> str | None:
    """The seam call's key a stored interaction keeps (``matching.seam_key``), or None
    (the application's own request, a cassette recorded before keys were kept, or a value
    that is no key: such an interaction is replayed by its HTTP match only)."""
    value = interaction.get(matching.SEAM_FIELD)
    return value if isinstance(value, str) and value else None


def recognised(interaction: Mapping[str, Any]) -> _wire.Recognised | None:
    """The model reply a stored interaction holds (``_wire.recognise``), read from the
    bodies as stored: a JSON value or an event list is read as it is, not written out as
    text to be parsed again. None when it holds none."""
    request, response = interaction["request"], interaction["response"]
    uri = str(request.get("uri", ""))
    status: Any = (response.get("status") or {}).get("code")  # recognise takes an int only
    headers = response.get("headers") or {}
    sent = request.get("body")
    asked = (
        sent["json"] if isinstance(sent, Mapping) and "json" in sent else bodies.body_bytes(sent)
    )
    body = response.get("body")
    if isinstance(body, Mapping) and "json" in body:
        return _wire.recognise_parsed(uri, asked, status, headers, value=body["json"])
    if isinstance(body, Mapping) and isinstance(body.get("lines"), list):  # NDJSON: the lines
        return _wire.recognise_parsed(uri, asked, status, headers, value=body["lines"])
    if isinstance(body, Mapping) and "events" in body:
        return _wire.recognise_parsed(
            uri, asked, status, headers, events=bodies.stream_events(body)
        )
    return _wire.recognise(uri, asked, status, headers, bodies.body_bytes(body))


def latency(interaction: Mapping[str, Any]) -> float | None:
    """The recorded latency of a stored interaction, or None (none kept, or not a number)."""
    value = interaction.get(LATENCY)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < float("inf") else None
