"""Orchestrator(session=..., store=..., resume=...): a conversation kept and continued."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_harness.errors import UnknownSession
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._sessions import SessionStore
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


def test_a_session_continues_in_a_new_process(server: LoopbackServer, tmp_path: Path) -> None:
    store = tmp_path / "sessions.sqlite3"
    server.queue(
        Reply(content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": "A-1"})]),
        Reply(content="A-1 shipped."),
    )
    first = Orchestrator(
        server.model, [lookup], "Be brief.", params=server.params, session="s1", store=store
    )
    first.run("Where is A-1?")
    # Not pytester: its module snapshot would forget openai if this test imported it first.
    script = tmp_path / "resume.py"
    script.write_text(
        textwrap.dedent(f"""
        from pytest_harness.orchestrator._loop import Orchestrator
        agent = Orchestrator({server.model!r}, [], params={server.params!r},
                             session="s1", store={str(store)!r}, resume=True)
        print(agent.run("When does it arrive?").output)
        """)
    )
    server.queue(Reply(content="Tomorrow."))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "Tomorrow."
    sent = [(m["role"], m.get("content")) for m in server.requests[-1]["messages"]]
    assert sent[0] == ("system", "Be brief.")
    assert ("user", "Where is A-1?") in sent
    assert ("tool", "A-1 shipped") in sent
    assert sent[-1] == ("user", "When does it arrive?")
    with SessionStore(store) as saved:
        assert [m["role"] for m in saved.load("s1")][-2:] == ["user", "assistant"]


def test_resume_insists_on_a_known_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.sqlite3")
    with pytest.raises(UnknownSession, match="nope"):
        Orchestrator("openai/x", [], session="nope", store=store, resume=True)


def test_an_aborted_run_keeps_what_it_did_and_resumes(
    server: LoopbackServer, tmp_path: Path
) -> None:
    store = SessionStore(tmp_path / "s.sqlite3")

    @tool
    def cancel(order: str) -> str:
        """Cancel an order."""
        agent.abort()
        return f"{order} cancelled"

    call = ToolCallSpec(name="cancel", arguments={"order": "A-1"})
    server.queue(Reply(content=None, tool_calls=[call]))
    agent = Orchestrator(server.model, [cancel], params=server.params, session="s", store=store)
    assert agent.run("Cancel A-1").stop_reason == "aborted"
    roles = [m["role"] for m in store.load("s")]
    assert roles == ["user", "assistant", "tool"]  # the tool's result was saved
    server.queue(Reply(content="Done: A-1 is cancelled."))
    again = Orchestrator(server.model, [cancel], params=server.params, session="s", store=store)
    assert again.run("Is it done?").output == "Done: A-1 is cancelled."
    assert [m["role"] for m in server.requests[-1]["messages"]] == [
        "user",
        "assistant",
        "tool",
        "user",
    ]
