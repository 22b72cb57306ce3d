"""vcrpy glue: an indexed cassette, HTTP patched through it, its recordings saved.

The only module that imports vcrpy. A cassette file is read into vcrpy's objects here
(``Persister.load``, vcrpy's persister API).

HTTP goes to the innermost open cassette of the process (``Routing``). vcrpy patches HTTP
libraries with ``mock.patch`` objects whose stubs hold their cassette; here they are built
once per process for a stand-in that forwards to the innermost open cassette, patched in
when the first cassette opens and put back when the last one closes. Building them per
cassette cost each test about 5 ms: a subclass of every stub, and an import attempt of each
HTTP library that is not installed (Python does not remember a failed import). Each patched
attribute's value from before any cassette touched it is put back, whatever order the
cassettes close in.

"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSequence, Sequence
from pathlib import Path
from typing import Any, overload

import vcr.filters
from vcr.cassette import Cassette
from vcr.errors import UnhandledHTTPRequestError
from vcr.patch import CassettePatcherBuilder
from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.record_mode import RecordMode
from vcr.request import Request

from pytest_harness._cassettes import (
    bodies,
    checksum,
    credentials,
    interactions,
    matching,
    mcp,
    read,
    scrub,
    write,
)
from pytest_harness.errors import CassetteError, CassetteMiss, UnrecordableTraffic

_ABSENT = object()


def patched_object(patcher: Any) -> Any:
    """What a ``mock`` patcher patches (known through its ``getter`` until it is entered)."""
    getter = getattr(patcher, "getter", None)
    return getter() if callable(getter) else None


class Routing:
    """Where HTTP goes while cassettes are open: the innermost open one of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[HarnessCassette] = []
        self._patchers: list[Any] | None = None  # vcrpy's, built once, for ``_Innermost``
        self._entered: contextlib.ExitStack | None = None
        self._pristine: dict[tuple[Any, str], Any] = {}

    def innermost(self) -> HarnessCassette:
        """The cassette opened last and not closed yet."""
        try:
            return self._open[-1]
        except IndexError:
            raise RuntimeError("no cassette is open: vcrpy's stubs were left in place") from None

    def opened(self, cassette: HarnessCassette) -> None:
        """Route HTTP to ``cassette`` (patching it through, when it is the first open one)."""
        with self._lock:
            self._open.append(cassette)
            if len(self._open) == 1:
                self._patch()

    def closed(self, cassette: HarnessCassette) -> None:
        """Stop routing to ``cassette``; the last one out puts every patched attribute back."""
        with self._lock:
            self._open.remove(cassette)
            if not self._open:
                self._unpatch()

    def _patch(self) -> None:
        if self._patchers is None:
            built = CassettePatcherBuilder(_Innermost(self)).build()
            self._patchers = [patcher for patcher in built if not _in_process(patcher)]
        for patcher in self._patchers:
            target, name = patched_object(patcher), getattr(patcher, "attribute", None)
            if target is not None and isinstance(name, str):
                self._pristine.setdefault((target, name), target.__dict__.get(name, _ABSENT))
        with contextlib.ExitStack() as stack:
            for patcher in self._patchers:
                stack.enter_context(patcher)
            self._entered = stack.pop_all()

    def _unpatch(self) -> None:
        entered, self._entered = self._entered, None
        try:
            if entered is not None:
                entered.close()
        finally:
            self._restore()

    def _restore(self) -> None:
        for (target, name), value in self._pristine.items():
            if value is _ABSENT:
                if name in target.__dict__:
                    delattr(target, name)
            elif target.__dict__.get(name, _ABSENT) is not value:
                setattr(target, name, value)
        self._pristine.clear()


class _Innermost:
    """The cassette vcrpy's stubs hold: it reads every attribute of the innermost open one
    (the stubs only read their cassette)."""

    def __init__(self, routing: Routing) -> None:
        self._routing = routing

    def __getattr__(self, name: str) -> Any:
        return getattr(self._routing.innermost(), name)


# ``read.read`` checked the shape of every interaction: what is read here is there, and typed.
def _request(raw: Mapping[str, Any]) -> Any:
    body = bodies.body_bytes(raw.get("body"))
    return Request(raw["method"], raw["uri"], body, raw.get("headers") or {})


