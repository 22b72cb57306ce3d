"""The cassette file: JSON (which is YAML) written atomically and merged under a lock.

- Files are JSON, indented, one field per line (JSON is YAML, so the ``.yaml`` name holds):
  ``json`` loads 1,000 interactions in milliseconds where PyYAML takes a third of a second.
  A hand-edited file in YAML syntax still loads, through PyYAML's C loader.
- Writes are atomic (temporary file in the same folder, then ``os.replace``), scanned for
  secrets first, and merged under a file lock: every test of one recording run that shares
  a cassette adds to it, also from other xdist workers; a new run replaces it. Which run
  wrote a file is kept outside it (``RunLog``), and an interaction recorded again the same
  is kept as the file had it (``steady``): re-recording identical answers changes no byte,
  and a file whose bytes would not change is not written.
- Each interaction is written with its match key, and the file with a checksum (stored match
  keys, below): a replay of a file nobody edited takes its keys instead of computing them.

Plain data in and out: vcrpy is not imported here.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from filelock import FileLock

from pytest_harness import _wire
from pytest_harness._cassettes import bodies, matching, scrub, steady
from pytest_harness._response import Usage
from pytest_harness.errors import CallAbandoned, CassetteError, ReplayedFailure, type_name

FORMAT_VERSION = 1


def merge_and_write(
    path: Path,
    new: Sequence[Mapping[str, Any]],
    *,
    mode: str,
    run_id: str,
    secrets: Sequence[str],
    metadata: Mapping[str, Any] | None = None,
    ignore: Sequence[str] = (),
    blank: Collection[str] = (),
) -> dict[str, Any]:
    """Write the interactions a test recorded into ``path``, keeping what belongs there.

    ``all``: the file holds what this recording run recorded into it (the earlier tests of
    the run that share it, then this one), each interaction the same as the one the file
    held before the run at its place kept as it was (``steady.align``). ``new``: the file
    keeps what it had and gains the new interactions. ``metadata`` is added to the file's; a
    mapping value merges with the file's by key (per-test entries such as ``verdicts``
    survive a new recording run until their own test records again). Which files this run
    wrote is kept outside them (``RunLog``): the file is written only when its bytes change.
    Every interaction is written with its match key (``match_key``), computed with
    ``ignore`` and ``blank`` (``matching.request_key``), and the file with its checksum
    (``stored_keys``). Raises CassetteError when a secret is found; nothing is written then.

    Args:
        ignore: the dotted body fields the cassette's match keys leave out.
        blank: the query parameters whose value its match keys leave out.

    Returns:
        The file's header before this write (``version`` and ``metadata``), or an empty
        dict when there was no file; under ``THIS_RUN``, when this run had written it
        before, the per-test keys (node ids) it wrote.
    """
    log = RunLog(run_id)
    with FileLock(lock_path(path)):
        current, before = (read(path), path.read_bytes()) if path.exists() else ({}, None)
        previous = _header(current) if before is not None else {}
        written = log.written(path)
        earlier: dict[str, Any] = current.get("metadata") or {}
        kept: list[Any] = []
        known: dict[str, Any] = {}
        if mode != "all" or written is not None:
            kept = list(current.get("interactions", []))
            known = dict(earlier)
        else:  # a new recording run: only the per-test entries carry over
            known = {k: v for k, v in earlier.items() if k in _PER_TEST}
        known.pop("run", None)  # cassettes written before the run id moved out kept it here
        interactions = [*kept, *new]
        original = list(current.get("interactions", [])) if written is None else written.original
        key = functools.partial(_request_key, ignore=ignore, blank=blank)
        if mode == "all":
            gains = (matching.SEAM_FIELD, PRICE)  # kept since: an older file gains them
            interactions = steady.align(original, interactions, key, gains)
        data = {
            "version": FORMAT_VERSION,
            "metadata": _sorted(_merged(known, metadata or {})),
            "interactions": [_keyed(interaction, key) for interaction in interactions],
            MATCH_KEYS: _settings(ignore, blank),
            CHECKSUM: "",  # the last field: _sealed fills it in
        }
        scrub.check_before_write(data, secrets, str(path))
        text = _sealed(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        if before != text.encode("utf-8"):
            write_atomic(path, text)
        tests = _per_test_keys(metadata or {})
        log.wrote(path, original, [*(written.tests if written else ()), *tests])
    if previous and written is not None:
        previous[THIS_RUN] = list(written.tests)
    return previous


# The key of ``merge_and_write``'s result that lists the per-test entries this run wrote.
THIS_RUN = "this_run"


def _request_key(
    request: Mapping[str, Any], *, ignore: Sequence[str] = (), blank: Collection[str] = ()
) -> matching.RequestKey:
    method, uri = str(request.get("method", "")), str(request.get("uri", ""))
    return matching.request_key(method, uri, body_bytes(request.get("body")), ignore, blank)


def _per_test_keys(metadata: Mapping[str, Any]) -> list[str]:
    return [
        str(test)
        for name in _PER_TEST
        if isinstance(metadata.get(name), Mapping)
        for test in metadata[name]
    ]


# Metadata kept per test (a mapping by node id): a new recording run keeps the entries of the
# tests that have not recorded yet, so each test compares against its own previous entry.
_PER_TEST = frozenset({"verdicts"})


def _merged(known: Mapping[str, Any], added: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(known)
    for key, value in added.items():
        before = merged.get(key)
        both = isinstance(before, Mapping) and isinstance(value, Mapping)
        merged[key] = {**before, **value} if both else value  # type: ignore[dict-item]
    return merged


def _sorted(value: Any) -> Any:
    """Metadata in one order, its keys sorted at every depth: a file does not change with
    the order tests or a run first wrote its entries in."""
    if isinstance(value, Mapping):
        return {key: _sorted(value[key]) for key in sorted(value, key=str)}
    return value


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a crash leaves either the old file or the new one.

    The file gets the mode any new file gets, 0666 less the umask (0644 usually), as a file
    checked out of git has; ``tempfile.mkstemp``'s 0600 would pass to the file put in place.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = _new_file(path)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _new_file(path: Path) -> tuple[int, Path]:
    """A new empty file beside ``path`` (0666 less the umask), named as no other writer's."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temporary = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
        with contextlib.suppress(FileExistsError):
            return os.open(temporary, flags, 0o666), temporary


