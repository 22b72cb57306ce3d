"""Compaction: when a prompt would pass a token budget, older turns become one summary."""

from __future__ import annotations

import functools
import hashlib
import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_harness._model import seam
from pytest_harness._model.response import ModelResponse
from pytest_harness.errors import CompactionFailed, ConfigError, describe, quote
from pytest_harness.orchestrator._pipeline import ModelCall, Next

SUMMARY_PROMPT = (
    "You summarize the earlier part of a conversation between a user and an assistant that "
    "uses tools, so that the assistant can carry on without it. Keep what the user asked for "
    "and any constraints; what the assistant did and decided; the facts and tool results it "
    "still needs (names, numbers, identifiers, exact values); and what is left to do. Write "
    "only the summary, in plain prose."
)
SUMMARY_HEADING = "Summary of the earlier conversation: "

# The run's litellm arguments a summary goes without: its tools and schema, its streaming.
_NOT_FOR_SUMMARY = ("tool", "parallel_tool", "function", "response_format", "stream")

# An agent's last count or bound: (model, the messages counted, the tools, the tokens).
Counted = tuple[str, tuple[Mapping[str, Any], ...], list[Any], int]


@dataclass(frozen=True)
class Compaction:
    """Summarize older turns when a prompt would exceed a token budget.

    Put it inside ``DoomLoop`` and ``UsageLimits`` and outside ``count_usage``, ``Retry``
    and any middleware that changes the conversation for one request only.

    Attributes:
        budget: prompt tokens allowed; None: ``fraction`` of the model's context window
            (compaction off for a model litellm has no window for).
        fraction: the share of the context window used as the budget when ``budget`` is None.
        keep_recent: messages kept as they are at the end (more when a tool call's results
            would otherwise be cut from it).
        summary_prompt: the system prompt of the summary call.
        model: the model of the summary call (default: the run's model).
        params: litellm arguments of the summary call (default: the run's, without its tool
            settings); set them when ``model`` is reached elsewhere than the run's model.
    """

    budget: int | None = None
    fraction: float = 0.75
    keep_recent: int = 6
    summary_prompt: str = SUMMARY_PROMPT
    model: str | None = None
    params: Mapping[str, Any] | None = None
    _counted: weakref.WeakKeyDictionary[Any, Counted] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        budget, fraction, prompt = self.budget, self.fraction, self.summary_prompt
        _check("budget", budget, budget is None or _whole(budget), "None or a whole number >= 1")
        _check("keep_recent", self.keep_recent, _whole(self.keep_recent), "a whole number >= 1")
        share = isinstance(fraction, (int, float)) and not isinstance(fraction, bool)
        _check("fraction", fraction, share and 0 < fraction <= 1, "a share above 0, at most 1")
        _check("summary_prompt", prompt, isinstance(prompt, str) and bool(prompt.strip()), "text")

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        await self.compact(call)
        return await next(call)

    async def compact(self, call: ModelCall) -> bool:
        """Summarize the older turns of ``call.messages`` if over budget; whether it did."""
        target = seam.resolve(call.model)
        budget = self.limit(target)
        if budget is None:
            return False
        bound = self.bound(target, call)
        if bound is not None and bound <= budget:
            return False
        before = self.count(target, call)
        cut = split(call.messages, self.keep_recent) if before > budget else None
        if cut is None:
            return False
        head, tail = cut
        middle = call.messages[head:tail]
        response = await self.summarize(call, middle)
        kept = [m for m in middle if m.get("role") == "system"]
        summary = {"role": "user", "content": SUMMARY_HEADING + response.text}
        call.messages[head:tail] = [*kept, summary]
        call.tally.add(response)  # its tokens and cost; not a request of the run
        after = self.count(target, call)
        call.event(
            "compaction",
            f"{len(middle) - len(kept)} messages summarized into one: the prompt went from "
            f"~{before:,} to ~{after:,} tokens (budget {budget:,})",
        )
        return True

    def bound(self, target: str, call: ModelCall) -> int | None:
        """An upper bound on the prompt's tokens, or None for media.

        litellm counts a prompt message by message: a prompt that only adds messages to the
        agent's last count (or bound) has at most its tokens plus the added ones' bound (a
        message changed in place would not be noticed: the harness replaces, never edits).
        """
        known = self._counted.get(call.agent) if _weak(call.agent) else None
        bound = None
        if known is not None:
            model, counted, tools, tokens = known
            messages, start = call.messages, len(counted)
            extends = model == target and tools == call.tools and len(messages) >= start
            if extends and all(a is b for a, b in zip(counted, messages, strict=False)):
                added = token_bound(messages[start:], [])
                bound = None if added is None else tokens + added - 3  # the reply's 3 counted
        if bound is None:
            bound = token_bound(call.messages, call.tools)
        self.remember(target, call, bound)
        return bound

    def count(self, target: str, call: ModelCall) -> int:
        """The prompt's tokens by litellm, remembered for the next request's bound."""
        tokens = count_tokens(target, call.messages, call.tools)
        self.remember(target, call, tokens)
        return tokens

    def remember(self, target: str, call: ModelCall, tokens: int | None) -> None:
        """Keep ``tokens`` (a count or a bound) as the agent's, for its next request."""
        if tokens is not None and _weak(call.agent):
            self._counted[call.agent] = (target, tuple(call.messages), list(call.tools), tokens)

    def limit(self, target: str) -> int | None:
        """The budget for ``target``: the number given, or its share of the window."""
        if self.budget is not None:
            return self.budget
        window = context_window(target)
        return None if window is None else max(1, int(window * self.fraction))

    async def summarize(
        self, call: ModelCall, middle: Sequence[Mapping[str, Any]]
    ) -> ModelResponse:
        """The summary of ``middle``: one call through the model seam."""
        target = seam.resolve(self.model or call.model)
        params = dict(self.params if self.params is not None else call.params)
        params = {k: v for k, v in params.items() if not k.startswith(_NOT_FOR_SUMMARY)}
        messages = [
            {"role": "system", "content": self.summary_prompt},
            {"role": "user", "content": transcript(middle)},
        ]
        advice = (
            "The conversation was left as it was. Fix the summary model (Compaction(model=..., "
            "params=...)) or raise the budget (Compaction(budget=...)) so that none is needed."
        )
        try:
            response = await seam.asend(seam.request(messages, model=target, **params))
        except Exception as error:
            raise CompactionFailed(
                f"the summary call to {target!r} raised {describe(error)}. {advice}"
            ) from error
        if not response.text:
            raise CompactionFailed(
                f"the summary call to {target!r} returned no text "
                f"(content {quote(response.content)}). {advice}"
            )
        return response


