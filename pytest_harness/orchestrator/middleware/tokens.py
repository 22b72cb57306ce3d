"""Token counts for compaction: a quick upper bound, litellm's count, the model's window.

``token_bound`` bounds a prompt's tokens from its bytes, without a tokenizer, so that most
requests (surely under budget) are never counted; ``count_tokens`` asks litellm's
``token_counter`` when the bound cannot tell; ``context_window`` is the model's input
window from litellm's model info. litellm is imported on first use (``_litellm.lib``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_harness import _litellm
from pytest_harness.errors import HarnessError, describe


class CompactionFailed(HarnessError):
    """The summary call of a compaction failed; the conversation was left unchanged."""


def token_bound(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> int | None:
    """An upper bound on the prompt's tokens without a tokenizer, or None for media.

    Every tokenizer litellm counts with (tiktoken's byte-level BPE, the Hugging Face
    tokenizers, SentencePiece with byte fallback) gives each token at least one byte of the
    UTF-8 text, beside at most three it adds to a text (a word-start marker, a BOS, an EOS):
    a string costs at most its bytes + 3 (``_size``). Other values (tool calls) are bounded
    by their JSON, ASCII-escaped: an escape is as long as the character's bytes or longer,
    and each string in it has quotes and a separator (the 3). litellm adds 3 or 4 tokens per
    message, a name's 1 included (the 4 here), and 3 for the reply; it renders the tool
    definitions as a TypeScript-like text, shorter than their JSON but for a 47-byte
    wrapper, and adds 9 (the 64 here). Images and other media are counted from their size,
    not their text: with any, there is no bound (None).
    """
    total = 3 + (len(json.dumps(tools)) + 64 if tools else 0)
    for message in messages:
        total += 4
        for key, value in message.items():
            if isinstance(value, str):
                total += _size(value)
            elif key == "content" and isinstance(value, list) and not _text_only(value):
                return None
            elif value is not None:
                try:
                    total += len(json.dumps(value))
                except (TypeError, ValueError):  # not JSON: litellm will say what it is
                    return None
    return total


def count_tokens(target: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> int:
    """The prompt's tokens, by litellm's ``token_counter`` (no image is fetched for it)."""
    counter = _litellm.lib().token_counter
    try:
        found = counter(
            model=target,
            messages=list(messages),
            tools=list(tools) or None,
            use_default_image_token_count=True,
        )
    except Exception as error:
        raise CompactionFailed(
            f"litellm could not count the prompt's tokens for {target!r}: {describe(error)}. "
            "Leave Compaction out of this agent's middleware, or report the message's shape."
        ) from error
    return int(found)


@functools.lru_cache(maxsize=256)
def context_window(target: str) -> int | None:
    """The model's input window (litellm's model info), or None (cached: litellm takes
    a tenth of a millisecond to say it does not know a model)."""
    try:
        info = _litellm.lib().get_model_info(target)
    except Exception:  # litellm raises for a model it does not know
        return None
    window = info.get("max_input_tokens")
    return window if isinstance(window, int) and window > 0 else None


def _text_only(parts: list[Any]) -> bool:
    return all(isinstance(part, dict) and part.get("type") == "text" for part in parts)


def _size(text: str) -> int:
    """A string's UTF-8 bytes (``isascii`` is O(1) in CPython), plus 3."""
    return (len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))) + 3
