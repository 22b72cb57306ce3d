"""Recorded tools: a Python function's calls stored in the test's cassette and replayed.

``recorded(fn)`` wraps a function (sync or async) so that each call goes through the
test's cassette as an exchange of its own (``CassetteSlot.lookup`` and ``keep``), beside the
HTTP traffic: while recording, the function runs and its arguments and result (or the
exception it raised) are kept; in replay, the recorded result is returned (the exception
raised again) and the function is not called. Without a cassette, the function just runs.

One exchange, stored as an ordinary interaction (redacted and scanned like any body)::

    POST tool:<name>
    request body:  {"arguments": {<parameter>: <value>, ...}}
    response body: {"result": <value>}
               or: {"error": {"type": "<module>:<qualname>", "message": "...", "args": [...]}}

Values are JSON as they are; what JSON cannot hold is tagged (``encode``, ``decode``)::

    tuple                  {"$tuple": [...]}
    dict, keys not text    {"$dict": [[key, value], ...]}   (also a dict with a "$..." tag key)
    float nan / inf        {"$float": "nan"}
    Enum member            {"$enum": "<module>:<qualname>", "value": ...}
    pydantic model         {"$pydantic": "<module>:<qualname>", "data": model_dump(mode="json")}
    dataclass              {"$dataclass": "<module>:<qualname>", "data": {<field>: ...}}
    serializer=            {"$custom": serializer.dump(value)}

Anything else is refused at record time (``UnrecordableTraffic``, naming the fixes).
Replay matches a call by its tool and arguments, each recording used once, in the order
recorded; a call that matches none is a ``CassetteMiss`` naming the closest recorded call of
the same tool, with a diff of the arguments.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import enum
import functools
import importlib
import inspect
import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, unquote

from pytest_harness._pytest_glue import scope
from pytest_harness.errors import (
    CassetteError,
    CassetteMiss,
    RecordedToolError,
    UnrecordableTraffic,
)

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_harness._cassettes.mcp import ToolRun
    from pytest_harness._cassettes.scrub import Redaction

SCHEME = "tool:"  # the URI of a recorded tool's exchange: tool:<name>
_TAGS = ("$tuple", "$dict", "$float", "$enum", "$pydantic", "$dataclass", "$custom")
_MARK = "__harness_recorded__"  # on a wrapper: its ``_Recorded``
_FIXES = (
    "To make it storable: return JSON values (dicts, lists, text, numbers), a pydantic model "
    "or a dataclass defined at module level; leave an argument out of the recording with "
    "ignore=('name',); or pass serializer= an object with dump(value) -> JSON and "
    "load(JSON) -> value."
)


class Serializer(Protocol):
    """Stores values the built-in encoding does not (``serializer=``): ``dump`` returns JSON
    values (dicts, lists, text, numbers, bools, None), ``load`` rebuilds the value from them."""

    def dump(self, value: Any) -> Any: ...

    def load(self, data: Any) -> Any: ...


class _Slot(Protocol):
    """What a recorded tool uses of the test's cassette (``CassetteSlot``)."""

    path: Path
    mode: str
    ignore: tuple[str, ...]
    redaction: Redaction
    misses: list[Any]

    def lookup(self, uri: str, body: bytes) -> tuple[Any, bytes | None]: ...
    def keep(self, request: Any, answer: bytes) -> None: ...
    def exchanges(self, uri: str) -> list[tuple[str, bool]]: ...
    def ran_live(self, what: str) -> None: ...
    def hint(self) -> str: ...


def _slot() -> _Slot | None:
    """The running test's cassette, or None (no cassette: the tool just runs)."""
    for hook in scope.current().call_hooks:
        if callable(getattr(hook, "lookup", None)) and callable(getattr(hook, "keep", None)):
            return hook  # type: ignore[return-value]
    return None


def ran_live(what: str) -> None:
    """Note on the test's cassette that ``what`` ran live (listed by the reports in replay)."""
    slot = _slot()
    if slot is not None:
        slot.ran_live(what)