def header(path: Path, *, lock: bool = True) -> dict[str, Any]:
    """The file's ``version`` and ``metadata`` (empty when there is no file).

    Args:
        path: the cassette file.
        lock: wait for a writer to finish first (not needed in replay: nothing writes).
    """
    with FileLock(lock_path(path)) if lock else contextlib.nullcontext():
        return _header(read(path)) if path.exists() else {}


def recorded_model(header: Mapping[str, Any]) -> str | None:
    """The model override (``--harness-model``) a cassette was recorded with, or None.

    Cassettes written before the override was kept name only the embedded model's endpoint.
    """
    metadata = header.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    model = metadata.get("model")
    if isinstance(model, str) and model:
        return model
    endpoint = metadata.get("endpoint")
    return endpoint if endpoint == "local" else None


def _header(data: Mapping[str, Any]) -> dict[str, Any]:
    return {"version": data.get("version"), "metadata": data.get("metadata")}


def lock_path(path: Path) -> str:
    """Where the lock of ``path`` lives: the system's temp folder, never beside the file."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / "pytest-harness-locks"
    folder.mkdir(exist_ok=True)
    return str(folder / f"{digest}.lock")


@dataclass(frozen=True, slots=True, kw_only=True)
class Written:
    """A file a recording run has written: what it held before, and the per-test entries.

    Attributes:
        original: the file's interactions before the run's first write (``steady.align``
            keeps them where the run recorded the same again).
        tests: the per-test keys (node ids) of the metadata the run wrote into it.
    """

    original: list[Any]
    tests: tuple[str, ...] = ()


class RunLog:
    """What one session did with cassette files, kept outside them (a file that held its
    run's id changed on every recording run).

    A folder of the system's temp folder named by the session's run id, which xdist workers
    share (as they share the spend ledger): the files the run wrote (``Written``), under the
    cassette's own lock; the cassettes its tests opened and why it was not a full run, for
    ``--harness-prune`` (one file per process, appended to). ``forget`` removes it.
    """

    def __init__(self, run_id: str) -> None:
        self.folder = Path(tempfile.gettempdir()) / "pytest-harness-runs" / run_id

    def written(self, path: Path) -> Written | None:
        """What this run wrote into ``path`` (None: nothing yet). Call under its lock."""
        try:
            data = json.loads(self._mark(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return Written(original=list(data["original"]), tests=tuple(data["tests"]))

    def wrote(self, path: Path, original: Sequence[Any], tests: Sequence[str]) -> None:
        """Remember that this run wrote ``path`` (call under its lock)."""
        tests = tuple(dict.fromkeys(tests))
        known = self.written(path)
        if known is None or known.tests != tests:
            data = {"path": str(path), "original": list(original), "tests": list(tests)}
            write_atomic(self._mark(path), json.dumps(data, ensure_ascii=False))

    def _mark(self, path: Path) -> Path:
        digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()
        return self.folder / "written" / f"{digest}.json"

    def used(self, path: Path, *, folder: bool = False) -> None:
        """Note a cassette a test opened (or a ``folder`` of them a skipped module owns)."""
        self._append("used", f"{'folder' if folder else 'file'}\t{path.resolve()}")

    def partial(self, reason: str) -> None:
        """Note why this run does not show which cassettes are unused (``--harness-prune``)."""
        self._append("partial", " ".join(reason.split()))

    def _append(self, kind: str, line: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"{kind}-{os.getpid()}.txt", "a", encoding="utf-8") as stream:
            stream.write(line + "\n")

    def _lines(self, kind: str) -> list[str]:
        lines: list[str] = []
        for part in sorted(self.folder.glob(f"{kind}-*.txt")):
            lines += part.read_text(encoding="utf-8").splitlines()
        return list(dict.fromkeys(line for line in lines if line))

    def reasons(self) -> list[str]:
        """Why this run was not a full one, as its processes noted it (none: it was)."""
        return self._lines("partial")

    def unused(self, cassette_dir: Path, suffix: str) -> list[Path]:
        """The cassette files (named ``*suffix``) under ``cassette_dir`` no test of this run
        opened, outside the folders noted as used."""
        files_: set[Path] = set()
        folders: list[Path] = []
        for line in self._lines("used"):
            kind, _, where = line.partition("\t")
            if kind == "folder":
                folders.append(Path(where))
            else:
                files_.add(Path(where))
        return [
            path
            for path in sorted(cassette_dir.resolve().rglob(f"*{suffix}"))
            if path.is_file()
            and path not in files_
            and not any(path.is_relative_to(folder) for folder in folders)
        ]

    def forget(self) -> None:
        """Remove the run's folder (the session is over)."""
        shutil.rmtree(self.folder, ignore_errors=True)


# The log that notes the cassettes opened (``note_used``), while a session asks for it.
_tracking: RunLog | None = None


def track(log: RunLog | None) -> RunLog | None:
    """Note the cassettes opened from now on in ``log`` (None: stop); returns the log before."""
    global _tracking
    before, _tracking = _tracking, log
    return before


def note_used(path: Path, *, folder: bool = False) -> None:
    """A test (or a scenarios marker) opened the cassette ``path``: noted while tracked."""
    if _tracking is not None:
        _tracking.used(path, folder=folder)


def interaction(
    request: Mapping[str, Any],
    response: Mapping[str, Any],
    latency_s: float | None = None,
    seam: str | None = None,
) -> dict[str, Any]:
    """One recorded exchange as the file stores it: JSON bodies as JSON (``bodies``),
    volatile headers left out and the loopback port pinned (``steady.kept``), the
    exchange's latency in seconds when it was measured, its price when it was priced
    (``PRICE``, kept in the recorded response until now), and the key of what the model
    seam asked (``matching.seam_key``) when the seam made it."""
    raw = dict(request)
    raw["body"] = _stored(raw["body"])
    if FAILURE in response:  # no reply: how the call failed, in its place
        failed = response[FAILURE]
        how = failed.stored() if isinstance(failed, Failure) else failed
        stored = steady.kept({"request": raw, FAILURE: how})
        return stored if seam is None else {**stored, matching.SEAM_FIELD: seam}
    body = _stored((response.get("body") or {}).get("string"))
    shown = body if isinstance(body, dict) else {"string": body or ""}
    answer = {name: value for name, value in response.items() if name not in _KEPT_APART}
    stored = steady.kept({"request": raw, "response": {**answer, "body": shown}})
    if latency_s is not None:
        stored[LATENCY] = round(latency_s, 3)
    priced = price(response)
    if priced is not None:
        stored[PRICE] = priced.stored()
    if seam is not None:
        stored[matching.SEAM_FIELD] = seam
    return stored


# The interaction field that holds how long the exchange took when it was recorded (seconds).
LATENCY = "latency_s"
# The interaction field that holds what its reply cost when it was recorded (``Priced``).
PRICE = "price"
# What a recorded response carries until it is written, then the interaction holds apart.
_KEPT_APART = frozenset({LATENCY, PRICE})
# The interaction field of a model call of the harness that got no reply while recorded (it
# failed, or its caller abandoned it), in place of its response (``Failure``).
FAILURE = "failure"


@dataclass(frozen=True, slots=True)
class Failure:
    """How a model call of the harness ended without a reply while recorded: replay ends it
    the same way, at the same place (``error``).

    Stored as ``{"kind": ..., "after_s": ..., "type": ..., "message": ...}``.

    Attributes:
        kind: ``abandoned`` (its caller cancelled it: a tribunal's or a team member's
            deadline passed) or ``error`` (it raised).
        after_s: the seconds it had run.
        type: the type name of the error it raised (``CancelledError`` when abandoned).
        message: the error's message.
    """

    kind: str
    after_s: float
    type: str
    message: str

    @classmethod
    def of(cls, error: BaseException, seconds: float) -> Failure:
        """The failure of a call that raised ``error`` (``asyncio.CancelledError``: its
        caller abandoned it) after ``seconds``."""
        kind = "abandoned" if isinstance(error, asyncio.CancelledError) else "error"
        return cls(kind, round(seconds, 3), type_name(error), str(error))

    def stored(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "after_s": self.after_s,
            "type": self.type,
            "message": self.message,
        }

    def error(self) -> BaseException:
        """What replay raises in the call's place: ``CallAbandoned`` (the deadline that cut
        the call off counts it as timed out, without waiting), or the recorded error again
        (``ReplayedFailure``, named by the recorded type)."""
        if self.kind == "abandoned":
            return CallAbandoned(
                f"this model call was abandoned after {self.after_s:g} s while recording (its "
                "caller gave up on it: a tribunal's or a team member's timeout) and nothing "
                "abandoned it at the same place in replay. Record the test again "
                "(pytest --harness-live)."
            )
        return ReplayedFailure(self.message, recorded_type=self.type)


def failure(interaction: Mapping[str, Any]) -> Failure | None:
    """How a stored interaction's call failed (``Failure``), or None: it holds a reply (or
    its failure is of the wrong shape: edited by hand)."""
    kept = interaction.get(FAILURE)
    if not isinstance(kept, Mapping):
        return None
    kind, after, type_, message = (kept.get(k) for k in ("kind", "after_s", "type", "message"))
    if kind not in ("abandoned", "error") or not isinstance(type_, str):
        return None
    seconds = 0.0 if isinstance(after, bool) or not isinstance(after, (int, float)) else after
    return Failure(kind, float(seconds), type_, message if isinstance(message, str) else "")


@dataclass(frozen=True, slots=True)
class Priced:
    """A recorded model reply's price, as litellm gave it when the reply was recorded: what
    replay needs of litellm, kept so that replay never imports it.

    Attributes:
        cost: the reply's cost in USD, or None: litellm had no price for the model.
        provider: the provider litellm placed the call with (``openai`` for a model
            named without a prefix that it sends to OpenAI), or None when not known.
        usage: the tokens litellm counted itself, for a reply that carried no usage (a
            llama.cpp stream sends none); None when the reply said its own.
    """

    cost: float | None
    provider: str | None = None
    usage: Usage | None = None

    def stored(self) -> dict[str, Any]:
        """As the file stores it: ``{"cost": ..., "provider": ..., "usage": {...}}`` (what
        is None left out, but the cost)."""
        kept: dict[str, Any] = {"cost": self.cost}
        if self.provider is not None:
            kept["provider"] = self.provider
        if self.usage is not None:
            kept["usage"] = {name: getattr(self.usage, name) for name in _USAGE_FIELDS}
        return kept


_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def price(interaction: Mapping[str, Any]) -> Priced | None:
    """The price an interaction (or a recorded response) keeps, or None: recorded before
    prices were kept, not a model reply, or a value of the wrong shape (hand-edited)."""
    kept = interaction.get(PRICE)
    if isinstance(kept, Priced):
        return kept
    if not isinstance(kept, Mapping):
        return None
    cost, provider = kept.get("cost"), kept.get("provider")
    if isinstance(cost, bool) or not isinstance(cost, (int, float, type(None))):
        return None
    if cost is not None and not 0 <= cost < float("inf"):
        return None
    return Priced(
        None if cost is None else float(cost),
        provider if isinstance(provider, str) else None,
        _usage(kept.get("usage")),
    )


def _usage(kept: Any) -> Usage | None:
    """A kept usage, or None (none kept, or of the wrong shape)."""
    if not isinstance(kept, Mapping):
        return None
    counts = [kept.get(name) for name in _USAGE_FIELDS]
    whole = [n for n in counts if isinstance(n, int) and not isinstance(n, bool) and n >= 0]
    if len(whole) != len(counts):
        return None
    prompt, completion, total = whole
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def seam(interaction: Mapping[str, Any]) -> str | None:
    """The seam call's key a stored interaction keeps (``matching.seam_key``), or None
    (the application's own request, a cassette recorded before keys were kept, or a value
    that is no key: such an interaction is replayed by its HTTP match only)."""
    value = interaction.get(matching.SEAM_FIELD)
    return value if isinstance(value, str) and value else None


def recognised(interaction: Mapping[str, Any]) -> _wire.Recognised | None:
    """The model reply a stored interaction holds (``_wire.recognise``), read from the
    bodies as stored: a JSON value or an event list is read as it is, not written out as
    text to be parsed again. None when it holds none."""
    request, response = interaction["request"], interaction["response"]
    uri = str(request.get("uri", ""))
    status: Any = (response.get("status") or {}).get("code")  # recognise takes an int only
    headers = response.get("headers") or {}
    sent = request.get("body")
    asked = sent["json"] if isinstance(sent, Mapping) and "json" in sent else body_bytes(sent)
    body = response.get("body")
    if isinstance(body, Mapping) and "json" in body:
        return _wire.recognise_parsed(uri, asked, status, headers, value=body["json"])
    if isinstance(body, Mapping) and "events" in body:
        return _wire.recognise_parsed(
            uri, asked, status, headers, events=bodies.stream_events(body)
        )
    return _wire.recognise(uri, asked, status, headers, body_bytes(body))


def latency(interaction: Mapping[str, Any]) -> float | None:
    """The recorded latency of a stored interaction, or None (none kept, or not a number)."""
    value = interaction.get(LATENCY)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < float("inf") else None


def _stored(data: bytes | str | None) -> str | dict[str, Any] | None:
    if data is None:
        return None
    if isinstance(data, bytes):
        try:
            return bodies.stored(data.decode("utf-8"))
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(data).decode("ascii")}
    return bodies.stored(data)


