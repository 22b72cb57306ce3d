"""The embedded model's route: ``model="local"`` calls go to the llama.cpp server, mended
where it differs from OpenAI (system messages, schemas, tool calls, limits).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from pytest_harness._local import grammar
from pytest_harness._local.install import MODEL_NAME
from pytest_harness._model.response import ModelResponse, ToolCall
from pytest_harness.errors import ConfigError, causes, describe

if TYPE_CHECKING:
    from pytest_harness._local.server import LocalServer
    from pytest_harness._pytest_glue.scope import Judged

LOCAL_MODEL = "local"
# The reply's limit when the request sets none and no schema bounds it: a few sentences
# (about 90 words), past which a 270M base model mostly repeats itself; 5 to 15 seconds on
# 2 CPU cores. See docs/guides/embedded-model.md.
DEFAULT_MAX_TOKENS = 128
# An agent's notes for the embedded model's grammar (``_noted``), never sent elsewhere.
SCHEMA_NOTE = "_harness_local_schema"
GRAMMAR_NOTE = "_harness_local_grammar"
LITELLM_NAME = f"openai/{MODEL_NAME}"  # litellm's OpenAI route, to the server's one model
REPLAY_BASE = "http://127.0.0.1:9/v1"

Route: TypeAlias = Callable[[dict[str, Any]], dict[str, Any]]

# The OpenAI SDK under litellm refuses to send a request without a key; the server ignores it.
_API_KEY = "no-key-local"
_SYSTEM_ROLES = frozenset({"system", "developer"})
# How long a call that lost its connection waits for the server process to be reaped: a
# crash on the first token closes the socket a moment before the process is gone.
_DEATH_WAIT = 2.0


def make_route(base_url: str, sample: int | None = None) -> Route:
    """The route sending calls for ``LOCAL_MODEL`` to the server at ``base_url``.

    It takes the litellm kwargs of a call and returns the kwargs to use: calls for any other
    model pass unchanged, and nothing the caller passed is mutated. ``LocalRoute``
    wraps it as the seam's call hook.

    Args:
        base_url: ``LocalServer.base_url``, or ``REPLAY_BASE`` when replaying cassettes.
        sample: the running sample's number in a sampled test, else None (``defaults``).
    """

    def route(kwargs: dict[str, Any]) -> dict[str, Any]:
        if kwargs.get("model") != LOCAL_MODEL:
            return kwargs
        routed = {**kwargs, "model": LITELLM_NAME, "api_base": base_url, "api_key": _API_KEY}
        for name, value in defaults(sample).items():
            routed.setdefault(name, value)
        routed["max_retries"] = routed["num_retries"] = 0
        routed = offer(routed)  # tools as a prompt and a grammar: no native calls
        routed = _noted(routed)  # what a judge told the embedded model's grammar
        if "response_format" in routed:
            routed["response_format"] = json_object_format(routed["response_format"])
        routed["messages"] = fold_system(routed.get("messages") or [])
        return limited(routed)

    return route


SEED = 42
SAMPLED_TEMPERATURE = 0.8  # llama.cpp's own default: varied, still on topic


def defaults(sample: int | None) -> dict[str, Any]:
    """The temperature and seed of a call that sets none: 0 and ``SEED``, one answer
    however often asked; in sample ``n`` of a sampled test, ``SAMPLED_TEMPERATURE`` and
    ``SEED + n``: samples that differ, the same again when recorded again."""
    if sample is None:
        return {"temperature": 0, "seed": SEED}
    return {"temperature": SAMPLED_TEMPERATURE, "seed": SEED + sample}


def json_object_format(value: Any) -> Any:
    """OpenAI's ``json_schema`` form in the one llama-cpp-python's server accepts."""
    if not isinstance(value, Mapping) or value.get("type") != "json_schema":
        return value
    schema = (value.get("json_schema") or {}).get("schema")
    return {"type": "json_object"} if schema is None else {"type": "json_object", "schema": schema}


def limited(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` (llama.cpp's form) with its schema bounded and a limit on its reply.

    The schema of a ``json_object`` response format is bounded (``grammar.bound``), and a
    request that sets no ``max_tokens`` (nor ``max_completion_tokens``) gets the tokens
    the longest reply of that schema takes, else ``DEFAULT_MAX_TOKENS``. A limit the
    caller set is kept, even one too small for the schema: the judge's error then says
    how many tokens the schema needs (``needed_tokens``).
    """
    form = request.get("response_format")
    needed = None
    if isinstance(form, Mapping) and form.get("type") == "json_object" and "schema" in form:
        made = grammar.bound(form["schema"])
        request["response_format"] = {**form, "schema": made.schema}
        needed = made.tokens
    if request.get("max_tokens") is None and request.get("max_completion_tokens") is None:
        request["max_tokens"] = needed or DEFAULT_MAX_TOKENS
    return request


