"""OpenAI Responses (``/v1/responses``): its requests, replies and streams."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytest_harness._model.response import ModelResponse, ToolCall
from pytest_harness._wire._json import as_dict, as_dicts, as_str
from pytest_harness._wire._values import (
    Asked,
    Events,
    Found,
    SentResult,
    Turn,
    call_text,
    event_kind,
    names,
    parts_text,
    refused,
    reply_format,
    tool_call,
    usage,
)

_API = "openai.responses"

_FINAL = {"response.completed", "response.incomplete", "response.failed"}
_REASONING_DELTAS = {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
# A background response (``background=True``) not finished yet: polled, not answered.
_PENDING = {"queued", "in_progress"}
_FILTERED = frozenset({"content_filter"})  # the reason of a reply its content filter cut
# An output item's bookkeeping, not what the model asked for (``_call``).
_CALL_BOOKKEEPING = {"id", "type", "status", "call_id", "name", "output", "outputs", "result"}
# The output items the application runs: it sends each one's output back (by ``call_id``).
# ``tool_search_call`` is one unless the provider ran it (``execution: "server"``), and
# ``shell_call`` unless it ran in the provider's container (an ``environment`` not ``local``).
_APP_RUNS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "tool_search_call",
    }
)
# The output items the provider runs itself, its hosted tools: nothing for the application to
# run. ``mcp_list_tools`` lists an MCP server's tools; ``mcp_approval_request`` asks the
# application to approve an MCP call the provider will then make (its answer is an approval,
# not the tool's result); ``program`` is JavaScript the provider runs (programmatic tool calling).
_PROVIDER_RUNS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "image_generation_call",
        "code_interpreter_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "program",
    }
)


def read_request(data: dict[str, Any]) -> Asked:
    """``instructions``, then ``input``: a text (one user turn), or messages and items
    (function calls and their outputs; any other item a turn named by its type)."""
    given = data.get("input")
    items = as_dicts(given)
    turns = (Turn(role="user", text=given),) if isinstance(given, str) else tuple(map(_turn, items))
    tools = [as_str(t.get("name")) or as_str(t.get("type")) for t in as_dicts(data.get("tools"))]
    wanted = as_dict(as_dict(data.get("text")).get("format"))  # {"type": "json_schema", ...}
    return Asked(
        instructions=as_str(data.get("instructions")),
        turns=turns,
        tools=names(tools),
        results=_results(items),
        **reply_format(wanted.get("type"), wanted.get("schema")),
    )


def _turn(item: dict[str, Any]) -> Turn:
    kind = as_str(item.get("type"))
    if kind == "function_call":
        return Turn(role="assistant", text=call_text(item.get("name"), item.get("arguments")))
    if kind == "function_call_output":
        return Turn(role="tool", text=parts_text(item.get("output")))
    if "role" in item:
        return Turn(role=as_str(item.get("role")) or "?", text=parts_text(item.get("content")))
    return Turn(role=kind or "?", text="")  # a reasoning item, a hosted tool's call...


def _results(items: list[dict[str, Any]]) -> tuple[SentResult, ...]:
    """``function_call_output`` items, named by the ``function_call`` of their ``call_id``."""
    called = {
        as_str(item.get("call_id")): as_str(item.get("name"))
        for item in items
        if item.get("type") == "function_call"
    }
    return tuple(
        SentResult(
            call_id=as_str(item.get("call_id")) or None,
            name=called.get(as_str(item.get("call_id")), ""),
            text=parts_text(item.get("output")),
        )
        for item in items
        if item.get("type") == "function_call_output"
    )


def read_reply(data: Any) -> Found | None:
    """A response object: its output items, status and usage; None when it is none."""
    output = as_dict(data).get("output")
    if not isinstance(output, list):
        return None
    if as_str(data.get("status")) in _PENDING:
        return None  # a background reply polled before it finished: not a call yet
    items = as_dicts(output)
    parts = [p for i in items if i.get("type") == "message" for p in as_dicts(i.get("content"))]
    reasoning = [_reasoning_item(i) for i in items if i.get("type") == "reasoning"]
    calls = [i for i in items if _runner(i) == "app"]
    ran = [i for i in items if _runner(i) == "provider"]
    finish, interrupted = _finish(data, bool(calls))
    counted = as_dict(data.get("usage"))
    cached = as_dict(counted.get("input_tokens_details")).get("cached_tokens")
    said = "".join(as_str(p.get("text")) for p in parts if p.get("type") == "output_text")
    response = ModelResponse(
        content=said or None,
        reasoning="\n\n".join(text for text in reasoning if text) or None,
        tool_calls=tuple(_call(n, c) for n, c in enumerate(calls)),
        provider_tool_calls=tuple(_call(n, c) for n, c in enumerate(ran)),
        finish_reason=finish,
        interrupted=interrupted,
        refusal=_refusal(parts, finish),
        usage=usage(
            counted.get("input_tokens"),
            counted.get("output_tokens"),
            counted.get("total_tokens"),
            cached,
        ),
    )
    return _API, response, as_str(data.get("model"))


def read_events(events: Events) -> Found | None:
    """The final event's response; without one, what the deltas and finished items say."""
    for name, data in reversed(events):
        if event_kind(name, data) in _FINAL and isinstance(data.get("response"), dict):
            return read_reply(data["response"])
    kinds = [(event_kind(name, data), data) for name, data in events]
    created = next((as_dict(d.get("response")) for k, d in kinds if k == "response.created"), {})
    done = [d.get("item") for k, d in kinds if k == "response.output_item.done"]
    found = read_reply({**created, "status": "", "output": done})
    if found is None:
        return None
    api, response, model = found
    content = "".join(as_str(d.get("delta")) for k, d in kinds if k == "response.output_text.delta")
    reasoning = "".join(as_str(d.get("delta")) for k, d in kinds if k in _REASONING_DELTAS)
    return api, replace(response, content=content or None, reasoning=reasoning or None), model