def body_bytes(body: str | Mapping[str, Any] | None) -> bytes | None:
    """The bytes of a stored body (text, base64, JSON value or events); None for none.

    ``read`` checked its shape: a stored form here writes its text back.
    """
    if body is None:
        return None
    if isinstance(body, str):
        return body.encode("utf-8")
    if bodies.is_stored_form(body):
        return bodies.text(body).encode("utf-8")
    if body.get("base64") is not None:
        return base64.b64decode(body["base64"])
    return str(body.get("string") or "").encode("utf-8")


# Stored match keys. Loading a cassette indexes every interaction by its match key
# (``matching.request_key``: the canonical body, written out with its keys sorted), which
# costs more than parsing the file. So ``merge_and_write`` writes each interaction with the
# digest of its key (``match_key``), the settings the keys were computed with
# (``match_keys``: the body fields and the query values they leave out) and, as the file's
# last field, the checksum of every byte before it. A stored key is used only while the
# checksum holds (the file is byte for byte what ``merge_and_write`` wrote, with keys it
# computed from these very requests) and the settings are the cassette's: a request edited
# by hand breaks the checksum, and the file's keys are computed again, once, as for a file
# written before keys were stored. No edited request can be found by a stale key. (Nor is
# the shape of a file whose checksum holds checked again: ``read``.)
MATCH_KEY = "match_key"
MATCH_KEYS = "match_keys"
CHECKSUM = "checksum"


