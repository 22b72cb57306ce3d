"""The probe: a parent's read-only peek into a running subagent, as in the seed.

Unlike ``steer`` (a note persisted in the child's session that changes what it does next),
a probe is read-only and discarded: it takes a snapshot of the child's messages, runs one
side inference (``[preamble] + snapshot + [question]``) on the child's own model, and
returns the answer. Nothing is appended to the child's history, its loop is never touched,
and the question and answer never enter its conversation, so a probe cannot change what
the subagent does. The cost is one extra model request, billed and thrown away.

``peek`` never raises: a blank answer is ``"(no answer)"``, any failure (no messages yet, a
model error) is ``"(probe failed: <message>)"``, so a probe can never break the parent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pytest_harness import model as seam
from pytest_harness._aio import maybe_await, run_sync
from pytest_harness.response import ModelResponse

PREAMBLE = (
    "You are the subagent above. Answer the following question from "
    "your current context ONLY — do not take any action or continue "
    "your task; this is a read-only check. Be brief."
)

Chat = Callable[[list[dict[str, Any]]], Any]  # messages -> a response (or its text)
ModelFactory = Callable[[str], Chat]


class Entry(Protocol):
    """What a probe reads of a subagent (``subagents.SubagentEntry`` has it)."""

    @property
    def session_id(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def params(self) -> Mapping[str, Any]: ...

    @property
    def tools(self) -> Sequence[Mapping[str, Any]]: ...

    def snapshot(self) -> list[dict[str, Any]]: ...


class SubagentProbe:
    """Peeks into subagents.

    Args:
        model_factory: the test seam of the seed: called with the child's model name, it
            returns a chat callable (``messages -> response``; a ``ModelResponse``, anything
            with ``content``, or text; may be async). Default: one call through the model
            seam on the child's own model and parameters, so cassettes and the response
            check apply.
        message_store: where to read the child's messages (a ``SessionStore``); default
            the entry's own snapshot (its session, else its conversation in memory).
    """

    def __init__(
        self, model_factory: ModelFactory | None = None, message_store: Any = None
    ) -> None:
        self.model_factory = model_factory
        self.message_store = message_store

    def peek(self, entry: Entry, question: str) -> str:
        """The child's answer to ``question`` from its context so far; never raises."""
        return run_sync(self.apeek(entry, question))

    async def apeek(self, entry: Entry, question: str) -> str:
        """Async ``peek``: same answer."""
        try:
            messages = [
                {"role": "user", "content": PREAMBLE},
                *self._snapshot(entry),
                {"role": "user", "content": str(question)},
            ]
            response = await maybe_await(self._chat(entry)(messages))
            text = _text(response).strip()
        except Exception as error:  # a probe must never break the parent
            return f"(probe failed: {error})"
        return text or "(no answer)"

    def _snapshot(self, entry: Entry) -> list[dict[str, Any]]:
        if self.message_store is not None:
            messages: list[dict[str, Any]] = self.message_store.load(entry.session_id)
        else:
            messages = entry.snapshot()
        if not messages:
            raise ValueError("the subagent has no messages yet (it has not started)")
        return [dict(m) for m in messages]

    def _chat(self, entry: Entry) -> Chat:
        if self.model_factory is not None:
            return self.model_factory(entry.model)

        async def chat(messages: list[dict[str, Any]]) -> ModelResponse:
            # The child's tools are described (its history holds their calls) but may not be
            # called: the probe asks for an answer only.
            return await seam.acomplete(
                messages,
                model=entry.model,
                tools=list(entry.tools) or None,
                **({**entry.params, "tool_choice": "none"} if entry.tools else entry.params),
            )

        return chat


def _text(response: Any) -> str:
    """The answer's text: ``text`` of a ``ModelResponse``, ``content`` of others, or str."""
    if isinstance(response, ModelResponse):
        return response.text
    content = getattr(response, "content", response)
    return "" if content is None else str(content)
