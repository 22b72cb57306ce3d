"""Record from the real embedded model, then replay in a fresh process without network.

Runs in ``tox -e live`` (the ``local`` extra installed): plain, streamed and JSON-schema
calls are recorded from the llama.cpp server, then replayed with networking disabled
(``unshare -n`` where it works, else the harness's own network guard), and the replayed
``ModelResponse`` values must equal the recorded ones.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.live

SUITE = """
import dataclasses, json, os, pathlib
from pytest_harness import complete

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "boolean"}},
          "required": ["verdict"]}

def dump(name, response):
    data = dataclasses.asdict(response)
    data.pop("latency_s")
    out = pathlib.Path(os.environ["DUMP"])
    seen = json.loads(out.read_text()) if out.exists() else {}
    seen[name] = data
    out.write_text(json.dumps(seen, indent=1))

def test_plain():
    dump("plain", complete("Name a colour.", model="local", max_tokens=20))

def test_streamed():
    tokens = []
    response = complete("Count to three.", model="local", stream=True,
                        on_token=tokens.append, max_tokens=20)
    assert "".join(tokens) == response.content
    dump("streamed", response)

def test_json_schema():
    response = complete(
        [{"role": "system", "content": "Answer in JSON."},
         {"role": "user", "content": "Is the sky blue?"}],
        model="local", max_tokens=30,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "v", "schema": SCHEMA}},
    )
    assert isinstance(json.loads(response.content)["verdict"], bool)
    dump("json_schema", response)
"""


def offline_command() -> list[str]:
    """``unshare -n`` (no network at all) when this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], check=False).returncode == 0:
        return [unshare, "-n"]
    return []


def test_recorded_responses_replay_identically_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_local=SUITE)
    monkeypatch.setenv("DUMP", str(pytester.path / "recorded.json"))
    recorded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-live")
    recorded.assert_outcomes(passed=3)
    files = sorted(p.name for p in (pytester.path / "cassettes/test_local").iterdir())
    assert files == ["test_json_schema.yaml", "test_plain.yaml", "test_streamed.yaml"]

    monkeypatch.setenv("DUMP", str(pytester.path / "replayed.json"))
    replayed = pytester.run(
        *offline_command(), sys.executable, "-m", "pytest", "-p", "no:cacheprovider"
    )
    assert replayed.ret == 0, replayed.stdout.str()
    replayed.stdout.fnmatch_lines(["*3 passed*"])

    before = json.loads((pytester.path / "recorded.json").read_text())
    after = json.loads((pytester.path / "replayed.json").read_text())
    assert after == before
    assert before["plain"]["content"]
    assert before["streamed"]["content"]
    assert before["streamed"]["finish_reason"] is not None