def needed_tokens(schema: Any) -> int | None:
    """The tokens the longest reply ``schema`` allows takes on the embedded model, or
    None when its grammar does not bound it (``grammar.bound``)."""
    return grammar.bound(schema).tokens


def _noted(routed: dict[str, Any]) -> dict[str, Any]:
    """The call with what its agent noted for the embedded model's grammar (a judge that
    knows its reply's shape better than its output schema says): ``SCHEMA_NOTE``, a
    narrower schema for the grammar (the reply is still checked against the agent's own);
    ``GRAMMAR_NOTE``, a GBNF grammar for a free-text reply (sent in the body, as
    llama-cpp-python's server reads it)."""
    schema = routed.pop(SCHEMA_NOTE, None)
    free = routed.pop(GRAMMAR_NOTE, None)
    form = routed.get("response_format")
    if schema is not None and isinstance(form, Mapping) and form.get("type") == "json_schema":
        routed["response_format"] = {
            **form,
            "json_schema": {**(form.get("json_schema") or {}), "schema": schema},
        }
    if isinstance(free, FreeText) and "response_format" not in routed:
        routed["extra_body"] = {**(routed.get("extra_body") or {}), "grammar": free.grammar}
        if routed.get("max_tokens") is None and routed.get("max_completion_tokens") is None:
            routed["max_tokens"] = free.tokens
    return routed


@dataclass(frozen=True, slots=True)
class FreeText:
    """A free-text reply's form, for the embedded model's grammar (``GRAMMAR_NOTE``).

    Attributes:
        grammar: the GBNF grammar of the reply (llama.cpp's grammar language).
        tokens: the tokens its longest reply takes (its UTF-8 bytes, and one for the end).
    """

    grammar: str
    tokens: int


