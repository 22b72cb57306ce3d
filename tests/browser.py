"""A real headless Chromium for the tests, driven over the DevTools protocol on a pipe.

Why the protocol and not the command-line shortcuts (``--dump-dom``, ``--screenshot``,
``--enable-logging=stderr``): each shortcut is a launch of its own (about a second each), and
the log flags print console messages without their level (``console.log`` and
``console.error`` are both ``INFO:CONSOLE`` lines). With ``--remote-debugging-pipe`` one launch
gives everything, typed: Chromium reads JSON commands on its fd 3 and writes answers and
events on its fd 4, each message ending in a NUL byte. The page's console messages
(``Runtime.consoleAPICalled``), uncaught exceptions (``Runtime.exceptionThrown``), the
browser's own complaints (``Log.entryAdded``: a blocked or failed load, a refused script)
and every request it makes (``Network.requestWillBeSent``) arrive as events; the DOM after
the scripts ran and a screenshot are a command away; a test can run script in the page.

Offline: pages are ``file://``, no host name resolves (``--host-resolver-rules``) and every
http(s) request goes to a proxy that is not there, so a page that asks for anything records
the request (``Browser.requests``) and fails fast instead of reaching out.

Chromium is Debian's ``chromium`` package (``.ci/install-chromium``, or ``tox -e browser``);
tests that need it are skipped, saying so, where it is missing (``needs_chromium``).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium")
MISSING = "Debian's chromium is not installed: apt-get install chromium (or run tox -e browser)"
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=MISSING)

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

# How long one answer may take before the browser counts as hung (a guard, not a measure).
PATIENCE = 60.0
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--remote-debugging-pipe",
)


class BrowserError(RuntimeError):
    """Chromium stopped answering, exited, or refused a command."""


@dataclass
class Message:
    """A console message or a browser log entry: its level and text, where it came from."""

    level: str
    text: str
    source: str = ""


class Browser:
    """One headless Chromium with a fresh profile under ``folder`` (a test's ``tmp_path``).

    Use as a context manager; ``open`` a page, then read ``dom()``, ``console``, ``errors``,
    ``requests``, take a ``screenshot`` or ``evaluate`` script in the page.
    """

    def __init__(self, folder: Path, *, width: int = 1280, height: int = 900) -> None:
        self.folder = folder
        self.size = f"{width},{height}"
        self.console: list[Message] = []
        self.exceptions: list[str] = []
        self.requests: list[str] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._send = self._receive = -1
        self._buffer = b""
        self._ids = 0
        self._session: str | None = None
        self._events: list[str] = []

    def __enter__(self) -> Browser:
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def errors(self) -> list[str]:
        """Every uncaught exception and every error-level console message or log entry."""
        said = [f"{m.source}: {m.text}" for m in self.console if m.level in ("error", "assert")]
        return self.exceptions + said

    @property
    def external_requests(self) -> list[str]:
        """The requests for anything but the page's own file (and data: URLs)."""
        return [url for url in self.requests if not url.startswith(("file:", "data:", "about:"))]

    def open(self, page: Path) -> None:
        """Load ``page`` (a file) and wait until its load event: its scripts have run."""
        self._events.clear()
        self.call("Page.navigate", {"url": page.resolve().as_uri()})
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """Run ``expression`` in the page; its value (JSON-able), or BrowserError if it threw."""
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression!r} threw: {_exception_text(answer)}")
        return answer["result"].get("value")

    def dom(self) -> str:
        """The document as it is now (after its scripts ran), serialised."""
        return str(self.evaluate("document.documentElement.outerHTML"))

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page (beyond the window's height) at ``path``."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.call(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one command (to the page once it is attached) and wait for its answer."""
        return self._call(method, params, session=self._session)

    def close(self) -> None:
        """Close the browser (politely, then by force) and the pipe."""
        process, self._process = self._process, None
        if process is not None:
            try:
                self._call("Browser.close", None, session=None)
                process.wait(timeout=PATIENCE)
            except (BrowserError, OSError, subprocess.TimeoutExpired):
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for fd in (self._send, self._receive):
            if fd >= 0:
                os.close(fd)
        self._send = self._receive = -1

    def _start(self) -> None:
        if CHROMIUM is None:
            raise BrowserError(MISSING)
        commands, self._send = os.pipe()  # we write commands, Chromium reads them on fd 3
        self._receive, answers = os.pipe()  # Chromium writes on fd 4, we read
        # Above fd 4, so that moving them to 3 and 4 in the child cannot overwrite either
        # (bash, not sh: dash redirects only fds 0 to 9).
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (commands, answers)]
        os.close(commands)
        os.close(answers)
        shell = f'exec "$@" 3<&{high[0]} 4>&{high[1]} {high[0]}<&- {high[1]}>&-'
        arguments = [*FLAGS, f"--user-data-dir={self.folder / 'profile'}"]
        arguments.append(f"--window-size={self.size}")
        with (self.folder / "chromium.log").open("wb") as log:
            self._process = subprocess.Popen(
                ["/bin/bash", "-c", shell, "bash", CHROMIUM, *arguments, "about:blank"],
                pass_fds=high,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # its own process group: close() can end all of it
            )
        for fd in high:
            os.close(fd)
        target = self._call("Target.createTarget", {"url": "about:blank"}, session=None)
        attached = self._call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=None
        )
        self._session = attached["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable")

    def _call(self, method: str, params: dict[str, Any] | None, *, session: str | None) -> Any:
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._send, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._next()
            if answer.get("id") == self._ids:
                if "error" in answer:
                    raise BrowserError(f"{method} refused: {answer['error']}")
                return answer.get("result", {})

    def _wait_for(self, event: str) -> None:
        seen = 0
        while True:
            while seen < len(self._events):
                if self._events[seen] == event:
                    return
                seen += 1
            self._next()

    def _next(self) -> dict[str, Any]:
        """The next message from Chromium; events are recorded on the way."""
        deadline = time.monotonic() + PATIENCE
        # poll, not select: select() refuses a descriptor numbered 1024 or more, which a
        # long test process may well have given the pipe.
        waiting = select.poll()
        waiting.register(self._receive, select.POLLIN)
        while b"\0" not in self._buffer:
            left = max(0.0, deadline - time.monotonic())
            ready = waiting.poll(left * 1000)
            chunk = os.read(self._receive, 1 << 16) if ready else b""
            if not chunk:
                raise BrowserError(f"chromium stopped answering; its log: {self._log_tail()}")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        if "method" in message:
            self._record(message["method"], message.get("params", {}))
            self._events.append(message["method"])
        return message

    def _record(self, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.consoleAPICalled":
            said = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            frames = (params.get("stackTrace") or {}).get("callFrames") or [{}]
            self.console.append(Message(params["type"], said, frames[0].get("url", "")))
        elif method == "Runtime.exceptionThrown":
            self.exceptions.append(_exception_text(params))
        elif method == "Log.entryAdded":
            entry = params["entry"]
            self.console.append(Message(entry["level"], entry["text"], entry.get("url", "")))
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])

    def _log_tail(self) -> str:
        log = self.folder / "chromium.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else "(none)"


def _exception_text(params: dict[str, Any]) -> str:
    details = params.get("exceptionDetails", params)
    thrown = details.get("exception") or {}
    return f"{details.get('text', '')} {thrown.get('description', '')}".strip()


@dataclass
class Node:
    """An element of a parsed page: its tag, attributes, children; ``text`` is all its text."""

    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        """Every element below this one with the tag, class and attributes given
        (``data_test="x"`` is ``data-test="x"``), in document order."""
        wanted = {key.replace("_", "-"): value for key, value in attrs.items()}
        found = []
        for child in self.children:
            if isinstance(child, str):
                continue
            if (
                (tag is None or child.tag == tag)
                and (cls is None or cls in child.classes)
                and all(child.attrs.get(k) == v for k, v in wanted.items())
            ):
                found.append(child)
            found += child.find_all(tag, cls, **attrs)
        return found

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag or '*'}> with class {cls!r} and {attrs} in the page"
        return found[0]


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {key: value or "" for key, value in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    """``page`` (HTML) as a tree of ``Node`` (the standard library's parser, no browser)."""
    builder = _TreeBuilder()
    builder.feed(page)
    builder.close()
    return builder.root
