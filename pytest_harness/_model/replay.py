"""The seam's replay: a harness-made call answered from its cassette by what it asks,
without litellm.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_harness._model.response import ModelResponse, TokenCallback

if TYPE_CHECKING:
    from pytest_harness._cassettes.interactions import Priced
    from pytest_harness._wire import Recognised


@dataclass(frozen=True, slots=True)
class Replay:
    """A recorded reply read by the seam itself: the response, and a stream's deltas (text,
    reasoning) in order."""

    response: ModelResponse
    deltas: tuple[tuple[str, str], ...] = ()


def replayed(
    call: Any, on_token: TokenCallback | None, on_reasoning: TokenCallback | None
) -> ModelResponse | None:
    """The call answered from its cassette by what it asks (a call hook's ``replay``), its
    stream's deltas passed on as litellm passes them; None: the call is to be sent."""
    started = time.perf_counter()
    found: Replay | None = None
    reader = functools.partial(read, call, started)
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


def read(call: Any, started: float, found: Recognised, price: Priced | None) -> Replay | None:
    """A recorded reply as the seam reads it through litellm, read without litellm; None
    when litellm might read it otherwise (then it is sent, and litellm reads it).

    Args:
        call: the seam's call (``_model.seam.Request``: its model, keyword arguments, hooks).
        started: ``time.perf_counter()`` when the call started.
        found: the reply, recognised (``Recognised.response``; a stream's chunks in
            ``Recognised.payload``).
        price: the price the recording kept, or None (recorded before prices were kept).
    """
    counted = None if price is None else price.usage  # a reply that said no usage
    if not found.as_sent(counted=counted is not None) or not _openai_model(call.kwargs, price):
        return None
    response = replace(
        found.response,
        model=call.model,
        cost=None if price is None else price.cost,
        usage=found.response.usage if counted is None else counted,
        latency_s=time.perf_counter() - started,
    )
    if not found.streamed:
        return Replay(response)
    deltas = tuple(
        (str(c["delta"].get("content") or ""), str(c["delta"].get("reasoning_content") or ""))
        for chunk in found.payload
        for c in (chunk.get("choices") or [])[:1]
        if isinstance(c.get("delta"), Mapping)
    )
    return Replay(response, deltas)


def _openai_model(kwargs: Mapping[str, Any], price: Priced | None) -> bool:
    """Whether litellm reads this call's reply as OpenAI's (``openai/`` models, OpenAI's own
    names, as the recording placed them): other providers' replies, even in OpenAI's
    format, it may rewrite."""
    model, provider = str(kwargs.get("model") or ""), kwargs.get("custom_llm_provider")
    if provider not in (None, "openai"):
        return False
    prefix, slash, _ = model.partition("/")
    if slash:
        return prefix == "openai"
    return price is not None and price.provider == "openai"