def _refusal(parts: list[dict[str, Any]], finish: str | None) -> str | None:
    """The text of the reply's ``refusal`` parts, or its content filter's stop, or None."""
    refusals = [as_str(p.get("refusal")) for p in parts if p.get("type") == "refusal"]
    if refusals:
        return "\n".join(filter(None, refusals)) or "content: refusal"
    return refused("incomplete_details.reason", finish, _FILTERED)


def _runner(item: dict[str, Any]) -> str | None:
    """Who runs an output item's tool: ``app`` (the application), ``provider``, or None for
    an item that asks for no tool (a message, reasoning, a tool's output).

    A ``*_call`` kind this reader does not know is the application's when it has a
    ``call_id`` (the application answers a call by it), else the provider's."""
    kind = as_str(item.get("type"))
    if kind in _PROVIDER_RUNS:
        return "provider"
    if kind not in _APP_RUNS and not kind.endswith("_call"):
        return None
    environment = as_str(as_dict(item.get("environment")).get("type"))
    if item.get("execution") == "server" or environment not in ("", "local"):
        return "provider"
    return "app" if kind in _APP_RUNS or as_str(item.get("call_id")) else "provider"


def _call(index: int, item: dict[str, Any]) -> ToolCall:
    """A tool-call output item of any kind (``function_call``, ``custom_tool_call``,
    ``computer_call``, ``web_search_call``, ``mcp_call``...): named by its tool where it has
    one, else by its type; its arguments, input or action as the arguments."""
    name = as_str(item.get("name")) or as_str(item.get("type"))
    for field in ("arguments", "input", "action"):
        if item.get(field) is not None:
            return tool_call(index, item.get("call_id") or item.get("id"), name, item[field])
    asked = {k: v for k, v in item.items() if k not in _CALL_BOOKKEEPING and v is not None}
    return tool_call(index, item.get("call_id") or item.get("id"), name, asked)


def _reasoning_item(item: dict[str, Any]) -> str:
    """The item's full reasoning text when it carries it, else its summary."""
    full = [as_str(p.get("text")) for p in as_dicts(item.get("content"))]
    summary = [as_str(p.get("text")) for p in as_dicts(item.get("summary"))]
    return "\n\n".join(text for text in (full if any(full) else summary) if text)


def _finish(data: dict[str, Any], calls: bool) -> tuple[str | None, bool]:
    """(finish reason, interrupted) by the response's status."""
    status = as_str(data.get("status"))
    if status == "completed":
        return ("tool_calls" if calls else "stop"), False
    if status == "incomplete":
        return as_str(as_dict(data.get("incomplete_details")).get("reason")) or status, False
    return status or None, True
