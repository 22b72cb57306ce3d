"""One test's cassette: where it lives, opened for the test (or its first model call), saved.

``CassetteSlot`` is the call hook the plugin installs for every test. A test that uses the
harness (or every test under ``harness_capture = all``) opens it at set-up, so all of its
HTTP traffic goes through the cassette; any other test opens it on its first model call
through the seam, and a test that never makes one does not import vcrpy at all.

Every interaction the test plays or records is read by ``_wire.recognise``; the model
responses it finds go to the slot's ``on_response`` (the test's traffic check), the model
seam's own calls included. The slot numbers each seam call in ``prepare`` (a header on its
request, ``matching.SEAM_HEADER``, never saved), keeps what the check found in the reply
under that number, and tells the seam in ``judged``: one check for all of a test's traffic.

A seam call also gets a key of what it asks (``matching.seam_key``), saved beside the
interaction it recorded. In replay, ``replay`` answers a seam call by that key straight
from the cassette file's interaction, when the seam can read the recorded reply itself
(``_model.replay``): the interaction is counted as played and its reply shown to the traffic
check, as the HTTP path would, and neither litellm nor vcrpy builds a request. Any other
call takes the HTTP path.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pytest_harness._cassettes.matching import SEAM_HEADER, host_filter, seam_call, seam_key
from pytest_harness._cassettes.netguard import NetworkGuard
from pytest_harness._cassettes.scrub import Redaction, secret_values_from_env
from pytest_harness._pytest_glue import scope
from pytest_harness._pytest_glue.settings import file_name
from pytest_harness.errors import (
    CassetteError,
    CassetteMiss,
    ConfigError,
    EndpointUnreachable,
    HarnessStop,
    LocalModelError,
    NetworkBlocked,
    ReplayedFailure,
    UnrecordableTraffic,
    causes,
    find_cause,
)

if TYPE_CHECKING:
    from pytest_harness._cassettes.interactions import Priced
    from pytest_harness._cassettes.mcp import ToolRun
    from pytest_harness._model.response import ModelResponse
    from pytest_harness._wire import Recognised

SUFFIX = ".yaml"
# Failures that are the test's set-up, not the model's: never recorded as a call's outcome.
_NOT_RECORDED = (
    HarnessStop,
    CassetteError,
    NetworkBlocked,
    ConfigError,
    LocalModelError,
    EndpointUnreachable,
    ReplayedFailure,
)
# Where a recorded failure says its call went when it sent no request (cut off before).
_UNSENT = "http://unsent.invalid/"
_CALL = scope.NOTE_PREFIX + "cassette_call"  # the seam call's number, in its kwargs
_ASKED = scope.NOTE_PREFIX + "cassette_key"  # its key (matching.seam_key), in its kwargs
# The key replay gives SDKs that refuse to start without one: nothing is sent in replay.
REPLAY_KEY = "pytest-harness-replay-needs-no-key"


def provider_keys(environ: Mapping[str, str]) -> list[str]:
    """The names (never the values) of the provider keys set in ``environ``: every
    ``*_API_KEY`` variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``...)
    that is not empty and not the placeholder replay sets (``REPLAY_KEY``)."""
    return sorted(
        name
        for name, value in environ.items()
        if name.upper().endswith("_API_KEY") and value and value != REPLAY_KEY
    )


@dataclass(frozen=True, slots=True)
class Seen:
    """A model response the code under test received.

    Attributes:
        found: what ``_wire.recognise`` read from it.
        uri: the request's URL.
        replayed: played from the cassette (else recorded now).
        seam: a call of the model seam's (else the application's own).
        request: the request's body as sent (redacted when it was recorded), or None (a
            seam call answered by its key: the traffic check reads only its reply).
        latency_s: the exchange's latency: as recorded when replayed, as measured when
            recorded now; None when unknown (a cassette recorded before latencies were kept).
        method: the request's HTTP method (``GET`` for a polled background response).
        price: what the reply cost: as recorded when replayed (None: a recording made
            before prices were kept), as priced now when recorded (None: not priced, as
            for the embedded model's replies).
    """

    found: Recognised
    uri: str
    replayed: bool
    seam: bool = False
    request: bytes | None = None
    latency_s: float | None = None
    method: str = "POST"
    price: Priced | None = None


def cassette_path(
    cassette_dir: Path, nodeid: str, name: str | None, *, model: str | None = None
) -> Path:
    """``<dir>/<module path>/<test name>.yaml``, or ``<dir>/<name>.yaml`` for a named one.

    A copy of a model matrix (``--harness-models``) has its own: ``<test name>[<model>].yaml``
    (``<name>[<model>].yaml``), ``nodeid`` being the test's id without the model, and the
    model made safe for a file name (``file_name``). No other cassette name has brackets.
    """
    tag = "" if model is None else f"[{file_name(model)}]"
    if name is not None:
        relative = Path(name.removesuffix(SUFFIX))
        if relative.is_absolute() or ".." in relative.parts:
            raise ConfigError(
                f"@pytest.mark.harness(cassette={name!r}) must name a relative path inside "
                "harness_cassette_dir, without '..'."
            )
        return cassette_dir / relative.with_name(relative.name + tag + SUFFIX)
    module, _, test = nodeid.partition("::")
    folder = Path(module).with_suffix("")
    return cassette_dir / folder / (file_name(test.replace("::", ".")) + tag + SUFFIX)


def _failed_url(error: BaseException) -> str | None:
    """The URL of the request behind a connection error, when an exception in it knows.

    The deepest one that knows: an SDK's wrapper may carry a made-up request (litellm's
    names ``https://api.openai.com/v1`` whatever the address was).
    """
    found_url = None
    for found in causes(error):
        try:
            request = getattr(found, "request", None)  # httpx's raises when it has none
        except RuntimeError:
            request = None
        url = getattr(request, "url", None)
        host, port = getattr(found, "host", None), getattr(found, "port", None)
        if url is not None:
            found_url = str(url)
        elif isinstance(host, str) and isinstance(port, int):  # aiohttp's connector errors
            found_url = f"http://{host}:{port}"
    return found_url


def _provider(kwargs: Mapping[str, Any]) -> str | None:
    """The provider litellm sends a seam call to: the one the call names, else litellm's
    placing of its model (litellm is loaded: the call was just sent through it)."""
    named = kwargs.get("custom_llm_provider")
    if isinstance(named, str) and named:
        return named
    from pytest_harness._model.seam import provider_of

    return provider_of(str(kwargs.get("model") or ""))


def _address(url: str) -> str:
    """``host:port`` of a URL (the scheme's port when it names none)."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return parts.netloc or url
    return f"{parts.hostname}:{port}"


@dataclass(eq=False)
class CassetteSlot:
    """The cassette of one test (a call hook of the model seam).

    Attributes:
        path: the cassette file.
        mode: ``none`` (replay), ``new`` or ``all``.
        nodeid: the test, for messages.
        run_id: identifies this recording run across xdist workers (``runlog.RunLog``: the
            files it wrote are noted outside them, so a file does not change with the run).
        ignore: body fields left out of matching.
        redaction: what is redacted before anything is saved.
        guard: the network guard to install when the cassette opens (replay only).
        ignore_hosts: hosts whose traffic passes through, neither recorded nor replayed.
        on_response: shown every model response the test's traffic holds; returns its
            defect (a validator reason) or None.
        on_tool_run: shown every MCP tool call the test's traffic holds (``mcp.ToolRun``),
            and every call of a recorded tool (``_recorded_tools``).
        mcp_stdio: MCP servers over stdio while the cassette is open: ``record`` records
            and replays them (``stdio``); ``error`` refuses them (``UnrecordableTraffic``);
            ``live`` lets them run, unrecorded.
        gate: called with the URL of any request about to go to a real server; raises to
            refuse it.
        metadata: written into the cassette with what this test records.
        shared: a named cassette (other tests may record into it too).
        model: the model override (``--harness-model``) of the recording: the one the file
            was recorded with, else this run's; the commands the messages give repeat it.
        replayed_with: this run's override, when it differs from the recording's.
        matrix: the model of the model matrix's copy this test is (``--harness-models``),
            else None.
        pricing: prices a model reply of the application's recorded now (litellm's price
            map), kept with its interaction so that replay needs no litellm; None: not
            priced (the embedded model's replies cost nothing).
    """

    path: Path
    mode: str
    nodeid: str
    run_id: str
    ignore: tuple[str, ...] = ()
    redaction: Redaction = field(default_factory=Redaction)
    guard: NetworkGuard | None = None
    ignore_hosts: tuple[str, ...] = ()
    on_response: Callable[[Seen], str | None] | None = None
    on_tool_run: Callable[[ToolRun], None] | None = None
    mcp_stdio: str = "record"
    gate: Callable[[str], None] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    shared: bool = False
    model: str | None = None
    replayed_with: str | None = None
    matrix: str | None = None
    pricing: Callable[[Recognised], Priced] | None = None
    misses: list[CassetteMiss | CassetteError | UnrecordableTraffic] = field(default_factory=list)
    _recorded_metadata: Mapping[str, Any] = field(default_factory=dict)
    _cassette: Any = None
    _closed: bool = False
    _recorded: bool = False  # closed after routing traffic in a recording mode
    _new: list[Any] = field(default_factory=list)  # the interactions it recorded
    _kept: bool = False  # and saved them
    _previous: dict[str, Any] | None = None
    _stack: contextlib.ExitStack | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _calls: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _judged: dict[int, scope.Judged] = field(default_factory=dict)
    _keys: dict[int, str] = field(default_factory=dict)  # each seam call's key, by number
    # Each seam call's HTTP reply (the response vcrpy recorded or played), whether it was
    # played, and what recognition read in it.
    _replies: dict[int, tuple[Any, bool, Recognised]] = field(default_factory=dict)
    _live_uri: str | None = None
    _failed: dict[int, int] = field(default_factory=dict)  # seam call by its error's id
    # What ran live while this test replayed (``ran_live``), in order.
    live: list[str] = field(default_factory=list)
    _played: list[tuple[int, Mapping[str, Any], bool]] | None = None

    def prepare(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        self.open()
        if self.mode == "none":
            # A retried miss would surface as a connection error, seconds later.
            kwargs.setdefault("num_retries", 0)
            kwargs.setdefault("max_retries", 0)
            kwargs.setdefault("api_key", REPLAY_KEY)
        call = next(self._calls)
        ignored = (*self.ignore, *self.redaction.body_fields)
        key = seam_key(kwargs, ignored, note=scope.NOTE_PREFIX)
        if key is not None:
            kwargs[_ASKED] = self._keys[call] = key
        kwargs[_CALL] = call
        kwargs["extra_headers"] = {
            **(kwargs.get("extra_headers") or {}),
            # Only encodings vcrpy can decode, so cassettes hold readable text.
            "Accept-Encoding": "gzip, deflate",
            SEAM_HEADER: str(call),
        }
        return kwargs

    def receive(self, kwargs: Mapping[str, Any], response: ModelResponse) -> ModelResponse:
        """The seam's response to a call whose reply went through the cassette (the HTTP
        path): a recorded reply keeps the response's price and litellm's provider (replay
        then needs neither litellm's price map nor its placing of model names); a
        replayed one is priced as it was recorded."""
        seen = self._replies.pop(kwargs.get(_CALL), None)  # type: ignore[arg-type]
        if seen is None:
            return response  # none went through it (a route answered, or a replay by key)
        from pytest_harness._cassettes import interactions

        reply, replayed, found = seen
        if not replayed:
            # litellm counts the tokens of a reply that says none: replay needs its count.
            counted = None if found.response.usage.total_tokens else response.usage
            reply[interactions.PRICE] = interactions.Priced(
                response.cost, _provider(kwargs), counted
            )
            return response
        recorded = interactions.price(reply)
        return response if recorded is None else replace(response, cost=recorded.cost)

    def judged(self, kwargs: Mapping[str, Any]) -> scope.Judged | None:
        """What the traffic check found in the reply to this call (None: it saw none)."""
        return self._judged.pop(kwargs.get(_CALL), None)  # type: ignore[arg-type]

    def replay(
        self, kwargs: Mapping[str, Any], read: Callable[[Recognised, Priced | None], Any]
    ) -> Any:
        """The recorded reply to this seam call, found by its key and read by ``read`` (the
        seam's reader, given the reply and its recorded price: its result, or None when it
        cannot read that reply itself); None, and nothing played, when there is none: the
        call takes the HTTP path.

        The interaction is played as the HTTP path plays it: counted as played, its reply
        shown to the traffic check (``Seen.request`` is None: a seam call's request is not
        read there, and the file's is not written out for it).
        """
        key, cassette = kwargs.get(_ASKED), self._cassette
        if self.mode != "none" or cassette is None or not isinstance(key, str):
            return None
        from pytest_harness._cassettes import interactions

        with cassette.playing:  # threads asking the same question each get their own recording
            index = cassette.unplayed(key)
            if index is None:
                return None
            stored = cassette.stored(index)
            failed = interactions.failure(stored)
            if failed is not None:  # it got no reply when recorded: it fails so again
                cassette.play(index)
                raise failed.error()
            found, price = interactions.recognised(stored), interactions.price(stored)
            answer = None if found is None else read(found, price)
            if found is None or answer is None:
                return None
            cassette.play(index)
        uri, method = str(stored["request"]["uri"]), str(stored["request"]["method"]).upper()
        latency = interactions.latency(stored)
        seen = Seen(found, uri, True, seam=True, latency_s=latency, method=method, price=price)
        self._show(seen, call=kwargs.get(_CALL))
        return answer

    def lookup(self, uri: str, body: bytes) -> tuple[Any, bytes | None]:
        """An exchange that is not HTTP through this test's cassette (``store``'s ``lookup``):
        its request, and the body of its recorded answer (played), or None: it runs live now,
        then ``keep`` it. In replay, one the file does not hold raises ``CassetteMiss``."""
        self.open()
        cassette = self._cassette
        if cassette is None:  # the test is over (a late call from a thread): nothing recorded
            return None, None
        request, response = cassette.lookup(uri, body)
        if response is None:
            return request, None
        answer = (response.get("body") or {}).get("string")
        return request, answer if isinstance(answer, bytes) else b""

    def keep(self, request: Any, answer: bytes) -> None:
        """Record the answer of an exchange ``lookup`` let run live (``store``'s ``keep``)."""
        cassette = self._cassette
        if cassette is not None and request is not None:
            cassette.keep(request, answer)

    def exchanges(self, uri: str) -> list[tuple[str, bool]]:
        """The exchanges at ``uri`` (``lookup``'s) the cassette holds, in order: each one's
        request body as matching compares it (``matching.canonical_body``: ignored and
        redacted fields left out), and whether it was played (a recorded tool's miss)."""
        cassette = self._cassette
        if cassette is None:
            return []
        with cassette.playing:
            return [
                (cassette.key(request)[-1], cassette.play_counts[index] > 0)
                for index, (request, _) in enumerate(cassette.data)
                if request is not None and request.uri == uri
            ]

    def ran_live(self, what: str) -> None:
        """Note that ``what`` ran live while this test replayed (an orchestrator tool that
        is not recorded, a subprocess, a connection refused): the reports list it, so a user
        sees whether the replay was complete. Nothing is noted while recording."""
        if self.mode == "none":
            with self._lock:
                self.live.append(what)

    def recall(self, fact: str, model: str, ask: Callable[[str], Any]) -> Any:
        """What litellm knows of ``model`` (``fact``, named as litellm's model info names
        it), as this cassette keeps it in its metadata (``{fact: {model: value}}``).

        Replay answers from the recording, so that it makes the choices the recording made
        (a schema sent as ``response_format`` or in the prompt; a context window) without
        litellm. A recording asks litellm (``ask(model)``) and keeps the answer. A recording
        made before such facts were kept is asked too: litellm answers, as it did then.
        """
        self.open()
        if self.mode == "none":
            kept = self._recorded_metadata.get(fact)
            if isinstance(kept, Mapping) and model in kept:
                return kept[model]
            return ask(model)
        value = ask(model)
        self.metadata.setdefault(fact, {})[model] = value
        return value

    def translate(self, error: BaseException) -> BaseException | None:
        found = find_cause(error, (CassetteMiss, CassetteError, NetworkBlocked, ReplayedFailure))
        return found if found is not None else self.unreachable(error)

    def failed(self, kwargs: Mapping[str, Any], error: BaseException, seconds: float) -> None:
        """Record a seam call that got no reply while recording (it raised, or its caller
        abandoned it: a deadline), in its place: replay fails it the same way there
        (``interactions.Failure``). Not the test's set-up errors (a miss, a blocked connection, a
        wrong setting, the embedded model gone): those fail the test, which records
        nothing; nor a call without a seam key (it could not be found again)."""
        call, cassette = kwargs.get(_CALL), self._cassette
        if self.mode == "none" or cassette is None or not isinstance(call, int):
            return
        if call not in self._keys or isinstance(error, _NOT_RECORDED):
            return
        from pytest_harness._cassettes import interactions

        uri = str(kwargs.get("api_base") or kwargs.get("base_url") or _UNSENT)
        cassette.failed(call, interactions.Failure.of(error, seconds), uri)
        self._failed[id(error)] = call

    def retried(self, error: BaseException) -> None:
        """A call that failed with ``error`` is sent again (a retry middleware): the failure
        recorded in its place goes (replay never retries: it plays the retry's outcome)."""
        call, cassette = self._failed.pop(id(error), None), self._cassette
        if call is not None and cassette is not None:
            cassette.retried(call)

    def unreachable(self, error: BaseException) -> EndpointUnreachable | None:
        """What a recording request that found nothing at its address means, or None.

        SDKs report it as ``Connection error.`` (litellm as an HTTP 500), naming no address,
        under a traceback through their retries; this names the address and the fix.
        """
        if self.mode == "none":
            return None  # replay sends nothing: a refused connection is NetworkBlocked
        refused = find_cause(error, (ConnectionRefusedError, socket.gaierror))
        if refused is None:
            return None
        url = _failed_url(error) or self._live_uri
        where = _address(url) if url else "the model server's address"
        if isinstance(refused, ConnectionRefusedError):
            reason, fix = "connection refused", "Start the server that should listen there"
        else:
            reason, fix = f"no such host: {refused}", "Check the host name"
        asked = f" (the request: {url.partition('?')[0]})" if url else ""
        return EndpointUnreachable(
            f"nothing answers at {where} ({reason}) while recording {self.nodeid}{asked}. "
            f"{fix}, or fix the address the code uses (api_base, base_url, OPENAI_BASE_URL)."
        )

    def open(self) -> None:
        """Load the cassette and route HTTP through it (once; later calls do nothing)."""
        with self._lock:
            if self._stack is not None or self._closed:
                return  # open already, or the test is over (a late call from a thread)
            from pytest_harness._cassettes import runlog, store

            runlog.note_used(self.path)  # --harness-prune: this cassette is in use
            cassette = store.load(
                self.path,
                mode=self.mode,
                ignore=self.ignore,
                redaction=self.redaction,
                rerecord_hint=self.hint,
                ignore_hosts=self.ignore_hosts,
                watcher=self._watch,
                gate=self._gate,
            )
            cassette.misses = self.misses  # one list: the test's report reads it
            self._recorded_metadata = cassette.metadata
            stack = contextlib.ExitStack()
            stack.enter_context(store.patched(cassette))
            if self.guard is not None:
                self.guard.install()
                stack.callback(self.guard.uninstall)
            if self.mode == "none":
                from pytest_harness._cassettes.replayed import watch_processes

                stack.callback(watch_processes(self.ran_live))
            from pytest_harness._cassettes.mcp import StdioGuard

            start = None if self.mcp_stdio == "error" else self._start_stdio
            stdio = StdioGuard(self._refuse_stdio, start)
            stdio.install()
            stack.callback(stdio.remove)
            self._cassette, self._stack = cassette, stack

    @property
    def is_open(self) -> bool:
        return self._stack is not None

    @property
    def recorded_metadata(self) -> Mapping[str, Any]:
        """The metadata of the cassette as loaded (empty before ``open`` or when re-recording)."""
        return self._recorded_metadata

    def _gate(self, request: Any) -> None:
        self._live_uri = request.uri  # the last request sent live, should it find nothing
        if self.gate is not None:
            self.gate(request.uri)

    def _watch(self, request: Any, response: dict[str, Any], replayed: bool) -> None:
        call = seam_call(request.headers)
        if call is None and self.on_response is None and self.pricing is None:
            return
        from pytest_harness._wire import recognise

        status = (response.get("status") or {}).get("code") or 0
        body = (response.get("body") or {}).get("string")
        headers = response.get("headers") or {}
        found = recognise(request.uri, request.body, int(status), headers, body)
        if found is None:
            self._tool_run(request, response, replayed)
            return
        if call is not None:  # priced by the seam's response (``receive``)
            self._replies[call] = (response, replayed, found)
        elif not replayed and self.pricing is not None:
            from pytest_harness._cassettes.interactions import PRICE

            response[PRICE] = self.pricing(found)
        self._seen(request, response, found, replayed=replayed, call=call)

    def _seen(
        self,
        request: Any,
        response: Mapping[str, Any],
        found: Recognised,
        *,
        replayed: bool,
        call: Any,
    ) -> None:
        """Show a model response to the traffic check; keep what it found for seam ``call``."""
        from pytest_harness._cassettes import interactions

        body = request.body if isinstance(request.body, bytes) else None
        seen = Seen(
            found,
            request.uri,
            replayed,
            seam=call is not None,
            request=body,
            latency_s=response.get(interactions.LATENCY),  # as recorded, or measured now
            method=str(request.method).upper(),
            price=interactions.price(response),  # as recorded, or priced now
        )
        self._show(seen, call)

    def _show(self, seen: Seen, call: Any) -> None:
        if self.on_response is None:
            return
        problem = self.on_response(seen)
        if call is not None:  # a retried call: its last reply
            self._judged[call] = scope.Judged(problem, latency_s=seen.latency_s)

    def _tool_run(self, request: Any, response: Mapping[str, Any], replayed: bool) -> None:
        if self.on_tool_run is None:
            return
        from pytest_harness._cassettes import mcp

        run = mcp.recognise(request.method, request.uri, request.body, response, replayed=replayed)
        if run is None:  # a recorded tool's call
            from pytest_harness import _recorded_tools

            run = _recorded_tools.recognise(
                request.method, request.uri, request.body, response, replayed=replayed
            )
        if run is not None:
            self.on_tool_run(run)

    async def _start_stdio(self, command: str, args: list[str], **options: Any) -> Any:
        """An MCP server over stdio, recorded, replayed or live as ``mcp_stdio`` says."""
        from pytest_harness._cassettes import stdio

        return await stdio.spawn(self, self.mcp_stdio, command, args, **options)

    def _refuse_stdio(self, command: str) -> UnrecordableTraffic:
        error = UnrecordableTraffic(
            f"{self.nodeid} started the MCP server `{command}` over stdio, which this test "
            "refuses (mcp_stdio='error'). To record its exchanges and replay them without the "
            "server: @pytest.mark.harness(mcp_stdio='record') (the default), or "
            "harness_mcp_stdio = record in the ini file. Or let this test run it live and "
            "unrecorded: @pytest.mark.harness(mcp_stdio='live'), or harness_mcp_stdio = live."
        )
        self.misses.append(error)
        return error

    def hint(self) -> str:
        """How to record the test again with the recording's settings (for messages)."""
        test = self.nodeid
        model = self.matrix
        if model is not None:
            return (
                f"The recording of model {model!r} (this test's copy in the model matrix) is "
                f"missing it. To record it: pytest '{test}' --harness-record=new "
                f"--harness-models={model} (adds what is missing), or pytest '{test}' "
                f"--harness-live --harness-models={model} (re-records it from scratch)."
            )
        if self.replayed_with is not None:
            return (
                f"This cassette was recorded with --harness-model={self.model} and this run "
                f"asks for model {self.replayed_with!r}, so the requests differ. To replay it "
                f"as recorded, run without that override; to record it with "
                f"{self.replayed_with!r}: pytest '{test}' --harness-live "
                f"--harness-model={self.replayed_with}"
            )
        model = f" --harness-model={self.model}" if self.model else ""
        return (
            f"To record it: pytest '{test}' --harness-record=new{model} (adds what is "
            f"missing), or pytest '{test}' --harness-live{model} (re-records the cassette "
            f"from scratch).{self._keyless_hint()}"
        )

    def rerecord_command(self) -> str:
        """The command that records this test again from scratch, with the recording's
        model (``--harness-record=new`` would keep what the file holds)."""
        if self.matrix is not None:
            return f"pytest '{self.nodeid}' --harness-live --harness-models={self.matrix}"
        model = f" --harness-model={self.model}" if self.model else ""
        return f"pytest '{self.nodeid}' --harness-live{model}"

    def _keyless_hint(self) -> str:
        """With no provider key set, the command that records with the embedded model: the
        commands above would end in the SDK's "missing credentials"."""
        from pytest_harness._local.route import LOCAL_MODEL

        if self.model == LOCAL_MODEL or provider_keys(os.environ):
            return ""
        return (
            " No API key is set (no *_API_KEY variable in the environment): record it with "
            f"the embedded model, which needs none: pytest '{self.nodeid}' --harness-live "
            "--harness-model=local (it needs pip install 'pytest-harness[local]')."
        )

    def close(self, *, keep: bool) -> Path | None:
        """Stop routing through the cassette; save what was recorded when ``keep``."""
        with self._lock:
            stack, cassette = self._stack, self._cassette
            self._stack = self._cassette = None
            self._closed = True
        if stack is None:
            return None
        stack.close()
        if self.mode == "none":
            self._replayed(cassette)
            return None
        from pytest_harness._cassettes import store

        self._recorded = True
        self._new = store.recorded(cassette, self._keys)
        self._kept = keep
        if not keep:
            return None
        secrets = secret_values_from_env(os.environ)
        self._previous = store.save_recordings(
            cassette,
            self._new,
            mode=self.mode,
            run_id=self.run_id,
            secrets=secrets,
            metadata=self.metadata,
        )
        return self.path if self._previous is not None else None

    def _replayed(self, cassette: Any) -> None:
        """Keep which recordings the replay played, and what ran live beside the cassette."""
        played = cassette.played()
        # A named cassette holds other tests' recordings too: only what this test played.
        self._played = [(i, stored, used) for i, stored, used in played if used or not self.shared]
        self.live += [f"request to a host in harness_ignore_hosts: {r}" for r in cassette.passed]
        if self.guard is not None:
            ignored = host_filter(self.ignore_hosts)  # allowed too: their requests are listed
            allowed = [a for a in self.guard.allowed_connections if not ignored(f"http://{a}")]
            self.live += [f"connection to {a} (harness_allow_hosts)" for a in allowed]
            self.live += [f"connection blocked: {a}" for a in self.guard.blocked]

    def played(self) -> list[tuple[int, Mapping[str, Any], bool]] | None:
        """After a replay, once: each recording of the file replay could play, and whether
        the test played it (``HarnessCassette.played``; of a named cassette, only those it
        played); None before ``close``, when recording, or when asked again (the slot then
        lets the file's data go)."""
        played, self._played = self._played, None
        return played

    def recordings(self) -> tuple[dict[str, Any] | None, dict[str, Any]] | None:
        """After a recording: the file's data before this recording run (None when there
        was none) and the data it holds now, or this test's recording when it was not
        saved (the test failed); None in replay, or when the test recorded nothing.
        """
        if not self._recorded or not self._new:
            return None
        from pytest_harness._cassettes import read, runlog

        written = runlog.RunLog(self.run_id).written(self.path)
        before: dict[str, Any] | None = None
        if written is not None:  # this run wrote the file: what it held before the run
            before = {"interactions": written.original} if written.original else None
        elif self.path.exists():
            before = read.read(self.path)
        if self._kept and written is not None:
            return before, read.read(self.path)
        return before, {"interactions": self._new, "metadata": self.metadata}

    def previous(self) -> dict[str, Any] | None:
        """After a recording: the file's header (``version``, ``metadata``) from before this
        test wrote to it (empty when there was no file), and under ``write.THIS_RUN`` the
        per-test entries this run had written into it; None in replay or before ``close``.
        """
        if not self._recorded:
            return None
        if self._previous is None:  # the test wrote nothing: the file is as it was
            from pytest_harness._cassettes import read, runlog, write

            self._previous = read.header(self.path)
            written = runlog.RunLog(self.run_id).written(self.path)
            if self._previous and written is not None:
                self._previous[write.THIS_RUN] = list(written.tests)
        return self._previous