def _response(raw: Mapping[str, Any]) -> dict[str, Any]:
    content = bodies.body_bytes(raw.get("body") or {}) or b""
    # vcrpy's stubs read ``status.message`` and ``headers`` (a list per name) unconditionally;
    # a hand-edited file may leave them out, or give a header a single value.
    headers = {
        name: values if isinstance(values, list) else [values]
        for name, values in (raw.get("headers") or {}).items()
    }
    if bodies.is_stored_form(raw.get("body")):
        # Stored as JSON, the body may be edited by hand as JSON: its length is what it is now.
        for name in [name for name in headers if name.lower() == "content-length"]:
            headers[name] = [str(len(content))]
    status = {**raw["status"], "message": raw["status"].get("message") or ""}
    return {**raw, "status": status, "headers": headers, "body": {"string": content}}


class Persister:
    """Loads cassettes for ``HarnessCassette`` (saving goes through ``save_recordings``)."""

    @staticmethod
    def load(path: Path) -> dict[str, Any]:
        """The file's data (``read.read``); its interactions become vcrpy's as they are read
        (``Interactions``)."""
        if not path.is_file():
            raise CassetteNotFoundError()
        # Raises CassetteError, naming the part, unless well-formed and holding recordings.
        return read.read_recordings(path)


class _Stored:
    """An interaction as the file holds it, not yet made into vcrpy's pair (its response may
    be made already: replay plays a response and never reads its recorded request)."""

    __slots__ = ("interaction", "response")

    def __init__(self, interaction: Mapping[str, Any]) -> None:
        self.interaction = interaction
        self.response: dict[str, Any] | None = None


class Interactions(MutableSequence[tuple[Any, Any]]):
    """A cassette's ``data``: vcrpy's list of (Request, response) pairs, where the pair of an
    interaction of the file is made the first time it is read.

    Making a vcrpy Request and response of each of 1,000 interactions took longer than
    parsing the file, and a test plays a few of them. Replay needs only the response
    (``response``): its vcrpy Request, the larger cost, is made when the pair is read. Each
    is made once, under a lock (threads of the code under test may read the same one): every
    later read gets the same objects, which the check of a replayed body tells apart by
    identity (``_check_body``).

    Args:
        request: makes vcrpy's Request of an interaction of the file.
        response: makes vcrpy's response of an interaction of the file.
        stored: the file's interactions.
    """

    def __init__(
        self,
        request: Callable[[Mapping[str, Any]], Any],
        response: Callable[[Mapping[str, Any]], dict[str, Any]],
        stored: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self._request = request
        self._response = response
        self._items: list[tuple[Any, Any] | _Stored] = [_Stored(i) for i in stored]
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> tuple[Any, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Any, Any]]: ...
    def __getitem__(self, index: int | slice) -> tuple[Any, Any] | list[tuple[Any, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._items)))]
        with self._lock:
            item = self._items[index]
            if isinstance(item, _Stored):
                item = self._items[index] = (self._request(item.interaction), self._made(item))
            return item

    def response(self, index: int) -> Any:
        """The response of interaction ``index`` (the same object its pair holds, made or
        read later), made without its Request."""
        with self._lock:
            item = self._items[index]
            return self._made(item) if isinstance(item, _Stored) else item[1]

    def _made(self, item: _Stored) -> dict[str, Any]:
        if item.response is None:
            item.response = self._response(item.interaction)
        return item.response

    @overload
    def __setitem__(self, index: int, value: tuple[Any, Any]) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[tuple[Any, Any]]) -> None: ...
    def __setitem__(self, index: Any, value: Any) -> None:
        self._items[index] = list(value) if isinstance(index, slice) else value

    @overload
    def __delitem__(self, index: int) -> None: ...
    @overload
    def __delitem__(self, index: slice) -> None: ...
    def __delitem__(self, index: int | slice) -> None:
        del self._items[index]

    def insert(self, index: int, value: tuple[Any, Any]) -> None:
        self._items.insert(index, value)

    @staticmethod
    def save_cassette(path: Any, cassette_dict: Any, serializer: Any) -> None:
        raise CassetteError("cassettes are written by save_recordings, not by vcrpy")