def fold_system(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """System text moved to the head of the first user turn (the gemma format drops it)."""
    system = [_text(m.get("content")) for m in messages if m.get("role") in _SYSTEM_ROLES]
    rest = [dict(m) for m in messages if m.get("role") not in _SYSTEM_ROLES]
    preface = "\n\n".join(text for text in system if text)
    if not preface:
        return rest
    for message in rest:
        if message.get("role") == "user":
            message["content"] = "\n\n".join(filter(None, [preface, _text(message.get("content"))]))
            return rest
    return [{"role": "user", "content": preface}, *rest]


def _text(content: Any) -> str:
    """A message's text; the gemma format keeps string content only."""
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(
        str(part.get("text") or "")
        for part in content
        if isinstance(part, Mapping) and part.get("type") == "text"
    )


@dataclass(eq=False)
class LocalRoute:
    """Sends ``model="local"`` calls to the embedded model (a call hook of the seam).

    In replay mode no server is started: the calls are answered from cassettes, which match
    loopback hosts without their port.

    Attributes:
        live: recording (the server runs), else replaying.
        sample: the running sample's number in a sampled test, else None (``defaults``).
    """

    live: bool
    sample: int | None = None

    def prepare(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if kwargs.get("model") != LOCAL_MODEL:
            return kwargs
        return make_route(endpoint(live=self.live), self.sample)(kwargs)

    def receive(self, kwargs: Mapping[str, Any], response: ModelResponse) -> ModelResponse:
        """The embedded model's tool calls, read back from its JSON reply."""
        return received(kwargs, response)

    def judged(self, kwargs: Mapping[str, Any]) -> Judged | None:
        return None  # the cassette's traffic check judges the replies

    def replay(self, kwargs: Mapping[str, Any], read: Any) -> None:
        return None  # the cassette replays, behind this route

    def recall(self, fact: str, model: str, ask: Any) -> bool | None:
        """What the harness knows of the embedded model (``_model.seam.recalled``), without
        litellm, which knows no model named ``local``: it takes a JSON schema (this route
        hands it to llama.cpp's grammar); its context window is unknown, as litellm would
        say (compaction stays off unless given a budget)."""
        return True if fact == "supports_response_schema" else None

    def translate(self, error: BaseException) -> BaseException | None:
        """The server's death behind a failed call, if it died (see ``failure``)."""
        if not self.live:
            return None
        return _told(failure(wait=_DEATH_WAIT if _connection_lost(error) else 0.0))


_server: LocalServer | None = None
_server_lock = threading.Lock()
_death_told = False  # whether a test's report has shown the server's death yet


def _local_server() -> LocalServer:
    global _server, _death_told
    with _server_lock:
        if _server is None:
            from pytest_harness._local.server import LocalServer

            _server, _death_told = LocalServer().start(), False
        dead = _server.failure()
        if dead is not None:  # not started again: it would die the same way
            _death_told = True  # (the lock is held)
            raise dead
        return _server


def failure(wait: float = 0.0) -> BaseException | None:
    """The ``LocalModelError`` saying how this process's server died, or None.

    Args:
        wait: seconds to give a server that may be dying to end.
    """
    with _server_lock:
        server = _server
    return None if server is None else server.failure(wait)


def death_news() -> str | None:
    """How the server died, for the report of the test during which it died: once, and only
    when no harness call has raised it to the test already (the application's own calls
    met a connection error, and may have swallowed it)."""
    global _death_told
    dead = failure()
    with _server_lock:
        if dead is None or _death_told:
            return None
        _death_told = True
    return describe(dead)


def _told(dead: BaseException | None) -> BaseException | None:
    """``dead``, noted as told to the test (it is about to be raised to it)."""
    global _death_told
    if dead is not None:
        with _server_lock:
            _death_told = True
    return dead


def _connection_lost(error: BaseException) -> bool:
    """Whether a broken connection is behind ``error`` (the SDKs wrap it in their own)."""
    return any(
        isinstance(cause, ConnectionError) or "Connect" in type(cause).__name__
        for cause in causes(error)
    )


def endpoint(*, live: bool) -> str:
    """The embedded model's OpenAI base URL: its server's (started on first use) when
    ``live``, else ``REPLAY_BASE`` (replay needs no server)."""
    return _local_server().base_url if live else REPLAY_BASE


def environment(*, live: bool) -> dict[str, str]:
    """The variables that point an OpenAI client (the SDK, litellm) at the embedded model:
    at its faithful endpoint for application code (``endpoint`` module) when ``live``."""
    base = _local_server().app_url if live else REPLAY_BASE
    return {"OPENAI_BASE_URL": base, "OPENAI_API_BASE": base, "OPENAI_API_KEY": _API_KEY}


def sampling(sample: int | None) -> None:
    """Tell this process's endpoint which sample of a sampled test runs (None: none), so that
    the application's calls get that sample's ``defaults`` too; nothing when no server runs."""
    with _server_lock:
        server = _server
    if server is not None:
        server.tell_sample(sample)


def stop_local_server() -> None:
    """Stop the embedded model's server if this process started one."""
    global _server
    with _server_lock:
        if _server is not None:
            _server.stop()
            _server = None


MARK = "_harness_local_tools"  # the route's note that it offered tools (never sent)
ANSWER_LENGTH = 160  # characters of an answer given where tools were offered: two sentences


def offer(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's kwargs with its tools turned into a prompt and a grammar, and its tool
    turns into plain ones (also when it offers no tools: the gemma format has none).

    Under ``tool_choice`` ``"auto"`` (or none), a tool is offered until the conversation
    has called it since the user last spoke; then only the answer is: a 270M model asked
    again with the same tools calls them again, and an agent would never end. An agent
    offered N tools so ends within N + 1 requests.
    """
    tools = [t["function"] for t in kwargs.pop("tools", None) or [] if "function" in t]
    choice = kwargs.pop("tool_choice", None)
    messages = kwargs.get("messages") or []
    if not tools:
        kwargs["messages"] = _plain(messages, None)
        return kwargs
    callable_, answer = _choice(tools, choice, _called(messages))
    kwargs["response_format"] = {"type": "json_object", "schema": _schema(callable_, answer)}
    kwargs["messages"] = _plain(messages, _guide(callable_, answer))
    kwargs[MARK] = True
    return kwargs


def received(kwargs: Mapping[str, Any], response: ModelResponse) -> ModelResponse:
    """``response`` to a call with these kwargs: read back when the route offered tools."""
    return receive(response) if kwargs.get(MARK) else response


def receive(response: ModelResponse) -> ModelResponse:
    """The reply read back: a tool call, or the answer as the text."""
    found = read_back(response.content or "")
    if found is None:
        return response
    if found.tool is None:
        return replace(response, content=found.answer)
    call = ToolCall(
        id="call_local_0", name=found.tool, arguments=found.parsed, raw_arguments=found.arguments
    )
    # A cut-off call keeps its finish reason ("length"): the loop tells the model so.
    finish = "tool_calls" if found.parsed is not None else response.finish_reason
    return replace(response, content=None, tool_calls=(call,), finish_reason=finish)


@dataclass(frozen=True, slots=True)
class ReadBack:
    """What a reply to tools offered as a prompt and a grammar says.

    Attributes:
        tool: the tool it calls, or None when it answers.
        arguments: the call's arguments as JSON text (cut off when the reply was).
        parsed: the arguments as an object, or None when they do not parse.
        answer: the answer's text (so far, when cut off), when it answers.
    """

    tool: str | None = None
    arguments: str = ""
    parsed: dict[str, Any] | None = None
    answer: str | None = None


def read_back(text: str) -> ReadBack | None:
    """A reply to tools offered by ``offer``, read back; None when it is neither form.

    A reply the token limit cut short is read as OpenAI would send it: a tool call whose
    arguments do not parse, or the answer's text so far. Anything else is left for the
    response check to judge.
    """
    try:
        data = json.loads(text)
    except ValueError:
        return _cut_off(text)
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("tool"), str):
        arguments = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        return ReadBack(tool=data["tool"], arguments=json.dumps(arguments), parsed=arguments)
    if isinstance(data.get("answer"), str):
        return ReadBack(answer=data["answer"])
    return None


_TOOL_START = re.compile(r'\s*\{\s*"tool"\s*:\s*"(?P<name>[^"\\]+)"\s*,\s*"arguments"\s*:\s*')
_ANSWER_START = re.compile(r'\s*\{\s*"answer"\s*:\s*"')


def _cut_off(text: str) -> ReadBack | None:
    if (tool := _TOOL_START.match(text)) is not None:
        return ReadBack(tool=tool["name"], arguments=text[tool.end() :])
    if (answer := _ANSWER_START.match(text)) is not None:
        partial = text[answer.end() :]
        try:
            content = json.loads(f'"{partial.rstrip(chr(92))}"')
        except ValueError:
            content = partial
        return ReadBack(answer=content)
    return None


def _choice(
    tools: list[Mapping[str, Any]], choice: Any, called: frozenset[str] = frozenset()
) -> tuple[list[Mapping[str, Any]], bool]:
    """The tools the reply may call, and whether it may answer, under ``tool_choice``
    (``auto``: the tools not ``called`` yet, see ``offer``)."""
    if choice == "none":
        return [], True
    if choice == "required":
        return tools, False
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        named = [tool for tool in tools if tool["name"] == name]
        if not named:
            raise ConfigError(
                f"tool_choice names the tool {name!r}, which is not among the tools offered "
                f"({', '.join(tool['name'] for tool in tools)}): name one of them"
            )
        return named, False
    return [tool for tool in tools if tool["name"] not in called], True


def _called(messages: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The tools the conversation called since the user last spoke."""
    called: set[str] = set()
    for message in messages:
        if message.get("role") == "user":
            called.clear()
        elif message.get("role") == "assistant":
            called.update(str(function.get("name")) for _, function in _calls(message))
    return frozenset(called)


def read_back_recorded(schema: Any, response: ModelResponse) -> ModelResponse | None:
    """A recorded reply (of the harness's) to a request whose JSON ``schema`` is one
    ``offer`` made, its tools as a grammar: read back (``receive``) as a tool call or an
    answer, as the seam read it. None for a reply to any other request."""
    choices = schema.get("anyOf", [schema]) if isinstance(schema, Mapping) else []
    offered = any(
        isinstance(choice, Mapping) and "tool" in (choice.get("properties") or {})
        for choice in choices
    )
    return receive(response) if offered else None


def _schema(tools: Sequence[Mapping[str, Any]], answer: bool) -> dict[str, Any]:
    choices: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": [tool["name"]]},
                # no parameters: no arguments (OpenAI's reading), not any object at all
                "arguments": tool.get("parameters") or {"type": "object", "properties": {}},
            },
            "required": ["tool", "arguments"],
        }
        for tool in tools
    ]
    if answer:
        answer_text = {"type": "string", "maxLength": ANSWER_LENGTH}
        choices.append(
            {"type": "object", "properties": {"answer": answer_text}, "required": ["answer"]}
        )
    return choices[0] if len(choices) == 1 else {"anyOf": choices}


