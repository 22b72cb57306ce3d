"""What the format readers read into, and the small builders they share.

A reply is read into a ``Found`` (the API, its ``ModelResponse``, the model its body names).
The builders here turn a format's raw values (a tool call's arguments as text or as an
object, token counts of any type) into those values, the same way for every format.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

from pytest_harness._response import ModelResponse, ToolCall, Usage
from pytest_harness._wire._json import as_int, as_str, loads

# (api, response, the model its body names or "")
Found: TypeAlias = "tuple[str, ModelResponse, str]"
# A stream's events: (event name, its JSON object).
Events: TypeAlias = "list[tuple[str, dict[str, Any]]]"


def event_kind(name: str, data: dict[str, Any]) -> str:
    """An event's kind: its JSON ``type``, else its SSE event name."""
    return as_str(data.get("type")) or name


def refused(field: str, value: str | None, refusing: frozenset[str]) -> str | None:
    """``<field>: <value>`` when that value says the call was refused or blocked, else None."""
    return f"{field}: {value}" if value in refusing else None


def tool_call(index: int, call_id: Any, name: Any, raw: Any) -> ToolCall:
    """A tool call whose arguments come as JSON text or as an object."""
    text = raw if isinstance(raw, str) else "" if raw is None else json.dumps(raw)
    parsed = loads(text) if text.strip() else {}
    return ToolCall(
        id=as_str(call_id) or f"call_{index}",
        name=as_str(name),
        arguments=parsed if isinstance(parsed, dict) else None,
        raw_arguments=text,
    )


def usage(prompt: Any, completion: Any, total: Any, cached: Any = 0, written: Any = 0) -> Usage:
    """Token counts; ``prompt`` counts every prompt token, those read from the prompt cache
    (``cached``) and written to it (``written``) included."""
    p, c = as_int(prompt), as_int(completion)
    return Usage(
        prompt_tokens=p,
        completion_tokens=c,
        total_tokens=as_int(total) or p + c,
        cached_tokens=as_int(cached),
        cache_write_tokens=as_int(written),
    )