def stored_keys(
    data: Mapping[str, Any], ignore: Sequence[str], blank: Collection[str]
) -> list[str] | None:
    """The stored match keys of the interactions of ``data`` (as ``read`` returns it), one
    per interaction; None when they must be computed (a file written before keys were
    stored, edited since it was written, or keyed with other settings)."""
    if data.get(MATCH_KEYS) != _settings(ignore, blank):
        return None  # read() keeps the settings only while the checksum holds
    keys = [interaction.get(MATCH_KEY) for interaction in data.get("interactions") or ()]
    return keys if all(isinstance(key, str) for key in keys) else None


def _keyed(
    interaction: Mapping[str, Any], key: Callable[[Mapping[str, Any]], matching.RequestKey]
) -> dict[str, Any]:
    """``interaction`` with the digest of its match key, always its last field (replaced,
    when it had one: a file re-recorded writes the same bytes whatever order it was in)."""
    fields = {name: value for name, value in interaction.items() if name != MATCH_KEY}
    return {**fields, MATCH_KEY: matching.digest(key(interaction["request"]))}


def _settings(ignore: Sequence[str], blank: Collection[str]) -> dict[str, list[str]]:
    """The ``match_keys`` field: what the stored match keys leave out."""
    return {"ignore": list(ignore), "blank": sorted(blank)}


