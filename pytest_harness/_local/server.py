"""The llama.cpp server of the embedded model, as a subprocess on 127.0.0.1."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from types import TracebackType

from pytest_harness._local.install import (
    BUILD_TIME,
    MODEL_NAME,
    ensure_installed,
    model_file,
    rebuild_command,
)
from pytest_harness.errors import LocalModelError

_HOST = "127.0.0.1"
SAMPLE_PATH = "/harness/sample"  # where the test process tells its endpoint the running sample
_LOG_TAIL = 30
_ENDPOINT = (sys.executable, "-m", "pytest_harness._local.endpoint")
# Signals of a build whose instructions this CPU does not run (or runs wrongly).
_BAD_BUILD = frozenset({signal.SIGSEGV, signal.SIGILL, signal.SIGBUS})


class LocalServer:
    """The llama.cpp server of the embedded model, as a subprocess on 127.0.0.1.

    Example::

        with LocalServer() as server:
            route = make_route(server.base_url)
            litellm.completion(**route({"model": "local", "messages": messages}))

    Args:
        model: the GGUF file to serve; default ``model_file()``.
        threads: CPU threads for llama.cpp; default: the cores this process may use, shared
            between pytest-xdist workers, less one, at most 4.
    """

    def __init__(self, model: Path | None = None, *, threads: int | None = None) -> None:
        self._model = model
        self._threads = threads or _threads()
        self._process: subprocess.Popen[bytes] | None = None
        self._endpoint: subprocess.Popen[bytes] | None = None
        self._port = self._app_port = 0
        self._log_dir: Path | None = None
        self._death: str | None = None  # how it died, kept once read (its log goes at stop)

    @property
    def pid(self) -> int | None:
        """The server process's id, or None when not started."""
        return None if self._process is None else self._process.pid

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root, ``http://127.0.0.1:<port>/v1``."""
        if self._process is None:
            raise LocalModelError("the local model server is not running: call start() first")
        return f"http://{_HOST}:{self._port}/v1"

    @property
    def app_url(self) -> str:
        """The faithful OpenAI-compatible API root for application code (``endpoint``)."""
        if self._endpoint is None:
            raise LocalModelError("the local model server is not running: call start() first")
        return f"http://{_HOST}:{self._app_port}/v1"

    def start(self, timeout: float = 180.0) -> LocalServer:
        """Start the server and wait until it answers ``GET /v1/models``.

        Raises:
            LocalModelError: not installed, or the server exited or stayed silent for
                ``timeout`` seconds (the message ends with the last lines of its log).
        """
        if self._process is not None:
            return self
        self._death = None
        ensure_installed()
        model = self._model or model_file()
        self._port = _free_port()
        self._log_dir = Path(tempfile.mkdtemp(prefix="pytest-harness-local-"))
        with (self._log_dir / "server.log").open("wb") as log:
            self._process = subprocess.Popen(
                self._command(model), stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        atexit.register(self.stop)  # a crashed or interrupted session leaves no server behind
        try:
            self._wait_ready(self._process, timeout)
            self._start_endpoint(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def tell_sample(self, sample: int | None) -> None:
        """Tell the endpoint which sample of a sampled test runs (None: none): it gives the
        application's calls that sample's temperature and seed (``route.defaults``).

        Raises:
            LocalModelError: the endpoint did not take it.
        """
        if self._endpoint is None:
            return
        url = f"http://{_HOST}:{self._app_port}{SAMPLE_PATH}"
        if not _posted(url, json.dumps({"sample": sample}).encode()):
            raise LocalModelError(
                f"the embedded model's endpoint did not take the sample number (POST {url}): "
                "it may have died; the test's report says how"
            )

    def failure(self, wait: float = 0.0) -> LocalModelError | None:
        """The error saying how the server died, or None while it runs (or was never started).

        Args:
            wait: seconds to wait for the process to end (a call that just lost its
                connection may see it before the process is gone).
        """
        if self._death is None and self._process is not None:
            try:
                code = self._process.wait(timeout=wait) if wait else self._process.poll()
            except subprocess.TimeoutExpired:
                code = None
            if code is not None:
                self._death = _death(self._process.pid, code, self._log_tail())
        return None if self._death is None else LocalModelError(self._death)

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s); a no-op when not running."""
        self.failure()  # a death is described from its log before the log is removed
        process, self._process = self._process, None
        endpoint, self._endpoint = self._endpoint, None
        atexit.unregister(self.stop)
        for each in (endpoint, process):
            if each is not None and each.poll() is None:
                _end(each)
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _command(self, model: Path) -> list[str]:
        threads = str(self._threads)
        return [
            *(sys.executable, "-m", "llama_cpp.server", "--model", str(model)),
            *("--model_alias", MODEL_NAME, "--chat_format", "gemma"),
            *("--host", _HOST, "--port", str(self._port)),
            *("--n_ctx", "4096", "--n_threads", threads, "--n_threads_batch", threads),
            # No mlock: pinning 253 MB per server buys a test suite nothing.
            *("--seed", "42", "--use_mlock", "False", "--verbose", "False"),
        ]

    def _start_endpoint(self, timeout: float) -> None:
        self._app_port = _free_port()
        with (self._log_dir or Path()).joinpath("endpoint.log").open("wb") as log:
            self._endpoint = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pytest_harness._local.endpoint",
                    self.base_url.removesuffix("/v1"),
                    str(self._app_port),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + timeout
        url = f"{self.app_url}/models"
        while not _answers(url):
            if self._endpoint.poll() is not None or time.monotonic() > deadline:
                log_text = self._log_dir.joinpath("endpoint.log") if self._log_dir else None
                tail = log_text.read_text(errors="replace")[-2000:] if log_text else ""
                raise LocalModelError(
                    f"the embedded model's endpoint (python -m pytest_harness._local.endpoint) "
                    f"did not answer GET {url}: {tail or 'no log'}"
                )
            time.sleep(0.05)

    def _wait_ready(self, process: subprocess.Popen[bytes], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        url = f"{self.base_url}/models"
        while not _answers(url):
            failure = self.failure()
            if failure is not None:  # at start: a broken model file, a port, a bad build
                raise failure
            if time.monotonic() > deadline:
                raise LocalModelError(
                    f"the local model server did not answer GET {url} within {timeout:g} s; "
                    f"pass a longer timeout to start() on a slow machine. {self._log_tail()}"
                )
            time.sleep(0.1)

    def _log_tail(self) -> str:
        try:
            lines = (self._log_dir or Path()).joinpath("server.log").read_text(errors="replace")
        except OSError as error:
            return f"(its log could not be read: {error})"
        return "Last lines of its log:\n" + "\n".join(lines.splitlines()[-_LOG_TAIL:])


def _end(process: subprocess.Popen[bytes]) -> None:
    """Terminate ``process``; kill it after 10 s."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _death(pid: int, code: int, log_tail: str) -> str:
    """How the server process ended, what that usually means, what to do, and its log."""
    if code >= 0:
        how, advice = f"exited with code {code}", "Its log says why."
    else:
        how, advice = f"was killed by signal {_signal_name(-code)}", _advice(-code)
    return f"the embedded model's server (llama.cpp, pid {pid}) {how}. {advice} {log_tail}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _advice(number: int) -> str:
    if number in _BAD_BUILD:
        return (
            "llama-cpp-python is built from source for the CPU it was built on, and dies so "
            "where this CPU refuses an instruction it uses (Intel AMX on some virtual "
            f"machines). Rebuild it portable ({BUILD_TIME}): {rebuild_command()}"
        )
    if number == signal.SIGKILL:
        return "Something outside killed it: the kernel's out-of-memory killer, or a user."
    return "It did not stop on its own: something sent it that signal."


def _threads() -> int:
    """The default thread count: one core left to pytest and the rest of the machine.

    llama.cpp's threads wait for each other after every operation: when one loses its core
    to another process, a call takes 30-76 s instead of 1-2 s (measured: 2 threads on 2 busy
    cores; 1 thread stayed at 2.0-2.4 s). Each pytest-xdist worker starts its own server.
    The count does not change the tokens (checked, sampled answers included).
    """
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity else os.cpu_count() or 1
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")
    share = cores // int(workers) if workers.isdigit() and int(workers) > 0 else cores
    return max(1, min(4, share - 1))  # the cap is a judgement, unmeasured: a 270M model


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((_HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _posted(url: str, body: bytes) -> bool:
    """Whether ``POST url`` with the JSON ``body`` answers 200, over a bare socket (as
    ``_answers``: the test's cassette must not see it)."""
    parts = urllib.parse.urlsplit(url)
    head = (
        f"POST {parts.path} HTTP/1.0\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    try:
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=5) as connection:
            connection.sendall(head.encode() + body)
            answer = connection.recv(64)
    except OSError:
        return False
    return answer.split(b" ", 2)[1:2] == [b"200"]


def _answers(url: str) -> bool:
    """Whether ``GET url`` answers 200, asked over a bare socket.

    Not through urllib or http.client: while a test's cassette is open those are patched,
    and the server's readiness probe must neither be recorded nor refused.
    """
    parts = urllib.parse.urlsplit(url)
    request = f"GET {parts.path} HTTP/1.0\r\nHost: {parts.netloc}\r\n\r\n".encode()
    try:
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=2) as connection:
            connection.sendall(request)
            head = connection.recv(64)
    except OSError:  # refused while starting, reset, timed out
        return False
    return head.split(b" ", 2)[1:2] == [b"200"]
