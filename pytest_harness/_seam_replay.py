"""The seam's replay: a call answered from its cassette by what it asks, without litellm.

In replay, ``send`` / ``asend`` first offer a call to the scope's call hooks (``replayed``).
The test's cassette finds the interaction recorded for what the call asks (its seam key,
``matching.seam_key``) and hands its reply, recognised as the traffic check reads it
(``wire.Recognised``, with the parsed body), to ``read`` here. ``read`` gives the response
litellm would have given: it reads the reply with the functions litellm's path uses
(``read_completion`` / ``read_stream``), prices it as litellm prices it, and keeps a stream's
deltas for ``on_token`` / ``on_reasoning``. It reads only replies litellm passes on as they
are, so that nothing can differ: an OpenAI chat completion, plain or streamed, from a model
litellm sends to OpenAI, with known message fields, a finish reason litellm keeps, a usage
block and no opening think block. For any other it returns None, and the call is sent
through litellm and the cassette's HTTP match, as recorded (a miss there shows its diff).

It does not import litellm: the seam hands it litellm's pricing and its placing of a bare
model name (``Litellm``), and a call with an ``openai/`` prefix asks neither.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_harness._response import ModelResponse, Pricing, TokenCallback, Usage
from pytest_harness._wire.chat import read_completion, read_stream

if TYPE_CHECKING:
    from pytest_harness._wire import Recognised


@dataclass(frozen=True, slots=True)
class Litellm:
    """What the reader asks litellm, through the seam (``_model``).

    Attributes:
        price: the USD cost of a usage under a model name, or None when not priced.
        provider: the provider litellm sends a model name without a prefix to, or None.
    """

    price: Callable[[str, Usage], float | None]
    provider: Callable[[str], str | None]


@dataclass(frozen=True, slots=True)
class Replay:
    """A recorded reply read by the seam itself: the response, and a stream's deltas (text,
    reasoning) in order."""

    response: ModelResponse
    deltas: tuple[tuple[str, str], ...] = ()


def replayed(
    call: Any,
    on_token: TokenCallback | None,
    on_reasoning: TokenCallback | None,
    litellm: Litellm,
) -> ModelResponse | None:
    """The call answered from its cassette by what it asks (a call hook's ``replay``), its
    stream's deltas passed on as litellm passes them; None: the call is to be sent."""
    started = time.perf_counter()
    found: Replay | None = None
    reader = functools.partial(read, call, started, litellm)
    for hook in call.hooks:
        replay = getattr(hook, "replay", None)  # optional: a hook without it never answers
        found = replay(call.kwargs, reader) if replay else None
        if found is not None:
            break
    if found is None:
        return None
    if not found.deltas:
        return found.response  # its latency was taken as it was read
    for text, thought in found.deltas:
        if text and on_token is not None:
            on_token(text)
        if thought and on_reasoning is not None:
            on_reasoning(thought)
    return replace(found.response, latency_s=time.perf_counter() - started)  # callbacks count


# What litellm passes on unchanged from an OpenAI-compatible chat completion: these finish
# reasons (it maps others), these message fields (a provider's own ``reasoning`` it may map),
# a content that opens with no think block (it moves one into ``reasoning_content``).
_AS_SENT_FINISH = frozenset({"stop", "length", "tool_calls", "content_filter"})
_AS_SENT_FIELDS = frozenset(
    {"role", "content", "tool_calls", "refusal", "reasoning_content", "annotations"}
)
_THINK = re.compile(r"<(?:think|thinking|budget:thinking)>")


def read(call: Any, started: float, litellm: Litellm, found: Recognised) -> Replay | None:
    """A recorded reply as the seam reads it through litellm, read without litellm; None
    when litellm might read it otherwise (then it is sent, and litellm reads it).

    Args:
        call: the seam's call (``_model.Request``: its model, keyword arguments, hooks).
        started: ``time.perf_counter()`` when the call started.
        litellm: its pricing and its placing of model names.
        found: the reply, recognised, with its parsed body (``Recognised.payload``).
    """
    if found.api != "openai.chat" or not _openai_model(call.kwargs, litellm):
        return None
    if not found.streamed:
        data = found.payload
        if not _as_sent(data.get("choices"), "message", data.get("usage")):
            return None
        cost = _priced(call, found, litellm)
        return Replay(
            read_completion(data, model=call.model, cost=cost, started=started, checked=True)
        )
    chunks = found.payload
    usage = next((c["usage"] for c in chunks if c.get("usage")), None)
    choices = [choice for chunk in chunks for choice in chunk.get("choices") or []]
    if not _as_sent(choices, "delta", usage):
        return None
    finish = next(
        (c.get("finish_reason") for c in reversed(choices) if c.get("finish_reason")), None
    )
    response = read_stream(
        chunks,
        finish_reason=finish,
        model=call.model,
        cost=_priced(call, found, litellm),
        started=started,
        checked=True,  # recognised: every chunk is readable
    )
    deltas = tuple(
        (str(c["delta"].get("content") or ""), str(c["delta"].get("reasoning_content") or ""))
        for chunk in chunks
        for c in (chunk.get("choices") or [])[:1]
        if isinstance(c.get("delta"), Mapping)
    )
    return Replay(response, deltas)


def _as_sent(choices: Any, part: str, usage: Any) -> bool:
    """Whether litellm passes these choices on as they are: known fields, a finish reason
    it keeps, no think block, and the usage counted (litellm counts a missing one itself)."""
    if not isinstance(choices, list) or not choices or not isinstance(usage, Mapping):
        return False
    finished = False
    for choice in choices:
        message = choice.get(part) if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping) or not _AS_SENT_FIELDS.issuperset(message):
            return False
        if isinstance(message.get("content"), str) and _THINK.match(message["content"]):
            return False
        reason = choice.get("finish_reason")
        if reason is not None and reason not in _AS_SENT_FINISH:
            return False
        finished = finished or reason is not None
    return finished


def _openai_model(kwargs: Mapping[str, Any], litellm: Litellm) -> bool:
    """Whether litellm reads this call's reply as OpenAI's (``openai/`` models, OpenAI's own
    names): other providers' replies, even in OpenAI's format, it may rewrite."""
    model, provider = str(kwargs.get("model") or ""), kwargs.get("custom_llm_provider")
    if provider not in (None, "openai"):
        return False
    prefix, slash, _ = model.partition("/")
    return prefix == "openai" if slash else litellm.provider(model) == "openai"


def _priced(call: Any, found: Recognised, litellm: Litellm) -> Pricing:
    """The cost litellm gives a reply: the price of the model the reply names, when priced,
    else of the model asked for."""

    def cost(usage: Usage) -> float | None:
        said = litellm.price(found.model, usage) if found.model else None
        return said if said is not None else litellm.price(call.model, usage)

    return cost