# A replayed call asks for the key of the same request several times (vcrpy's
# can_play_response_for, play_response, and the miss check); the canonical JSON is the cost.
_request_key = functools.lru_cache(maxsize=512)(matching.request_key)


@functools.lru_cache(maxsize=512)
def _request_digest(
    method: str, uri: str, body: bytes | None, ignore: tuple[str, ...], blank: frozenset[str]
) -> str:
    """The digest of a request's match key, what the index is keyed by: a request is looked
    up more than once (vcrpy asks whether it can play it, then plays it)."""
    return matching.digest(_request_key(method, uri, body, ignore, blank))


# The method of an exchange that is not HTTP (``HarnessCassette.lookup``): its URI's scheme
# says what it is (``tool:``, ``stdio:``).
EXCHANGE_METHOD = "POST"

_RECORD_MODES = {"none": RecordMode.NONE, "new": RecordMode.NEW_EPISODES, "all": RecordMode.ALL}

# watcher(request, response, replayed): an interaction the code under test received. The
# response is the one recorded (or played): what the watcher adds to it (its price) is kept.
Watcher = Callable[[Any, dict[str, Any], bool], None]
# gate(request): called before a request goes to the real server; raises to refuse it.
Gate = Callable[[Any], None]


# Answers that say "try again" (rate limits, timeouts, server faults) to the harness's own
# model calls (``matching.SEAM_HEADER``) are not recorded: the harness owns their retries
# and never retries in replay, so a cassette holds the answer a retried request got in the
# end, not the fault before it.
# The application's traffic is recorded as it is, faults included (its SDK retries replay).
TRANSIENT = frozenset({408, 429, 500, 502, 503, 504, 529})