def _seal(checksum: str) -> str:
    """How a file ``merge_and_write`` wrote ends: its checksum is the last field."""
    return f'  "{CHECKSUM}": "{checksum}"\n}}\n'


def _sealed(text: str) -> str:
    """``text``, a cassette whose last field is an empty checksum, with its checksum: the
    SHA-256 of its bytes before the checksum's line."""
    head = text.removesuffix(_seal(""))
    return head + _seal(hashlib.sha256(head.encode("utf-8")).hexdigest())


def _seal_holds(raw: bytes, data: Any) -> bool:
    """Whether the file's bytes ``raw`` (parsed: ``data``) end with the checksum of the bytes
    before it: the file is as ``merge_and_write`` wrote it."""
    checksum = data.get(CHECKSUM) if isinstance(data, dict) else None
    if not (isinstance(checksum, str) and checksum.isascii() and len(checksum) == 64):
        return False
    tail = _seal(checksum).encode("ascii")
    head = memoryview(raw)[: len(raw) - len(tail)]  # no copy of a file of megabytes
    return raw.endswith(tail) and hashlib.sha256(head).hexdigest() == checksum


def read(path: Path) -> dict[str, Any]:
    """Parse a cassette file (JSON first, fast; YAML for hand-edited files) and check its shape.

    A file whose checksum holds is as ``merge_and_write`` wrote it, from data this function
    or ``interaction`` made: its shape is not checked again (the checksum tells an edited or
    damaged file, not a forged one). Any other file is checked, and its stored match keys
    are not offered (``stored_keys``).

    Returns:
        The file's data, its shape checked; an empty dict when the file is blank.

    Raises:
        CassetteError: the file is not UTF-8, does not parse, or is not shaped like a
            cassette; the message names the part that is wrong. The file is left as it is.
    """
    raw = path.read_bytes()
    if b"\r" in raw:  # written on Windows, or checked out so by git (a one-byte search: fast)
        raw = raw.replace(b"\r\n", b"\n")  # JSON and YAML read either; the checksum is of \n
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _damaged(path, f"it is not UTF-8 text ({error})") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        data = _yaml_or_fail(path, text, error)
    except RecursionError:  # the parser's stack ran out: nested far deeper than MAX_DEPTH
        raise _damaged(path, f"its values nest deeper than {MAX_DEPTH} levels") from None
    if _seal_holds(raw, data):
        return dict(data)
    problem = _shape_problem(data)
    if problem is not None:
        raise _damaged(path, problem)
    unsealed = dict(data)  # a mapping: _shape_problem checked it
    unsealed.pop(MATCH_KEYS, None)  # edited, or older: its stored keys are not to be trusted
    return unsealed