def split(messages: Sequence[Mapping[str, Any]], keep_recent: int) -> tuple[int, int] | None:
    """(start, end) of the messages to summarize, or None when fewer than two would be.

    The head's system messages stay; the tail keeps the last ``keep_recent`` messages, and
    more when its first would be a tool result (whose call it moves in with it).
    """
    head = 0
    while head < len(messages) and messages[head].get("role") == "system":
        head += 1
    cut = max(head, len(messages) - keep_recent)
    while cut > head and messages[cut].get("role") == "tool":
        cut -= 1
    summarized = [m for m in messages[head:cut] if m.get("role") != "system"]
    return (head, cut) if len(summarized) >= 2 else None


def transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """The turns as plain text for the summary call (no tool messages, no schema)."""
    names: dict[Any, str] = {}
    lines = []
    for message in messages:
        role, text = str(message.get("role", "?")), _text(message.get("content"))
        if role == "tool":
            name = names.get(message.get("tool_call_id"), "a tool")
            lines.append(f"{name} returned: {text}")
            continue
        if text or role != "assistant":
            lines.append(f"{role}: {text}")
        for tool_call in message.get("tool_calls") or ():
            function = tool_call.get("function") or {}
            names[tool_call.get("id")] = name = str(function.get("name", "?"))
            lines.append(f"{role} called {name} with {function.get('arguments') or '{}'}")
    return "\n\n".join(lines)


def _text(content: Any) -> str:
    """A message's content as text; a part that is not text shows as its type."""
    if not isinstance(content, list):
        return "" if content is None else str(content)
    parts = [p for p in content if isinstance(p, Mapping)]
    return " ".join(
        str(p.get("text")) if p.get("type") == "text" else f"[{p.get('type')}]" for p in parts
    )


def _weak(agent: Any) -> bool:
    """Whether the memo can keep ``agent`` (weakly: its count goes with it)."""
    return hasattr(type(agent), "__weakref__")  # not None, a str...


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _check(name: str, value: Any, ok: bool, expected: str) -> None:
    if not ok:
        raise ConfigError(f"Compaction({name}=...) expects {expected}, got {value!r}.")


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
    """The prompt's tokens, by litellm's ``token_counter`` (no image is fetched for it), as
    the test's recording kept the count (``seam.recalled``, by the model and a digest of the
    prompt): replay compacts where the recording did, without litellm."""
    asked = json.dumps([target, list(messages), list(tools)], sort_keys=True, default=repr)
    prompt = f"{target} {hashlib.sha256(asked.encode()).hexdigest()[:16]}"
    counted = seam.recalled(
        "prompt_tokens", prompt, lambda _: _litellm_count(target, messages, tools)
    )
    if not isinstance(counted, int) or isinstance(counted, bool):  # a hand-edited cassette
        return _litellm_count(target, messages, tools)
    return counted


def _litellm_count(target: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> int:
    counter = seam.lib().token_counter
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


def context_window(target: str) -> int | None:
    """The model's input window (litellm's model info, as the test's recording kept it:
    ``seam.recalled``), or None."""
    window = seam.recalled("max_input_tokens", target, _litellm_window)
    return window if isinstance(window, int) and not isinstance(window, bool) else None


@functools.lru_cache(maxsize=256)
def _litellm_window(target: str) -> int | None:
    """litellm's answer (cached: it takes a tenth of a millisecond to say it does not
    know a model)."""
    try:
        info = seam.lib().get_model_info(target)
    except Exception:  # litellm raises for a model it does not know
        return None
    window = info.get("max_input_tokens")
    return window if isinstance(window, int) and window > 0 else None


def _text_only(parts: list[Any]) -> bool:
    return all(isinstance(part, dict) and part.get("type") == "text" for part in parts)


def _size(text: str) -> int:
    """A string's UTF-8 bytes (``isascii`` is O(1) in CPython), plus 3."""
    return (len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))) + 3