# The wrapper.


def recorded(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    ignore: Iterable[str] = (),
    serializer: Serializer | None = None,
) -> Callable[..., Any]:
    """``function``, its calls recorded in the running test's cassette and replayed from it.

    The wrapper keeps the function's name, docstring and signature (``functools.wraps``),
    so agent frameworks that read them (openai-agents ``function_tool``, pydantic-ai tools)
    wrap it as they would the function. Wrapping a wrapper again re-wraps its function, with
    the wrapper's ``ignore`` and ``serializer`` unless given again.

    Args:
        function: a function or any callable, sync or async (a bound method too).
        name: the tool's name in the cassette and in ``harness.trajectory``; default its
            ``__qualname__`` without the function it was defined in (``append_line`` for a
            function defined in a test, ``Store.append`` for a method).
        ignore: argument names left out of the recording and of matching (a client, a
            connection).
        serializer: stores values the built-in encoding does not (``Serializer``).
    """
    original, before = unwrapped(function), getattr(function, _MARK, None)
    if isinstance(before, _Recorded):  # re-wrapped: what is not given again stays
        ignore, serializer = ignore or before.ignore, serializer or before.serializer
    spec = _Recorded(
        function=original,
        name=name or _default_name(original),
        ignore=frozenset(ignore),
        serializer=serializer,
    )
    if _is_async(original):

        @functools.wraps(original)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            return await spec.arun(args, kwargs)

        wrapper: Callable[..., Any] = call_async
    else:

        @functools.wraps(original)
        def call(*args: Any, **kwargs: Any) -> Any:
            return spec.run(args, kwargs)

        wrapper = call
    setattr(wrapper, _MARK, spec)
    return wrapper