def read_recordings(path: Path) -> dict[str, Any]:
    """``read`` a file that must hold recordings (a test's cassette, found on disk).

    Raises:
        CassetteError: as ``read``; also for a blank file, or one without interactions (a
            file of another tool, or one cut short), which would otherwise replay as if
            nothing had been recorded.
    """
    data = read(path)
    if not data:
        raise _damaged(path, "it is empty")
    if not data.get("interactions"):
        raise _damaged(
            path,
            "it holds no recorded interactions (a pytest-harness cassette has a non-empty "
            "'interactions' list; this one is another tool's file, or was cut short)",
        )
    return data


def _damaged(path: Path, problem: str) -> CassetteError:
    """The error for a cassette file that cannot be read: the file, the problem, the fix."""
    return CassetteError(
        f"cassette {path} cannot be read: {problem}. The file was left as it is: fix it, or "
        "delete it and re-record the test with pytest --harness-live."
    )


def _yaml_or_fail(path: Path, text: str, json_error: ValueError) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except RecursionError:
        raise _damaged(path, f"its values nest deeper than {MAX_DEPTH} levels") from None
    # PyYAML's constructors raise ValueError for a value they cannot convert (a 31st of
    # February, ``!!float abc``, an integer of more than 4,300 digits).
    except (yaml.YAMLError, ValueError) as error:
        line: object
        problem: object
        if text.lstrip().startswith("{") and isinstance(json_error, json.JSONDecodeError):
            line, problem = json_error.lineno, json_error.msg  # JSON-style file: JSON's account
        else:
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark else None
            problem = getattr(error, "problem", None) or error
        where = "" if line is None else f", line {line}"
        raise CassetteError(
            f"cassette {path} does not parse{where}: {problem}. "
            "Fix the file, or delete it and re-record the test with --harness-live."
        ) from None


# The shape of a cassette, checked once as a file is read, so that no later reader (vcrpy,
# matching, redaction, the secret scan, a merge) meets a value of a type it does not expect.

# Free-form values (metadata, fields the harness does not read) nest at most this deep. The
# harness writes a handful of levels; the limit keeps every later walk of the data (the
# secret scan, json.dumps, vcrpy's deepcopy) far from Python's recursion limit.
MAX_DEPTH = 100

_KINDS = {
    dict: "a mapping",
    list: "a list",
    str: "text",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
}
# Python writes integers of up to 4,300 digits (about 14,284 bits); YAML can hold longer ones.
_INT_BITS = 14_000
# The fields the harness reads, by where they sit; any other field is free-form.
_READ = {
    "": frozenset({"version", "metadata", "interactions"}),
    "interaction": frozenset({"request", "response", FAILURE}),
    "request.": frozenset({"method", "uri", "body", "headers"}),
    "request.body.": frozenset({"base64", "json", "form"}),
    "response.": frozenset({"status", "headers", "body"}),
    "response.status.": frozenset({"code", "message"}),
    "response.body.": frozenset({"string", "base64", "json", "events", "form"}),
}


