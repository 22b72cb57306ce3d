"""Session persistence: the conversation saved to a ``SessionStore`` around every request.

``SessionRecorder(store, session_id)`` saves the conversation

* before each request, once the steering notes waiting for the session are delivered: each
  becomes a user message ("Note from the parent agent: ...") at the end of the
  conversation, with a ``steer`` event; the notes are marked delivered in the same
  transaction as the save that holds them;
* after each response, with the assistant message the loop is about to append (made by the
  loop's own ``messages.assistant``, so it is the same message);
* when the run ends, whatever its stop reason: the tool results of an aborted run, and of a
  run stopped by a limit or a failed request, are kept.

Each save writes only what is new (see ``orchestrator.sessions``). The store is used from
the event loop directly: a save appends a few rows, and no tool runs during a request.

``resume(store, session_id)`` gives back the messages to continue from, for
``Orchestrator.messages``. A process that died while its tools ran saved the assistant
message that called them but no results; ``resume`` answers each such call with an error
result, so the conversation is one a provider accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_harness.errors import quote
from pytest_harness.orchestrator import messages
from pytest_harness.orchestrator.pipeline import ModelCall, Next
from pytest_harness.orchestrator.run import Run
from pytest_harness.orchestrator.sessions import SessionStore
from pytest_harness.response import ModelResponse

STEER_PREFIX = "Note from the parent agent: "
UNFINISHED = "the run ended before this tool call finished (the session was resumed)"


class SessionRecorder:
    """Save the conversation to ``store`` as session ``session_id`` around every request.

    Put it after ``UsageLimits`` (a request a limit refuses leaves the notes waiting) and
    before the middleware that retry or compact, so that it saves once per request and
    sees the conversation as it is kept.

    Args:
        store: where the session is kept.
        session_id: the session; a new id starts a new one.
        metadata: saved with the session on the first save (JSON values).
    """

    def __init__(
        self, store: SessionStore, session_id: str, *, metadata: Mapping[str, Any] | None = None
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.metadata = dict(metadata) if metadata is not None else None

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        conversation = _conversation(call)
        notes = self.store.pending_notes(self.session_id)
        for note in notes:
            steer = {"role": "user", "content": STEER_PREFIX + note.text}
            conversation.append(steer)
            if call.messages is not conversation:  # an outer middleware's copy for this request
                call.messages.append(steer)
            call.event("steer", f"delivered note {note.seq}: {quote(note.text, 80)}")
        self.save(conversation, delivered=[note.seq for note in notes])
        response = await next(call)
        self.save([*conversation, messages.assistant(response)])
        return response

    def run_ended(self, agent: Any, run: Run) -> None:
        """Save the conversation as the run left it (its tool results included).

        ``agent.messages`` holds what ``run.messages`` copies; saving the conversation's own
        dicts lets the store see at once that nothing before them changed.
        """
        self.save(agent.messages)

    def save(self, conversation: list[dict[str, Any]], delivered: list[int] | None = None) -> int:
        """Save ``conversation`` (the first save also saves the metadata)."""
        written = self.store.save(
            self.session_id, conversation, metadata=self.metadata, delivered=delivered or ()
        )
        self.metadata = None
        return written


def resume(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    """The session's messages to go on from, for ``Orchestrator.messages``.

    Tool calls of the last assistant message that have no result (the process died while
    they ran) get an error result each, in the model's order.

    Raises:
        UnknownSession: there is no such session.
    """
    conversation = store.load(session_id)
    return conversation + unanswered(conversation)


def unanswered(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Error results for the tool calls of the last assistant message left without one."""
    end = len(conversation)
    while end and conversation[end - 1].get("role") == "tool":
        end -= 1
    if not end or conversation[end - 1].get("role") != "assistant":
        return []
    answered = {message.get("tool_call_id") for message in conversation[end:]}
    return [
        {"role": "tool", "tool_call_id": call["id"], "content": f"Error: {UNFINISHED}"}
        for call in conversation[end - 1].get("tool_calls") or ()
        if call.get("id") not in answered
    ]


def _conversation(call: ModelCall) -> list[dict[str, Any]]:
    """The conversation itself: the agent's messages, or the call's outside an agent."""
    agent_messages = getattr(call.agent, "messages", None)
    return agent_messages if isinstance(agent_messages, list) else call.messages