class HarnessCassette(Cassette):  # type: ignore[misc]
    """A vcrpy cassette with an index on the canonical request.

    Args:
        path: the cassette file.
        mode: ``none``, ``new`` or ``all``.
        ignore: dotted body fields left out of matching.
        redaction: what to redact from requests and responses.
        rerecord_hint: says how to record this test (asked when a miss happens).
        ignore_hosts: hosts whose requests pass through, neither recorded nor replayed.
        watcher: shown every interaction played or recorded.
        gate: shown every request about to be sent to the real server.

    Attributes:
        misses: every ``CassetteMiss`` raised, in order (an SDK may have wrapped them).
        passed: ``METHOD URL`` of each request to a host whose traffic passes through
            (``ignore_hosts``), sent live, in order.
        playing: held while a recording is picked and counted as played, by either path
            (the HTTP match, the seam's key): threads asking the same each get their own.
    """

    def __init__(
        self,
        path: Path,
        *,
        mode: str,
        ignore: Sequence[str],
        redaction: scrub.Redaction,
        rerecord_hint: Callable[[], str],
        ignore_hosts: Sequence[str] = (),
        watcher: Watcher | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.file = Path(path)
        # Redacted fields are not matched on: a request matches its recording as sent, with
        # no redaction on the way (the recording's values are REDACTED, the request's real).
        self._ignore = (*ignore, *redaction.body_fields)
        self._blank = redaction.query_params
        # By the digest of the match key (``matching.digest``): a file stores it so.
        self._index: dict[str, list[int]] = {}
        self._seams: dict[str, list[int]] = {}  # the seam calls' keys (matching.seam_key)
        self._stored: Sequence[Mapping[str, Any]] = ()  # the loaded file's interactions
        self._hint = rerecord_hint
        self._watcher = watcher
        self._gate = gate
        self.misses: list[CassetteMiss | CassetteError | UnrecordableTraffic] = []
        self._sound: set[int] = set()  # responses whose body was checked (by id)
        self._sent: dict[int, float] = {}  # when each live request was let through (by id)
        self._damaged: dict[int, CassetteError] = {}  # and those found damaged
        self._seam_sent: dict[int, Any] = {}  # the last request each seam call sent live
        # The requests to hosts whose traffic passes through (``ignore_hosts``), in order.
        self.passed: list[str] = []
        self.playing = threading.Lock()
        passes = self._passes = matching.host_filter(ignore_hosts)
        super().__init__(
            path,
            persister=Persister,
            record_mode=_RECORD_MODES[mode],
            # A request of a host that passes through, or a credential exchange, is not kept.
            before_record_request=lambda request: (
                None
                if passes(request.uri) or _exchange(request) is not None
                else scrub.redact_request(_bytes(request), redaction)
            ),
            before_record_response=lambda response: scrub.redact_response(
                _decoded(response), redaction
            ),
        )
        self.data = Interactions(self._stored_request, self._stored_response)

    def key(self, request: Any) -> matching.RequestKey:
        """The request's match key, redacted or not: the redacted fields are not in it."""
        body = _bytes(request).body
        return _request_key(request.method, request.uri, body, self._ignore, self._blank)

    def digest(self, request: Any) -> str:
        """The digest of the request's match key (``matching.digest``: the index's key)."""
        body = _bytes(request).body
        return _request_digest(request.method, request.uri, body, self._ignore, self._blank)

    def stored_key(self, request: Mapping[str, Any]) -> matching.RequestKey:
        """The match key of a request as a cassette file stores it (``interactions``)."""
        body = bodies.body_bytes(request.get("body"))
        method, uri = str(request.get("method", "")), str(request.get("uri", ""))
        return _request_key(method, uri, body, self._ignore, self._blank)

    # An interaction of the file as vcrpy replays it: its request and response filtered as
    # when they were recorded (the filters are idempotent; the response's never drops one,
    # as vcrpy's may).
    def _stored_request(self, stored: Mapping[str, Any]) -> Any:
        return self._before_record_request(_request(stored["request"]))

    def _stored_response(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        failed = interactions.failure(stored)
        if failed is not None:  # no reply to play: replay raises how the call failed
            return {interactions.FAILURE: failed}
        response = {
            **_response(stored["response"]),
            interactions.LATENCY: interactions.latency(stored),
            interactions.PRICE: interactions.price(stored),
        }
        filtered: dict[str, Any] = self._before_record_response(response)
        return filtered

    def append(self, request: Any, response: Any) -> None:
        started = self._sent.pop(id(request), None)
        call = matching.seam_call(request.headers)
        if call is not None:
            if response["status"]["code"] in TRANSIENT:
                return  # the seam retries it; the answer it gets in the end is recorded
            self._seam_sent.pop(call, None)  # answered: no failure of its is recorded
        before = len(self.data)
        super().append(request, response)
        if len(self.data) > before:
            # From the request let through (the gate) to the whole response read.
            latency = None if started is None else time.perf_counter() - started
            self.data[before][1][interactions.LATENCY] = latency
            self._remember(before)
            if self._watcher is not None:
                request, response = self.data[before]
                self._watcher(request, response, False)

    def play_response(self, request: Any) -> Any:
        if mcp.standing_stream(request.method, request.headers):
            return copy.deepcopy(mcp.NOT_OFFERED)  # an MCP session's GET stream: not recorded
        found = _exchange(request)
        if found is not None:  # an OAuth token request in replay (``_exchanged``)
            return credentials.stand_in(found)  # not a model call: no watcher sees it
        response = self._play_next(request)
        if interactions.FAILURE in response:
            raise response[interactions.FAILURE].error()
        self._check_body(request, response)
        if self._watcher is not None:
            self._watcher(request, response, True)
        return response

    def _play_next(self, request: Any) -> Any:
        """The first response to ``request`` not played yet, counted as played (under
        ``playing``): vcrpy's ``play_response`` without its list of played pairs (read only
        by its own saving), which would make the recorded Request of every played one."""
        with self.playing:
            for index, response in self._responses(request):
                if self.play_counts[index] == 0 or self.allow_playback_repeats:
                    self.play_counts[index] += 1
                    return response
        raise UnhandledHTTPRequestError(
            f"The cassette ({self._path!r}) doesn't contain the request ({request!r}) asked for"
        )

    def _check_body(self, request: Any, response: Mapping[str, Any]) -> None:
        """A response body damaged on disk (cut, or edited): say which one, in which file.

        Replayed as it is, the application's SDK would fail on it with a bare parse error
        that names neither the cassette nor the interaction.
        """
        if id(response) in self._sound:
            return
        if id(response) in self._damaged:  # an SDK's retry: the same error, reported once
            raise self._damaged[id(response)]
        problem = _body_problem(request.method, response)
        if problem is not None:
            number = next(i for i, (_, r) in enumerate(self.data, 1) if r is response)
            error = CassetteError(
                f"cassette {self.file}: the response body of interaction {number} "
                f"({request.method} {request.uri.partition('?')[0]}) {problem}: the file was "
                f"cut or edited. Fix the body, or record the test again. {self._hint()}"
            )
            self.misses.append(error)
            self._damaged[id(response)] = error
            raise error
        self._sound.add(id(response))

    def _remember(self, index: int) -> None:
        self._index.setdefault(self.digest(self.data[index][0]), []).append(index)

    def unplayed(self, seam: str) -> int | None:
        """The first interaction not played yet that answers the seam call keyed ``seam``
        (``matching.seam_key``), by its index; None when none is left. Call it, and
        ``play``, holding ``playing``."""
        for index in self._seams.get(seam, ()):
            if self.play_counts[index] == 0:
                return index
        return None

    def stored(self, index: int) -> Mapping[str, Any]:
        """Interaction ``index`` of the loaded file, as the file holds it (``unplayed``
        gives only such indexes)."""
        return self._stored[index]

    def play(self, index: int) -> None:
        """Count interaction ``index`` as played, its request not sent (the seam's fast path).

        Its body is not checked as the HTTP path checks it: the seam answers only from a
        file whose checksum holds (``_index_seams``), and only with a reply it read whole.
        """
        self.play_counts[index] += 1

    def played(self) -> list[tuple[int, Mapping[str, Any], bool]]:
        """Each interaction of the loaded file that replay could play (not of a host whose
        traffic passes through, nor a credential exchange): its index, itself as the file
        holds it, and whether this test played it."""
        played = [
            (index, stored, self.play_counts[index] > 0)
            for index, stored in enumerate(self._stored)
            if not self._passes(str(stored["request"]["uri"]))
        ]
        # Only one not played may be an exchange (one an older version recorded).
        return [
            (i, stored, used) for i, stored, used in played if used or not _stored_exchange(stored)
        ]

    def _responses(self, request: Any) -> Iterator[tuple[int, Any]]:
        if self._passes(request.uri):
            return  # an ignored host: never replayed
        for index in self._index.get(self.digest(request), ()):
            yield index, self.data.response(index)

    def can_play_response_for(self, request: Any) -> bool:
        # vcrpy's own would redact the request first: its match key leaves redacted fields out.
        if self._passes(request.uri):
            self.passed.append(f"{request.method} {request.uri.partition('?')[0]}")
            return False  # an ignored host: the request passes through
        found = _exchange(request)
        if found is not None:
            return self._exchanged(request, found)
        if mcp.standing_stream(request.method, request.headers):
            return True  # answered "not offered" (play_response), in recording too
        replays = self.rewound or self.allow_playback_repeats
        if replays and self.record_mode != RecordMode.ALL and request in self:
            return True
        if self.write_protected:
            miss = CassetteMiss(self.miss_message(request))
            self.misses.append(miss)
            raise miss
        if self._gate is not None:
            self._gate(request)
        self._sent[id(request)] = time.perf_counter()  # sent live now: its latency starts
        call = matching.seam_call(request.headers)
        if call is not None:
            self._seam_sent[call] = request  # what a seam call that fails is recorded with
        return False

    def _exchanged(self, request: Any, found: credentials.Exchange) -> bool:
        """Whether a credential exchange (``credentials``) is answered here: while recording
        it goes to its server (and is stored nowhere: ``before_record_request`` drops it);
        in replay an OAuth token request gets a stand-in token, any other is refused."""
        if not self.write_protected:
            return False
        if found.token:
            return True
        miss = CassetteMiss(credentials.refusal(found, str(request.method), str(request.uri)))
        self.misses.append(miss)
        raise miss

    def lookup(self, uri: str, body: bytes) -> tuple[Any, dict[str, Any] | None]:
        """An exchange that is not HTTP (a recorded tool's call, an MCP stdio message: ``uri``
        names it, ``body`` is the JSON it sends), as vcrpy's stubs play an HTTP request: its
        request, and its recorded response counted as played, or None when it runs live now
        (then ``keep`` it). In replay, one the file does not hold raises ``CassetteMiss``."""
        request = Request(EXCHANGE_METHOD, uri, body, {})
        if not self.can_play_response_for(request):
            return request, None
        response: dict[str, Any] = self.play_response(request)
        return request, response

    def keep(self, request: Any, answer: bytes) -> None:
        """Record the exchange ``lookup`` said runs live: ``answer`` is the JSON it got back,
        stored like a response body (redacted and scanned alike)."""
        response = {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": answer},
        }
        self.append(request, response)

    def failed(self, call: int, failure: interactions.Failure, uri: str) -> None:
        """Record that seam call ``call`` got no reply (``failure``), in its place, with the
        request it last sent (one made for ``uri`` when it sent none); not when a reply of
        it was recorded (an error status: it replays as it was)."""
        if any(matching.seam_call(r.headers) == call for r, _ in self.recorded_now):
            return
        request = self._seam_sent.pop(call, None)
        if request is None:
            request = Request("POST", uri, b"", {matching.SEAM_HEADER: str(call)})
        request = self._before_record_request(request)
        if request is not None:  # None: a host whose traffic passes through
            self.data.append((request, {interactions.FAILURE: failure}))
            self.dirty = True

    def retried(self, call: int) -> None:
        """Forget the failure recorded for seam call ``call``: its caller sends it again (a
        retry middleware), and replay, which never retries, gives the retry's outcome."""
        for index in range(len(self.data) - 1, self._loaded_count - 1, -1):
            request, response = self.data[index]
            if interactions.FAILURE in response and matching.seam_call(request.headers) == call:
                del self.data[index]
                return

    def miss_message(self, request: Any) -> str:
        """What a replay miss says: the file, the request, the closest recording, the fix."""
        key = self.key(self._before_record_request(request))
        lines = [
            f"no recording in {self._path} matches this request:",
            _indent(matching.describe(key)),
        ]
        # A request of a host ignored since it was recorded is filtered out (None).
        recorded = [self.key(stored) for stored, _ in self.data if stored is not None]
        if matching.digest(key) in self._index:
            count = len(self._index[matching.digest(key)])
            lines.append(f"it was recorded {count} time(s) and every recording is already used.")
        elif not recorded:
            lines.append("the cassette has no recordings (the file is missing or empty).")
        else:
            nearest = matching.closest(key, recorded)
            assert nearest is not None  # recorded is not empty
            lines += ["closest recorded request:", _indent(matching.diff(nearest, key))]
        lines.append(self._hint())
        return "\n".join(lines)

    def _load(self) -> None:
        if self.record_mode == RecordMode.ALL:
            return  # re-recording from scratch: the old file is neither needed nor trusted
        try:
            data = Persister.load(self.file)
        except CassetteNotFoundError:
            return
        stored = data["interactions"]
        # The keys the file stores, trusted only while its checksum holds and its settings
        # are the test's; else (a file written before keys were stored, edited since, or
        # keyed with other settings) computed once, from its requests.
        trusted = checksum.stored_keys(data, self._ignore, self._blank)
        keys = trusted or [
            matching.digest(self.stored_key(interaction["request"])) for interaction in stored
        ]
        # Each pair made when first read; a replayed response without its request.
        self.data = Interactions(self._stored_request, self._stored_response, stored)
        self._stored = stored
        for index, key in enumerate(keys):
            self._index.setdefault(key, []).append(index)
        if trusted is not None:
            self._index_seams(stored)
        # vcrpy's _old_interactions is read only by its own saving, which save_recordings does.
        self._loaded_count = len(self.data)
        self._metadata = dict(data.get("metadata") or {})
        self.rewound = True

    def _index_seams(self, stored: Sequence[Mapping[str, Any]]) -> None:
        """Index the seam calls' keys (``matching.seam_key``) the file's interactions keep.

        Only a file whose stored keys are trusted (``checksum.stored_keys``) is indexed so: a
        seam key cannot be computed again from the request, so in a file edited by hand its
        seam calls are answered by their HTTP match until it is recorded again. A host whose
        traffic passes through is never replayed, by either path.
        """
        for index, interaction in enumerate(stored):
            seam = interactions.seam(interaction)
            if seam is not None and not self._passes(interaction["request"]["uri"]):
                self._seams.setdefault(seam, []).append(index)

    def _save(self, force: bool = False) -> None:
        """Saving is explicit (``save_recordings``), once the test's outcome is known."""

    @property
    def metadata(self) -> dict[str, Any]:
        """The loaded file's metadata (empty when there was none, or when re-recording)."""
        return dict(getattr(self, "_metadata", None) or {})

    @property
    def recorded_now(self) -> list[tuple[Any, Any]]:
        return list(self.data[self._loaded_count :])


def load(
    path: Path,
    *,
    mode: str,
    ignore: Sequence[str],
    redaction: scrub.Redaction,
    rerecord_hint: Callable[[], str],
    ignore_hosts: Sequence[str] = (),
    watcher: Watcher | None = None,
    gate: Gate | None = None,
) -> HarnessCassette:
    """The cassette at ``path``, its recordings loaded (none when re-recording: ``all``)."""
    cassette = HarnessCassette(
        path,
        mode=mode,
        ignore=ignore,
        redaction=redaction,
        rerecord_hint=rerecord_hint,
        ignore_hosts=ignore_hosts,
        watcher=watcher,
        gate=gate,
    )
    cassette._load()
    return cassette


def _body_problem(method: str, response: Mapping[str, Any]) -> str | None:
    """What shows a recorded body was damaged on disk, or None.

    Its length differs from the ``Content-Length`` recorded with it; or, without one, a
    successful reply whose ``Content-Type`` says JSON does not parse. A body recorded
    malformed (a server's mistake) is replayed as it was: its length still agrees.
    """
    status = (response.get("status") or {}).get("code")
    body = (response.get("body") or {}).get("string") or b""
    headers = {name.lower(): values for name, values in (response.get("headers") or {}).items()}
    length = next(iter(headers.get("content-length") or ()), None)
    if method != "HEAD" and status not in (204, 304) and str(length).isdecimal():
        if int(str(length)) != len(body):
            return f"is {len(body)} bytes, where its recorded Content-Length says {length}"
        return None
    kinds = " ".join(str(kind) for kind in headers.get("content-type") or ()).lower()
    if length is None and isinstance(status, int) and 200 <= status < 300 and "json" in kinds:
        try:
            json.loads(body)
        except (ValueError, RecursionError) as error:
            return f"is not the JSON its Content-Type says ({error})"
    return None


def _exchange(request: Any) -> credentials.Exchange | None:
    """The credential exchange ``request`` is (``credentials.exchange``), or None."""
    return credentials.exchange(request.method, request.uri, _bytes(request).body)


def _stored_exchange(stored: Mapping[str, Any]) -> bool:
    """Whether a stored interaction is a credential exchange (one an older version recorded):
    replay never plays it, so it is not counted as unused."""
    request = stored["request"]
    body = bodies.body_bytes(request.get("body"))
    return credentials.exchange(request.get("method"), request.get("uri"), body) is not None


def _bytes(request: Any) -> Any:
    """``request`` with a bytes body: vcrpy's aiohttp stub passes a ``json=`` argument as is."""
    if isinstance(request.body, (dict, list)):
        request.body = json.dumps(request.body).encode("utf-8")
    return request


def _decoded(response: dict[str, Any]) -> dict[str, Any]:
    """Decompress a gzip, deflate, brotli or zstd body, so it is checked, counted and stored
    readable (vcrpy's filter deep-copies: only call it when needed).

    brotli needs the ``brotli`` (or ``brotlicffi``) module, zstd ``zstandard`` or Python
    3.14's ``compression.zstd``: without it, or when it does not decompress, the body is
    kept as it came (stored as base64, neither checked nor counted).
    """
    headers = response.get("headers") or {}
    encodings = [
        value
        for name, values in headers.items()
        if name.lower() == "content-encoding"
        for value in (values if isinstance(values, list) else [values])
    ]
    if not encodings:
        return response
    if str(encodings[0]).strip().lower() == "zstd":
        return _unzstd(response)
    return dict(vcr.filters.decode_response(response))


def _unzstd(response: dict[str, Any]) -> dict[str, Any]:
    """``_decoded`` for zstd, which vcrpy does not decompress."""
    decompress = _zstd_decompressor()
    body = (response.get("body") or {}).get("string")
    if decompress is None or not isinstance(body, bytes):
        return response
    try:
        plain = decompress(body)
    except Exception:  # zstandard.ZstdError, compression.zstd.ZstdError: not zstd after all
        return response
    names = {name.lower(): name for name in response["headers"]}
    headers = {
        name: values
        for name, values in response["headers"].items()
        if name.lower() not in ("content-encoding", "content-length")
    }
    headers[names.get("content-length", "Content-Length")] = [str(len(plain))]
    return {**response, "headers": headers, "body": {**response["body"], "string": plain}}


@functools.cache
def _zstd_decompressor() -> Callable[[bytes], bytes] | None:
    """Python 3.14's ``compression.zstd.decompress``, else its backport's (what httpx2's
    ``zstd`` extra installs: with it, httpx2 asks for zstd replies), else one made of
    ``zstandard``, else None (none is installed)."""
    import importlib

    for module in ("compression.zstd", "backports.zstd"):
        try:
            decompress: Callable[[bytes], bytes] = importlib.import_module(module).decompress
            return decompress
        except ImportError:
            continue
    try:
        zstandard = importlib.import_module("zstandard")
    except ImportError:
        return None

    def frames(data: bytes) -> bytes:
        plain = []
        while data:  # a body may hold several frames, one after the other
            frame = zstandard.ZstdDecompressor().decompressobj()
            plain.append(frame.decompress(data))
            if not frame.eof:
                raise ValueError("the zstd body is cut short")
            data = frame.unused_data
        return b"".join(plain)

    return frames


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


@contextlib.contextmanager
def patched(cassette: HarnessCassette) -> Iterator[HarnessCassette]:
    """Route HTTP traffic through ``cassette`` until the block ends (``Routing``: the
    innermost open cassette answers; every patched attribute is put back when the last open
    cassette closes, also when cassettes were closed out of order)."""
    _ROUTING.opened(cassette)
    try:
        yield cassette
    finally:
        _ROUTING.closed(cassette)


_ROUTING = Routing()
# httpx transports that never leave the process (a test's own ASGI or WSGI app, a mock):
# recording them would replay the app under test instead of running it.
_IN_PROCESS = frozenset({"ASGITransport", "WSGITransport", "MockTransport"})


def _in_process(patcher: Any) -> bool:
    return getattr(patched_object(patcher), "__name__", "") in _IN_PROCESS


def recorded(cassette: HarnessCassette, seams: Mapping[int, str] | None = None) -> list[Any]:
    """What ``cassette`` recorded during this test, as a file stores interactions.

    ``seams``: the key of what each seam call asked (``matching.seam_key``), by its call
    number, stored with the interaction that call recorded.
    """
    keys = seams or {}
    return [
        interactions.interaction(
            matching.untagged(request._to_dict()),
            response,
            response.get(interactions.LATENCY),
            keys.get(matching.seam_call(request.headers) or 0),
        )
        for request, response in cassette.recorded_now
    ]


def save_recordings(
    cassette: HarnessCassette,
    new: Sequence[Mapping[str, Any]],
    *,
    mode: str,
    run_id: str,
    secrets: Sequence[str],
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Write ``new``, what ``cassette`` recorded during this test (``recorded``), into its
    file (``write.merge_and_write``).

    Returns:
        None when the test recorded nothing (no file written), else the file's header from
        before the write (empty when there was no file).
    """
    if not new:
        return None
    return write.merge_and_write(
        cassette.file,
        new,
        mode=mode,
        run_id=run_id,
        secrets=secrets,
        metadata=metadata,
        ignore=cassette._ignore,
        blank=cassette._blank,
    )
