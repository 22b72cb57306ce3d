"""A dead embedded-model server is never handed to the next test (offline).

The embedded model's server (llama.cpp) can die mid-session: a build that uses an
instruction the CPU refuses dies by SIGSEGV or SIGILL. The next test that asks for the
server (``_local/route.py``'s ``_local_server``) must get the ``LocalModelError`` that names
the signal, the server's log and the fix, not the dead server's address, where its
application would meet a bare connection error. The live tests kill a real llama.cpp; here
a real process stands in for it (a loopback server answering ``GET /v1/models`` as llama.cpp
does, started by ``LocalServer`` as llama.cpp is, then killed by the signal), so the suite
without the ``local`` extra catches it too.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_harness._local import route, server
from pytest_harness._local.install import BUILD_TIME
from pytest_harness.errors import LocalModelError


class StandIn(server.LocalServer):
    """``LocalServer`` with a loopback server in llama.cpp's place (same start, same
    readiness probe, same endpoint process in front of it, same death reading)."""

    def _command(self, model: Path) -> list[str]:
        script = (
            "import sys, http.server, json\n"
            "class H(http.server.BaseHTTPRequestHandler):\n"
            "    def do_GET(self):\n"
            "        body = json.dumps({'object': 'list', 'data': []}).encode()\n"
            "        self.send_response(200); self.send_header('Content-Length', str(len(body)))\n"
            "        self.end_headers(); self.wfile.write(body)\n"
            "    def log_message(self, *args): pass\n"
            "print('llama.cpp stand-in: model loaded', flush=True)\n"
            f"http.server.HTTPServer(('127.0.0.1', {self._port}), H).serve_forever()\n"
        )
        return [sys.executable, "-c", script]


@pytest.fixture
def running(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    monkeypatch.setattr(server, "ensure_installed", lambda: None)  # no llama-cpp-python here
    stand_in = StandIn(Path("no-model.gguf")).start(timeout=60)
    monkeypatch.setattr(route, "_server", stand_in)
    try:
        yield stand_in
    finally:
        stand_in.stop()


def test_a_server_killed_by_a_signal_is_not_handed_to_the_next_test(running: StandIn) -> None:
    assert route.environment(live=True)["OPENAI_BASE_URL"] == running.app_url  # alive: used
    pid = running.pid
    assert pid is not None
    os.kill(pid, signal.SIGSEGV)
    assert running.failure(wait=30) is not None

    with pytest.raises(LocalModelError) as raised:
        route.environment(live=True)  # the next test's set-up asks for the server

    message = str(raised.value)
    assert f"pid {pid}) was killed by signal SIGSEGV" in message
    assert "llama.cpp stand-in: model loaded" in message  # the last lines of its log
    assert f"Rebuild it portable ({BUILD_TIME}): " in message  # and the fix, and how long
    with pytest.raises(LocalModelError):
        route.endpoint(live=True)  # the harness's own calls are refused the same way
