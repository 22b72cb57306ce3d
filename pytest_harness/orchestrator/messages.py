"""The messages an orchestrator run adds to its conversation, in OpenAI's chat form.

``assistant`` turns a ``ModelResponse`` into the assistant message (with its tool calls),
``tool_result`` a finished tool call into the tool message the model reads, and
``question_tool`` makes the built-in ``question`` tool from an ``on_question`` callback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_harness._aio import maybe_await
from pytest_harness.orchestrator.run import ToolCallRecord
from pytest_harness.orchestrator.tools import Tool, tool
from pytest_harness.response import ModelResponse


def assistant(response: ModelResponse) -> dict[str, Any]:
    """The assistant message of ``response``, its tool calls included."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments},
            }
            for call in response.tool_calls
        ]
    return message


def tool_result(record: ToolCallRecord) -> dict[str, Any]:
    """The tool message answering ``record``'s call (its result, or ``Error: ...``)."""
    return {"role": "tool", "tool_call_id": record.id, "content": record.sent}


def question_tool(answer: Callable[..., Any]) -> Tool:
    """The built-in ``question`` tool: the model asks, ``answer`` (sync or async) replies."""

    async def question(question: str) -> str:
        """Ask the user a question and wait for the answer.

        Args:
            question: the question, as the user should read it.
        """
        return str(await maybe_await(answer(question)))

    return tool(question)