def is_recorded(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is a ``recorded`` wrapper."""
    return isinstance(getattr(function, _MARK, None), _Recorded)


def unwrapped(function: Callable[..., Any]) -> Callable[..., Any]:
    """The function a ``recorded`` wrapper wraps, or ``function`` itself."""
    spec = getattr(function, _MARK, None)
    return spec.function if isinstance(spec, _Recorded) else function


def _is_async(function: Callable[..., Any]) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 (an object with async __call__)
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _default_name(function: Callable[..., Any]) -> str:
    target = getattr(function, "func", function)  # a functools.partial: its function's
    qualname = getattr(target, "__qualname__", None) or type(target).__qualname__
    return str(qualname).rpartition("<locals>.")[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Recorded:
    """One recorded tool: what it runs and how its calls are stored."""

    function: Callable[..., Any]
    name: str
    ignore: frozenset[str]
    serializer: Serializer | None

    @property
    def uri(self) -> str:
        return SCHEME + quote(self.name, safe=".-_~")

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One call of a sync function: replayed, or run (and recorded when there is a
        cassette)."""
        slot = _slot()
        if slot is None:
            return self.function(*args, **kwargs)
        request, answer = self.ask(slot, args, kwargs)
        if answer is not None:
            return self.answer(slot, answer)
        try:
            result = self.function(*args, **kwargs)
        except Exception as error:
            self.keep_error(slot, request, error)
            raise
        return self.keep(slot, request, result)

    async def arun(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``run``, for an async function."""
        slot = _slot()
        if slot is None:
            return await self.function(*args, **kwargs)
        request, answer = self.ask(slot, args, kwargs)
        if answer is not None:
            return self.answer(slot, answer)
        try:
            result = await self.function(*args, **kwargs)
        except Exception as error:
            self.keep_error(slot, request, error)
            raise
        return self.keep(slot, request, result)

    def ask(
        self, slot: _Slot, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Mapping[str, Any] | None]:
        """The call's request, and its recorded answer (decoded JSON) or None: run it now."""
        arguments = self._arguments(slot, args, kwargs)
        body = json.dumps({"arguments": arguments}).encode()
        try:
            request, answer = slot.lookup(self.uri, body)
        except CassetteMiss as miss:
            raise self._missed(slot, body, miss) from None
        if answer is None:
            return request, None
        return request, _loaded(answer, self.name, slot)

    def answer(self, slot: _Slot, answer: Mapping[str, Any]) -> Any:
        """The recorded result, or the recorded exception raised."""
        if isinstance(answer.get("error"), Mapping):
            raise _rebuilt(self.name, answer["error"], self.serializer)
        if "result" not in answer:
            raise _damaged(slot, self.name, "holds neither a result nor an error")
        try:
            return decode(answer["result"], self.serializer)
        except CassetteError as error:
            slot.misses.append(error)
            raise

    def keep(self, slot: _Slot, request: Any, result: Any) -> Any:
        """Record the result (refused when it cannot be stored); return it."""
        try:
            stored = encode(result, "the result", self.serializer)
        except _Refused as refused:
            raise _refusal(slot, self.name, refused, ran=True) from None
        slot.keep(request, json.dumps({"result": stored}).encode())
        return result

    def keep_error(self, slot: _Slot, request: Any, error: Exception) -> None:
        """Record the exception the function raised (the caller raises it on)."""
        kind = type(error)
        recorded: dict[str, Any] = {
            "type": f"{kind.__module__}:{kind.__qualname__}",
            "message": str(error),
        }
        with contextlib.suppress(_Refused):  # else replay rebuilds it from its message
            recorded["args"] = encode(list(error.args), "args", self.serializer)
        slot.keep(request, json.dumps({"error": recorded}).encode())

    def _arguments(
        self, slot: _Slot, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        try:
            signature = inspect.signature(self.function)
        except (TypeError, ValueError):  # a builtin without one: stored as given
            bound = {"args": list(args), "kwargs": kwargs}
        else:
            bound = dict(signature.bind(*args, **kwargs).arguments)
        try:
            return {
                key: encode(value, f"argument {key!r}", self.serializer)
                for key, value in bound.items()
                if key not in self.ignore
            }
        except _Refused as refused:
            raise _refusal(slot, self.name, refused, ran=False) from None

    def _missed(self, slot: _Slot, body: bytes, miss: CassetteMiss) -> CassetteMiss:
        """The tool's own miss, in place of the store's (in ``slot.misses`` too)."""
        from pytest_harness._cassettes.matching import canonical_body

        wanted = canonical_body(body, (*slot.ignore, *slot.redaction.body_fields))
        error = CassetteMiss(miss_message(self.name, slot, wanted, slot.exchanges(self.uri)))
        if miss in slot.misses:
            slot.misses[slot.misses.index(miss)] = error
        else:
            slot.misses.append(error)
        return error


def _loaded(answer: bytes, name: str, slot: _Slot) -> Mapping[str, Any]:
    try:
        loaded = json.loads(answer)
    except ValueError:
        loaded = None
    if not isinstance(loaded, Mapping):
        raise _damaged(slot, name, "is not a JSON object")
    return loaded


def _damaged(slot: _Slot, name: str, problem: str) -> CassetteError:
    error = CassetteError(
        f"cassette {slot.path}: the recorded answer of tool {name} {problem}: the file was "
        f"edited or cut. Record the test again. {slot.hint()}"
    )
    slot.misses.append(error)
    return error


# What a miss says.


def miss_message(name: str, slot: _Slot, wanted: str, recorded: Sequence[tuple[str, bool]]) -> str:
    """A replayed call of tool ``name`` that no recording matches: the call, the closest
    recorded call of the same tool with a diff of the arguments, how many calls were
    recorded and used, and how to record it (``slot.hint()``)."""
    lines = [
        f"no recorded call of tool {name} matches this call (cassette {slot.path}):",
        _indent(f"{name}({_arguments_text(wanted)})"),
    ]
    used = sum(played for _, played in recorded)
    if not recorded:
        lines.append(f"the cassette holds no call of {name}: it was not called when recorded.")
    elif any(body == wanted for body, _ in recorded):
        lines.append(
            f"a recorded call has these arguments, but it is already used: {name} is called "
            "more times than when recorded."
        )
    else:
        unused = [body for body, played in recorded if not played] or [b for b, _ in recorded]
        closest = max(unused, key=lambda body: _similarity(body, wanted))
        lines += [f"closest recorded call of {name}:", _indent(_diff(closest, wanted))]
    lines.append(f"{name}: {len(recorded)} call(s) recorded, {used} used.")
    lines.append(slot.hint())
    return "\n".join(lines)


def _similarity(recorded: str, wanted: str) -> float:
    return difflib.SequenceMatcher(None, recorded, wanted, autojunk=False).ratio()


def _diff(recorded: str, wanted: str, limit: int = 60) -> str:
    before, after = _pretty(recorded), _pretty(wanted)
    lines = list(
        difflib.unified_diff(
            before, after, "recorded arguments", "this call's arguments", lineterm="", n=2
        )
    )
    if len(lines) > limit:
        lines = [*lines[:limit], f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)


def _stored_arguments(body: str) -> Any:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return body
    return data.get("arguments", data) if isinstance(data, dict) else data


def _pretty(body: str) -> list[str]:
    arguments = _stored_arguments(body)
    if isinstance(arguments, str):
        return arguments.splitlines()
    return json.dumps(arguments, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _arguments_text(body: str) -> str:
    arguments = _stored_arguments(body)
    if not isinstance(arguments, dict):
        return str(arguments)
    text = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items()
    )
    return text if len(text) <= 300 else text[:297] + "..."


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# Refusals and replayed exceptions.


class _Refused(Exception):
    """A value the encoding cannot store: where it was, and why."""

    def __init__(self, where: str, value: Any, why: str = "") -> None:
        super().__init__(where)
        self.where, self.value, self.why = where, value, why


def _refusal(slot: _Slot | None, name: str, refused: _Refused, *, ran: bool) -> BaseException:
    kind = type(refused.value)
    what = f"{kind.__module__}.{kind.__qualname__}"
    why = refused.why or "JSON cannot hold it, and it is neither a pydantic model nor a dataclass"
    done = (
        "The function already ran (its side effects happened), but nothing of this call was "
        "recorded."
        if ran
        else "The function was not called."
    )
    error = UnrecordableTraffic(
        f"tool {name}: cannot store {refused.where}: a value of type {what} ({why}). "
        f"{done} {_FIXES}"
    )
    if slot is not None:
        slot.misses.append(error)
    return error


def _rebuilt(name: str, recorded: Mapping[str, Any], serializer: Serializer | None) -> Exception:
    """The exception tool ``name`` raised when recorded, to raise again."""
    kind, message = str(recorded.get("type", "")), str(recorded.get("message", ""))
    shown = kind.replace(":", ".")
    try:
        found = _find_class(kind)
    except CassetteError as missing:
        return _unrebuilt(name, shown, message, f"{missing}")
    if not (isinstance(found, type) and issubclass(found, Exception)):
        return _unrebuilt(name, shown, message, "it is not an exception class now")
    made = _construct(found, recorded, message, serializer)
    if made is None:
        return _unrebuilt(name, shown, message, "it cannot be made from its message")
    if sys.version_info >= (3, 11):  # shown under its traceback
        made.add_note(f"(replayed: tool {name} raised it when the cassette was recorded)")
    return made


def _construct(
    kind: type[Exception], recorded: Mapping[str, Any], message: str, serializer: Any
) -> Exception | None:
    attempts: list[Callable[[], Any]] = []
    if isinstance(recorded.get("args"), list):
        attempts.append(lambda: kind(*decode(recorded["args"], serializer)))
    attempts.append(lambda: kind(message))
    for attempt in attempts:
        try:
            made = attempt()
        except Exception:  # its constructor wants other arguments: try the next way
            continue
        if isinstance(made, kind):
            return made
    return None


def _unrebuilt(name: str, kind: str, message: str, why: str) -> RecordedToolError:
    return RecordedToolError(
        f"tool {name} raised {kind}: {message} (when the cassette was recorded; replayed "
        f"as a RecordedToolError: {why})",
        recorded_type=kind,
        recorded_message=message,
    )


# The encoding.


def encode(value: Any, where: str, serializer: Serializer | None = None) -> Any:
    """``value`` as JSON values, what JSON cannot hold tagged (the module docstring's table).

    Raises:
        _Refused: a value it cannot store (``where`` says where it was).
    """
    if isinstance(value, enum.Enum):
        return _encode_object(value, where, serializer)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": str(value)}
    if isinstance(value, list):
        return [encode(item, f"{where}[{i}]", serializer) for i, item in enumerate(value)]
    if isinstance(value, tuple):  # a named tuple too: replayed as a plain one, equal to it
        return {"$tuple": [encode(v, f"{where}[{i}]", serializer) for i, v in enumerate(value)]}
    if isinstance(value, dict):
        return _encode_dict(value, where, serializer)
    if serializer is not None:
        return {"$custom": _dumped(serializer, value, where)}
    return _encode_object(value, where, serializer)


def _encode_dict(value: dict[Any, Any], where: str, serializer: Serializer | None) -> Any:
    if all(isinstance(key, str) and key not in _TAGS for key in value):
        return {key: encode(item, f"{where}[{key!r}]", serializer) for key, item in value.items()}
    pairs = [
        [encode(key, f"{where} (a key)", serializer), encode(item, f"{where}[{key!r}]", serializer)]
        for key, item in value.items()
    ]
    return {"$dict": pairs}


def _encode_object(value: Any, where: str, serializer: Serializer | None) -> Any:
    if isinstance(value, enum.Enum):
        return {"$enum": _class_ref(value, where), "value": encode(value.value, where, serializer)}
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return {"$pydantic": _class_ref(value, where), "data": _model_data(value, where)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            field.name: encode(getattr(value, field.name), f"{where}.{field.name}", serializer)
            for field in dataclasses.fields(value)
            if field.init
        }
        return {"$dataclass": _class_ref(value, where), "data": fields}
    raise _Refused(where, value)


def _model_data(model: Any, where: str) -> Any:
    try:
        return model.model_dump(mode="json")
    except ValueError as error:  # pydantic's PydanticSerializationError: a field it cannot
        raise _Refused(where, model, f"pydantic cannot write it as JSON: {error}") from None


def _class_ref(value: Any, where: str) -> str:
    kind = type(value)
    if "<locals>" in kind.__qualname__:
        raise _Refused(
            where,
            value,
            "its class is defined inside a function, so replay cannot find it: define it at "
            "module level",
        )
    return f"{kind.__module__}:{kind.__qualname__}"


def _dumped(serializer: Serializer, value: Any, where: str) -> Any:
    dumped = serializer.dump(value)
    try:
        json.dumps(dumped, allow_nan=False)
    except (TypeError, ValueError):
        raise _Refused(where, value, "serializer.dump(value) did not return JSON values") from None
    return dumped


def decode(data: Any, serializer: Serializer | None = None) -> Any:
    """The value ``encode`` stored as ``data``.

    Raises:
        CassetteError: a stored class that cannot be found or rebuilt now, a ``$custom``
            value without the serializer, or data no encoding wrote (an edited file).
    """
    if isinstance(data, list):
        return [decode(item, serializer) for item in data]
    if not isinstance(data, dict):
        return data
    tag = next((key for key in data if key in _TAGS), None)
    if tag is None:
        return {key: decode(item, serializer) for key, item in data.items()}
    try:
        return _DECODERS[tag](data, serializer)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise CassetteError(
            f"a recorded value tagged {tag} cannot be rebuilt ({type(error).__name__}: "
            f"{error}): {_short(data)}. The file was edited, or the class changed since it was "
            "recorded: record the test again."
        ) from None


def _decode_dict(data: dict[str, Any], serializer: Any) -> Any:
    return {_hashable(decode(k, serializer)): decode(v, serializer) for k, v in data["$dict"]}


def _hashable(key: Any) -> Any:
    return tuple(_hashable(item) for item in key) if isinstance(key, list) else key


def _decode_custom(data: dict[str, Any], serializer: Any) -> Any:
    if serializer is None:
        raise CassetteError(
            f"a recorded value was stored through a serializer= ({_short(data)}): pass the "
            "same serializer= to the recorded tool to replay it."
        )
    return serializer.load(data["$custom"])


_DECODERS: dict[str, Callable[[dict[str, Any], Any], Any]] = {
    "$tuple": lambda data, serializer: tuple(decode(data["$tuple"], serializer)),
    "$dict": _decode_dict,
    "$float": lambda data, serializer: float(data["$float"]),
    "$enum": lambda data, s: _find_class(data["$enum"])(decode(data["value"], s)),
    "$pydantic": lambda data, s: _find_class(data["$pydantic"]).model_validate(data["data"]),
    "$dataclass": lambda data, s: _find_class(data["$dataclass"])(**decode(data["data"], s)),
    "$custom": _decode_custom,
}


def _find_class(ref: str) -> Any:
    module_name, _, qualname = ref.partition(":")
    try:
        found: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError, TypeError) as error:
        raise CassetteError(
            f"the cassette names the class {module_name}.{qualname}, which cannot be found "
            f"now ({type(error).__name__}: {error}): import its module before the test "
            "replays, or record the test again."
        ) from None
    return found


def _short(data: Any) -> str:
    text = json.dumps(data, default=str)
    return text if len(text) <= 200 else text[:197] + "..."


# Reading an exchange back (the trajectory).


def plain(data: Any) -> Any:
    """Stored values as plain JSON (tags dropped: a tuple as a list, a model as its data),
    as a trajectory shows and asserts them. Never raises."""
    if isinstance(data, list):
        return [plain(item) for item in data]
    if not isinstance(data, dict):
        return data
    tag = next((key for key in data if key in _TAGS), None)
    if tag is None:
        return {str(key): plain(item) for key, item in data.items()}
    inner = data.get({"$enum": "value", "$pydantic": "data", "$dataclass": "data"}.get(tag, tag))
    if tag == "$dict" and isinstance(inner, list):
        pairs = [pair for pair in inner if isinstance(pair, list) and len(pair) == 2]
        return {_key_text(plain(key)): plain(value) for key, value in pairs}
    if tag == "$float":
        return str(inner)
    return plain(inner)


def _key_text(key: Any) -> str:
    return key if isinstance(key, str) else json.dumps(key, default=str)


def recognise(
    method: str,
    uri: str,
    request_body: bytes | str | None,
    response: Mapping[str, Any],
    *,
    replayed: bool = False,
) -> ToolRun | None:
    """The recorded tool call in one interaction (its response as a cassette file stores
    it) as a tool run, or None when it is not one. Never raises."""
    if method.upper() != "POST" or not uri.startswith(SCHEME):
        return None
    from pytest_harness._cassettes.mcp import ToolRun
    from pytest_harness._wire import as_dict, loads
    from pytest_harness._wire import decode as text_of

    asked = as_dict(loads(text_of(request_body)))
    body = as_dict(response.get("body")).get("string")
    answer = as_dict(loads(text_of(body)))
    if "result" not in answer and "error" not in answer:
        return None
    arguments = plain(asked.get("arguments"))
    error = as_dict(answer.get("error")) if "error" in answer else None
    latency = response.get("latency_s")
    return ToolRun(
        server=uri,
        id="",
        name=unquote(uri.removeprefix(SCHEME)),
        arguments=arguments if isinstance(arguments, dict) else {},
        result="" if error is not None else _text(plain(answer.get("result"))),
        error=None if error is None else _error_text(error),
        replayed=replayed,
        latency_s=latency if isinstance(latency, (int, float)) else None,
    )


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _error_text(error: Mapping[str, Any]) -> str:
    kind = str(error.get("type", "")).rpartition(":")[2] or "Exception"
    return f"{kind}: {error.get('message', '')}"