def _guide(tools: Sequence[Mapping[str, Any]], answer: bool) -> str:
    lines = ["You can call these tools:"] if tools else []
    for tool in tools:
        parameters = json.dumps((tool.get("parameters") or {}).get("properties") or {})
        lines.append(f"- {tool['name']}: {tool.get('description') or ''} Arguments: {parameters}")
    forms = ['{"tool": <name>, "arguments": {...}} to call a tool'] if tools else []
    forms += ['{"answer": <text>} to answer'] if answer else []
    lines.append(f"Reply with one JSON object: {', or '.join(forms)}.")
    return "\n".join(lines)


def _plain(messages: Sequence[Mapping[str, Any]], guide: str | None) -> list[dict[str, Any]]:
    """Tool turns as plain turns, every content as text (the gemma format keeps user and
    assistant text only; an assistant turn that only called tools has null content).

    The results of one batch become one user turn that restates the user's last question
    beside what each tool returned: a 270M model answers from its results far more often
    when the question sits next to them. ``guide`` (the tools offered), when given, comes
    first as a system turn.
    """
    plain: list[dict[str, Any]] = [{"role": "system", "content": guide}] if guide else []
    names: dict[str, str] = {}  # tool call id -> tool name
    question = ""
    for message in messages:
        role = message.get("role")
        if role in ("tool", "function"):
            default = str(message.get("name") or "the tool")
            name = names.get(str(message.get("tool_call_id")), default)
            line = f"The tool {name} returned: {_text(message.get('content'))}"
            if plain and plain[-1].get("tool_results"):
                plain[-1]["content"] += "\n" + line
            else:
                plain.append({"role": "user", "content": f"{question}{line}", "tool_results": 1})
            continue
        calls = _calls(message) if role == "assistant" else []
        text = _text(message.get("content"))
        if text or not calls:
            plain.append({**message, "content": text})
            plain[-1].pop("tool_calls", None)
            plain[-1].pop("function_call", None)
        for call_id, function in calls:
            names[call_id] = str(function.get("name"))
            arguments = function.get("arguments") or "{}"
            text = f'{{"tool": {json.dumps(function.get("name"))}, "arguments": {arguments}}}'
            plain.append({"role": "assistant", "content": text})
        if role == "user":
            question = f"The user asked: {_text(message.get('content'))}\n"
    for message in plain:
        if message.pop("tool_results", None):
            message["content"] += "\nWrite the reply to the user."
    return plain


def _calls(message: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """An assistant turn's tool calls (and a legacy ``function_call``): id and function."""
    calls = message.get("tool_calls")
    found = [
        (str(call.get("id")), call["function"])
        for call in (calls if isinstance(calls, list) else ())
        if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping)
    ]
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping):
        found.append((str(legacy.get("name")), legacy))
    return found