def _shape_problem(data: Any) -> str | None:
    """What makes parsed cassette ``data`` unreadable (the part, what is wrong), or None."""
    if not isinstance(data, dict):
        return f"expected a mapping with 'interactions', got {_kind(data)}"
    problem = (
        _free(data, "")
        or _typed(data, "version", int)
        or _plain(data.get("metadata"), "metadata")
        or _typed(data, "metadata", dict)
        or _typed(data, "interactions", list)
        or _typed(data, CHECKSUM, str)
        or _settings_problem(data.get(MATCH_KEYS))
    )
    if problem is not None:
        return problem
    interactions = data.get("interactions") or []
    for number, item in enumerate(interactions, 1):
        problem = _interaction(item)
        if problem is not None:
            return f"interaction {number} of {len(interactions)}: {problem}"
    return None


def _settings_problem(settings: Any) -> str | None:
    """The problem with the file's ``match_keys`` (``ignore`` and ``blank``: lists of text;
    it is plain JSON: ``_free`` checked it)."""
    if settings is None:
        return None
    expected = f"{MATCH_KEYS} must be a mapping with 'ignore' and 'blank', lists of text"
    if not isinstance(settings, dict):
        return f"{expected}, got {_kind(settings)}"
    for name in ("ignore", "blank"):
        values = settings.get(name)
        if not (isinstance(values, list) and all(isinstance(value, str) for value in values)):
            return f"{expected}; {MATCH_KEYS}.{name} is {_kind(values)}"
    return None


def _kind(value: Any) -> str:
    """What a value is, for messages: its type and a short excerpt (never all of a big one)."""
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        count = len(value)
        name = "a mapping" if isinstance(value, dict) else "a list"
        return f"{name} of {count} item{'' if count == 1 else 's'}"
    if isinstance(value, int) and value.bit_length() > _INT_BITS:
        return f"an integer of {value.bit_length()} bits"
    shown = repr(value[:60] if isinstance(value, (str, bytes)) else value)
    name = _KINDS.get(type(value)) or f"a {type(value).__name__} value"
    return f"{name} ({shown[:80]})"


def _free(node: dict[Any, Any], part: str) -> str | None:
    """The first problem (``_plain``) in the fields of ``node`` the harness does not read.

    ``part`` names where ``node`` sits (a key of ``_READ``).
    """
    read, where = _READ[part], part if part.endswith(".") else ""
    for key, value in node.items():
        if not isinstance(key, str):
            named = where.rstrip(".") or ("it" if part else "the file")
            return f"{named} has a key that is not text: {_kind(key)}"
        if key not in read:
            problem = _plain(value, f"{where}{key}")
            if problem is not None:
                return problem
    return None


def _plain(value: Any, where: str) -> str | None:
    """Where ``value`` holds what JSON cannot (a YAML date, bytes, a non-text key), nests
    deeper than ``MAX_DEPTH``, or repeats a mapping or list (a YAML alias); else None."""
    seen: set[int] = set()
    todo: list[tuple[Any, str, int]] = [(value, where, 0)]
    while todo:
        node, at, depth = todo.pop()
        if isinstance(node, (dict, list)):
            if depth >= MAX_DEPTH:
                return f"{where} nests deeper than {MAX_DEPTH} levels"
            if id(node) in seen:  # json.dumps would write it out again (forever, if a cycle)
                return f"{at} repeats a value (a YAML alias): write it out in full"
            seen.add(id(node))
            if isinstance(node, list):
                todo += [(child, f"{at}[{i}]", depth + 1) for i, child in enumerate(node)]
                continue
            for key, child in node.items():
                if not isinstance(key, str):
                    return f"{at} has a key that is not text: {_kind(key)}"
                todo.append((child, f"{at}.{key}", depth + 1))
        elif node is not None and not isinstance(node, (str, int, float)):
            return f"{at} is {_kind(node)}, which a JSON cassette cannot hold"
        elif isinstance(node, int) and node.bit_length() > _INT_BITS:
            return f"{at} is {_kind(node)}, too long to write as JSON"
    return None


def _typed(node: Mapping[str, Any], key: str, expected: type, where: str = "") -> str | None:
    """The problem with ``node[key]``: absent or null is fine, else it must be ``expected``."""
    value = node.get(key)
    if value is None or (isinstance(value, expected) and not isinstance(value, bool)):
        return None
    return f"{where}{key} must be {_KINDS[expected]}, got {_kind(value)}"


def _required(node: Mapping[str, Any], key: str, expected: type, where: str) -> str | None:
    if key not in node:
        return f"{where}{key} is missing"
    if node[key] is None:
        return f"{where}{key} must be {_KINDS[expected]}, got null"
    return _typed(node, key, expected, where)


def _interaction(item: Any) -> str | None:
    if not isinstance(item, dict):
        return f"expected a mapping with 'request' and 'response', got {_kind(item)}"
    if FAILURE in item:  # a call that got no reply: how it failed, in place of one
        return (
            _free(item, "interaction")
            or _required(item, "request", dict, "")
            or _request(item["request"])
            or _failure_problem(item[FAILURE])
            or _typed(item, MATCH_KEY, str)
        )
    return (
        _free(item, "interaction")
        or _required(item, "request", dict, "")
        or _required(item, "response", dict, "")
        or _request(item["request"])
        or _response(item["response"])
        or _typed(item, MATCH_KEY, str)  # free-form otherwise, as latency_s is
    )


def _failure_problem(value: Any) -> str | None:
    if failure({FAILURE: value}) is None:
        return (
            f"{FAILURE} must be a mapping with 'kind' ('abandoned' or 'error'), 'after_s', "
            f"'type' and 'message', got {_kind(value)}"
        )
    return _plain(value, FAILURE)


def _request(request: dict[str, Any]) -> str | None:
    body = request.get("body")
    return (
        _free(request, "request.")
        or _required(request, "method", str, "request.")
        or _required(request, "uri", str, "request.")
        or _url(request["uri"])
        or _headers(request, "request.")
        or (None if body is None or isinstance(body, str) else _request_body(body))
    )


def _request_body(body: Any) -> str | None:
    if not isinstance(body, dict):
        return f"request.body must be text or a mapping with 'base64' or 'json', got {_kind(body)}"
    if "json" in body:
        return _free(body, "request.body.") or _stored_form(body, "request.body")
    return _free(body, "request.body.") or _base64(body, "request.body.", required=True)


def _stored_form(body: dict[str, Any], where: str) -> str | None:
    problem = bodies.problem(body)
    return None if problem is None else f"{where}: {problem}"


def _response(response: dict[str, Any]) -> str | None:
    return (
        _free(response, "response.")
        or _required(response, "status", dict, "response.")
        or _status(response["status"])
        or _headers(response, "response.")
        or _response_body(response.get("body"))
    )


def _status(status: dict[str, Any]) -> str | None:
    where = "response.status."
    problem = (
        _free(status, where)
        or _required(status, "code", int, where)
        or _typed(status, "message", str, where)
    )
    if problem is None and not 100 <= status["code"] <= 599:
        problem = f"{where}code must be an HTTP status (100-599), got {_kind(status['code'])}"
    return problem


def _response_body(body: Any) -> str | None:
    where = "response.body."
    if body is None:
        return None
    if not isinstance(body, dict):
        return (
            "response.body must be a mapping with 'string', 'base64', 'json' or 'events', "
            f"got {_kind(body)}"
        )
    if bodies.is_stored_form(body):
        return _free(body, where) or _stored_form(body, "response.body")
    return _free(body, where) or _typed(body, "string", str, where) or _base64(body, where)


def _url(uri: str) -> str | None:
    try:
        parts = urlsplit(uri)
        _ = parts.port  # raises ValueError for a port that is not a number in 0-65535
    except ValueError as error:
        return f"request.uri is not a URL ({error}): {uri!r:.100}"
    if not parts.scheme or not parts.netloc:
        return f"request.uri must be an absolute URL, got {uri!r:.100}"
    return None


def _headers(message: Mapping[str, Any], where: str) -> str | None:
    headers = message.get("headers")
    if headers is None:
        return None
    if not isinstance(headers, dict):
        return f"{where}headers must be a mapping of names to lists of text, got {_kind(headers)}"
    for name, values in headers.items():
        if not isinstance(name, str):
            return f"{where}headers has a name that is not text: {_kind(name)}"
        # A list of text; the usual list of one is checked first, fast (1,000s per cassette).
        if isinstance(values, list) and len(values) == 1 and isinstance(values[0], str):
            continue
        listed = values if isinstance(values, list) else [values]
        if not listed or [value for value in listed if not isinstance(value, str)]:
            return f"{where}headers.{name} must be text or a list of text, got {_kind(values)}"
    return None


def _base64(body: dict[str, Any], where: str, *, required: bool = False) -> str | None:
    problem = (_required if required else _typed)(body, "base64", str, where)
    if problem is not None or body.get("base64") is None:
        return problem
    try:
        base64.b64decode(body["base64"])
    except binascii.Error as error:
        return f"{where}base64 is not base64 ({error})"
    return None
