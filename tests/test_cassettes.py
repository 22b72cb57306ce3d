"""Cassettes end to end: real pytest runs that record from a loopback server and replay.

The runs are in-process, with litellm and vcrpy imported beforehand (pytester forgets the
modules an in-process run imports, and litellm does not survive a second import).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pytest_harness._cassettes.bodies import body_bytes
from pytest_harness.testing import LoopbackServer, Reply

CONFTEST = """
import pytest
from pytest_harness import complete, acomplete

URL = "{url}"

@pytest.fixture
def ask():
    def ask(prompt="hi", **params):
        return complete(prompt, model="openai/loopback", api_base=URL,
                        api_key="loopback-not-a-secret", **params)
    return ask
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, server: LoopbackServer) -> pytest.Pytester:
    """A project whose tests call the loopback server through the seam (and its cassettes)."""
    pytester.makeconftest(CONFTEST.format(url=server.url))
    pytester.makeini("[pytest]\n")
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    if "-n" in args:
        return suite.runpytest_subprocess("-p", "no:cacheprovider", *args)
    return suite.runpytest("-p", "no:cacheprovider", *args)


def cassette(suite: pytest.Pytester, relative: str) -> dict:
    return json.loads((suite.path / "cassettes" / relative).read_text())


def text(body: Any) -> str:
    """A stored body's text, whichever way the file holds it."""
    found = body_bytes(body)
    return "" if found is None else found.decode()


def bodies(data: dict) -> list[str]:
    return [text(i["response"]["body"]) for i in data["interactions"]]


SIMPLE = """
def test_capital(ask):
    assert ask("Capital of France?").text == "Paris"
"""


def test_record_then_replay_offline(suite: pytest.Pytester, server: LoopbackServer) -> None:
    server.queue(Reply(content="Paris"))
    suite.makepyfile(test_geo=SIMPLE)
    run(suite, "--harness-live").assert_outcomes(passed=1)
    assert len(server.requests) == 1

    data = cassette(suite, "test_geo/test_capital.yaml")
    (interaction,) = data["interactions"]
    assert interaction["request"]["body"]["json"]["messages"][0]["content"] == (
        "Capital of France?"
    )
    reply = interaction["response"]["body"]["json"]  # stored as JSON: a diff reads it
    assert reply["choices"][0]["message"]["content"] == "Paris"
    assert interaction["request"]["headers"]["authorization"] == ["REDACTED"]

    run(suite).assert_outcomes(passed=1)
    assert len(server.requests) == 1  # replayed: the server saw nothing new


def test_replay_without_recording_is_a_cassette_miss(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_geo="""
        import pytest
        from pytest_harness import CassetteMiss
        from pytest_harness._pytest_glue import scope
        from pytest_harness._cassettes.slot import CassetteSlot

        def test_capital(ask):
            (slot,) = [h for h in scope.current().call_hooks if isinstance(h, CassetteSlot)]
            with pytest.raises(CassetteMiss):
                ask("Capital of France?")
            with pytest.raises(CassetteMiss) as caught:
                ask("Capital of France?")
            assert len(slot.misses) == 2  # one request per call: no retries hiding the miss
            raise caught.value
        """
    )
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.no_fnmatch_line("*AssertionError*")  # failed by the miss, not the count
    result.stdout.fnmatch_lines(
        [
            "*CassetteMiss: no recording in *cassettes/test_geo/test_capital.yaml matches*",
            "*POST http://loopback/v1/chat/completions",
            "*model: loopback",
            "*user: Capital of France?",
            "*the cassette has no recordings*",
            "*To record it: pytest 'test_geo.py::test_capital' --harness-record=new*",
        ]
    )


# The README's first test: the application's own SDK call, in a harness test.
APP = """
import openai
import pytest

@pytest.mark.harness
def test_answer():
    messages = [{"role": "user", "content": "Where is my order A-1?"}]
    openai.OpenAI().chat.completions.create(model="gpt-4o-mini", messages=messages)
"""


def without_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().endswith("_API_KEY"):
            monkeypatch.delenv(name)


def test_with_no_key_a_miss_says_how_to_record_with_the_embedded_model(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "to record it" commands would end in the SDK's missing credentials."""
    without_keys(monkeypatch)
    suite.makepyfile(test_app=APP)
    result = run(suite)  # replay sets placeholder keys for the SDKs: they are not keys
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*CassetteMiss: no recording in *",
            "*To record it: pytest 'test_app.py::test_answer' --harness-record=new (adds *"
            "from scratch). No API key is set (no *_API_KEY variable in the environment): "
            "record it with the embedded model, which needs none: pytest "
            "'test_app.py::test_answer' --harness-live --harness-model=local (*",
        ]
    )


def test_with_a_key_a_miss_gives_only_the_commands_that_use_it(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_keys(monkeypatch)
    secret = "sk-test-only-0123456789abcdefghij"  # not a real key; never shown
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    suite.makepyfile(test_app=APP)
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*To record it: pytest 'test_app.py::test_answer' *scratch)."])
    result.stdout.no_fnmatch_line("*harness-model=local*")
    assert secret not in result.stdout.str()


def test_miss_shows_a_diff_against_the_closest_recording(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    suite.makepyfile(test_geo=SIMPLE)
    server.queue(Reply(content="Paris"))
    run(suite, "--harness-live").assert_outcomes(passed=1)
    suite.makepyfile(test_geo=SIMPLE.replace("Capital of France?", "Capital of Spain?"))
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*closest recorded request:",
            "*--- recorded request",
            "*+++ this request",
            '*-*"content": "Capital of France?",',
            '*+*"content": "Capital of Spain?",',
            "*--harness-live (re-records the cassette from scratch)*",
        ]
    )


def test_live_replaces_the_cassette_with_what_the_run_did(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = lambda body: Reply(content=body["messages"][-1]["content"].upper())
    suite.makepyfile(test_two="def test_x(ask):\n    ask('one')\n    ask('two')\n")
    run(suite, "--harness-live").assert_outcomes(passed=1)
    assert len(cassette(suite, "test_two/test_x.yaml")["interactions"]) == 2

    suite.makepyfile(test_two="def test_x(ask):\n    ask('two')\n")
    run(suite, "--harness-live").assert_outcomes(passed=1)
    (only,) = cassette(suite, "test_two/test_x.yaml")["interactions"]
    assert "TWO" in text(only["response"]["body"])  # no stale interaction survived


def test_failed_test_keeps_the_old_cassette(suite: pytest.Pytester, server: LoopbackServer) -> None:
    server.handler = lambda body: Reply(content="Paris")
    suite.makepyfile(test_geo=SIMPLE)
    run(suite, "--harness-live").assert_outcomes(passed=1)
    path = suite.path / "cassettes/test_geo/test_capital.yaml"
    before = path.read_bytes()

    server.handler = lambda body: Reply(content="Lyon")
    run(suite, "--harness-live").assert_outcomes(failed=1)
    assert path.read_bytes() == before

    suite.makeini("[pytest]\nharness_record_failed = true\n")
    run(suite, "--harness-live").assert_outcomes(failed=1)
    assert "Lyon" in bodies(cassette(suite, "test_geo/test_capital.yaml"))[0]


def test_record_new_keeps_recordings_and_adds_missing(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = lambda body: Reply(content=body["messages"][-1]["content"] + "!")
    suite.makepyfile(test_n="def test_x(ask):\n    ask('one')\n")
    run(suite, "--harness-live").assert_outcomes(passed=1)
    suite.makepyfile(test_n="def test_x(ask):\n    ask('one')\n    ask('two')\n")
    run(suite, "--harness-record=new").assert_outcomes(passed=1)
    assert len(server.requests) == 2  # 'one' replayed, 'two' recorded
    assert [
        json.loads(b)["choices"][0]["message"]["content"]
        for b in bodies(cassette(suite, "test_n/test_x.yaml"))
    ] == ["one!", "two!"]
    run(suite).assert_outcomes(passed=1)


OVERRIDDEN = """
import pytest

def test_lazy(ask):  # its cassette opens at its first model call
    assert ask("Capital of France?").text == "Paris"

@pytest.mark.harness  # its cassette opens at set-up
def test_whole(ask):
    assert ask("Capital of Spain?").text == "Paris"
"""


def test_replay_follows_the_model_override_the_cassette_was_recorded_with(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = lambda body: Reply(content="Paris")
    suite.makepyfile(test_geo=OVERRIDDEN)
    run(suite, "--harness-live", "--harness-model=openai/recorded").assert_outcomes(passed=2)
    assert {body["model"] for body in server.requests} == {"recorded"}
    assert cassette(suite, "test_geo/test_lazy.yaml")["metadata"]["model"] == "openai/recorded"
    suite.makepyfile(test_geo=OVERRIDDEN.replace("France", "Italy"))
    run(suite, "--harness-record=new").assert_outcomes(passed=2)  # adds as it was recorded
    assert [body["model"] for body in server.requests] == ["recorded"] * 3
    server.stop()

    run(suite).assert_outcomes(passed=2)  # no flag: the cassettes say how they were made

    result = run(suite, "--harness-model=openai/other")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*This cassette was recorded with --harness-model=openai/recorded and this run asks "
            "for model 'openai/other', so the requests differ. To replay it as recorded, run "
            "without that override; to record it with 'openai/other': pytest "
            "'test_geo.py::test_lazy' --harness-live --harness-model=openai/other",
        ]
    )

    suite.makepyfile(test_geo=OVERRIDDEN.replace("France", "Germany"))
    result = run(suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*To record it: pytest 'test_geo.py::test_lazy' --harness-record=new "
            "--harness-model=openai/recorded (adds what is missing), or pytest "
            "'test_geo.py::test_lazy' --harness-live --harness-model=openai/recorded*",
        ]
    )


def test_command_line_wins_over_marker_and_ini(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    suite.makeini("[pytest]\nharness_record = all\n")
    suite.makepyfile(
        test_m="""
        import pytest

        def test_ini(ask):
            ask("a")

        @pytest.mark.harness(record="none")
        def test_marker(ask):
            ask("b")
        """
    )
    result = run(suite)
    result.assert_outcomes(passed=1, failed=1)  # ini records test_ini; the marker replays
    result.stdout.fnmatch_lines(["FAILED test_m.py::test_marker - CassetteMiss: no recording in *"])
    assert len(server.requests) == 1

    run(suite, "--harness-record=none").assert_outcomes(passed=1, failed=1)
    assert len(server.requests) == 1  # the command line replayed both
    run(suite, "--harness-live").assert_outcomes(passed=2)
    assert len(server.requests) == 3  # and here recorded both, the marker notwithstanding


def test_naming_params_classes_and_shared_cassettes(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    suite.makepyfile(
        **{
            "sub/test_names": """
            import pytest

            @pytest.mark.parametrize("city", ["Paris", "New York/NY"])
            def test_param(ask, city):
                ask(city)

            class TestGroup:
                def test_method(self, ask):
                    ask("method")

            @pytest.mark.harness(cassette="shared/geo")
            def test_first(ask):
                ask("first")

            @pytest.mark.harness(cassette="shared/geo")
            def test_second(ask):
                ask("second")
            """
        }
    )
    run(suite, "--harness-live").assert_outcomes(passed=5)
    root = suite.path / "cassettes"
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*.yaml"))
    assert names == [
        "shared/geo.yaml",
        "sub/test_names/TestGroup.test_method.yaml",
        "sub/test_names/test_param_New_York_NY.yaml",
        "sub/test_names/test_param_Paris.yaml",
    ]
    shared = [
        json.loads(text(i["request"]["body"]))["messages"][0]["content"]
        for i in cassette(suite, "shared/geo.yaml")["interactions"]
    ]
    assert sorted(shared) == ["first", "second"]  # in the order the tests ran
    run(suite).assert_outcomes(passed=5)


def test_identical_requests_replay_in_recorded_order(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    server.queue(Reply(content="first"), Reply(content="second"))
    suite.makepyfile(
        test_o="""
        def test_order(ask):
            assert [ask("same").text, ask("same").text] == ["first", "second"]
        """
    )
    run(suite, "--harness-live").assert_outcomes(passed=1)
    run(suite).assert_outcomes(passed=1)
    assert len(server.requests) == 2


def test_streaming_replays_the_same_text(suite: pytest.Pytester, server: LoopbackServer) -> None:
    server.queue(Reply(content="streamed words arrive here"))
    suite.makepyfile(
        test_s="""
        import json, pathlib

        def test_stream(ask):
            tokens = []
            response = ask("go", stream=True, on_token=tokens.append)
            assert response.text and "".join(tokens) == response.content
            out = pathlib.Path("seen.json")
            seen = json.loads(out.read_text()) if out.exists() else []
            out.write_text(json.dumps(seen + [response.content]))
        """
    )
    run(suite, "--harness-live").assert_outcomes(passed=1)
    run(suite).assert_outcomes(passed=1)
    seen = json.loads((suite.path / "seen.json").read_text())
    assert seen == ["streamed words arrive here"] * 2


VOLATILE = """
import os

def test_v(ask):
    run = os.environ["RUN"]
    volatile = {"user": run, "metadata": {"trace": run, "keep": 1}}
    assert ask("x", extra_body=volatile).text == "ok"
"""


def test_volatile_body_fields_are_ignored_when_listed(
    suite: pytest.Pytester, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.handler = lambda body: Reply(content="ok")
    suite.makeini("[pytest]\nharness_match_ignore =\n    user\n    metadata.trace\n")
    suite.makepyfile(test_v=VOLATILE)
    monkeypatch.setenv("RUN", "first")
    run(suite, "--harness-live").assert_outcomes(passed=1)
    (sent,) = server.requests  # the volatile fields really are in the recorded body
    assert (sent["user"], sent["metadata"]) == ("first", {"trace": "first", "keep": 1})

    monkeypatch.setenv("RUN", "second")
    run(suite).assert_outcomes(passed=1)  # matched although user and metadata.trace differ
    assert len(server.requests) == 1

    suite.makeini("[pytest]\nharness_match_ignore =\n    user\n")
    missed = run(suite)  # metadata.trace is compared again: a miss
    missed.assert_outcomes(failed=1)
    missed.stdout.fnmatch_lines(["*CassetteMiss*", '*-*"trace": "first"*', '*+*"trace": "second"*'])


def test_corrupt_cassette_errors_that_test_only(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_c="""
        def test_broken(ask):
            ask()

        def test_fine():
            pass
        """
    )
    broken = suite.path / "cassettes/test_c/test_broken.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"interactions": [\n  {"request": \n  oops\n')
    result = run(suite)
    result.assert_outcomes(passed=1, errors=1)  # at set-up: the file is read before the test
    result.stdout.fnmatch_lines(
        ["*CassetteError: cassette *test_broken.yaml does not parse, line 3*"]
    )
    result.stdout.no_fnmatch_line("*During handling of the above exception*")


def test_secret_in_a_recording_aborts_the_write(
    suite: pytest.Pytester, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "zq7Vb3xK9mP2wL5tR8nY4cH6"
    monkeypatch.setenv("ACME_SERVICE_TOKEN", secret)
    server.queue(Reply(content=f"your token is {secret}"))
    suite.makepyfile(test_geo="def test_leak(ask):\n    ask()\n")
    result = run(suite, "--harness-live")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*CassetteError: refusing to write cassette *test_leak.yaml: *nothing was written.",
            "*- interactions[[]0[]].response.body.json.choices[[]0[]].message.content: "
            "secret value, zq7V*",
        ]
    )
    assert secret not in result.stdout.str()
    assert not (suite.path / "cassettes/test_geo").exists() or not list(
        (suite.path / "cassettes/test_geo").iterdir()
    )


def test_a_crash_between_write_and_replace_keeps_the_old_cassette(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = lambda body: Reply(content="Paris")
    suite.makepyfile(test_geo=SIMPLE)
    run(suite, "--harness-live").assert_outcomes(passed=1)
    path = suite.path / "cassettes/test_geo/test_capital.yaml"
    before = path.read_bytes()

    suite.makeconftest(
        CONFTEST.format(url=server.url)
        + "\nimport os\nos.replace = lambda src, dst: os._exit(3)  # killed mid-write\n"
    )
    # Another answer (the same one would leave the file alone: nothing to write).
    server.handler = lambda body: Reply(content="Paris", headers={"X-Served-By": "b"})
    result = suite.runpytest_subprocess("--harness-live")  # it dies: not in-process
    assert result.ret == 3
    assert path.read_bytes() == before  # the old cassette, whole
    leftovers = [p.name for p in path.parent.iterdir() if p != path]
    assert leftovers
    assert all(name.endswith(".tmp") for name in leftovers)

    suite.makeconftest(CONFTEST.format(url=server.url))
    run(suite).assert_outcomes(passed=1)  # the temporary file is ignored


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077], ids=lambda umask: f"umask {umask:03o}")
def test_a_cassette_gets_the_mode_a_new_file_gets(
    suite: pytest.Pytester, server: LoopbackServer, umask: int
) -> None:
    """0666 less the umask (0644 usually), as a checked-out file has; never mkstemp's 0600."""
    server.handler = lambda body: Reply(content="Paris")
    suite.makepyfile(test_geo=SIMPLE)
    before = os.umask(umask)
    try:
        run(suite, "--harness-live").assert_outcomes(passed=1)
    finally:
        os.umask(before)
    path = suite.path / "cassettes/test_geo/test_capital.yaml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


# A bare socket: no HTTP library the cassette patches, so only the network guard sees it.
NETWORK = """
import socket
import pytest

def fetch():
    with socket.create_connection(("127.0.0.1", {port}), timeout=5) as connection:
        connection.sendall(b"GET /v1/models HTTP/1.0\\r\\n\\r\\n")
        return connection.recv(100)

@pytest.mark.harness
def test_direct_call():
    assert b" 200 " in fetch()

@pytest.mark.harness
def test_swallowed():
    try:
        fetch()
    except Exception:
        pass
"""


def test_network_guard_blocks_replay_mode(suite: pytest.Pytester, server: LoopbackServer) -> None:
    suite.makepyfile(test_net=NETWORK.format(port=server.port))
    result = run(suite)
    result.assert_outcomes(failed=2)
    # Each test's own failure; the tests may run in any order.
    result.stdout.fnmatch_lines(
        ["*NetworkBlocked: pytest-harness blocked a connection to 127.0.0.1:*"]
    )
    result.stdout.fnmatch_lines(["*blocked network connections in replay mode: 127.0.0.1:*"])
    assert server.requests == []

    run(suite, "--harness-live").assert_outcomes(passed=2)  # off while recording
    suite.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    run(suite).assert_outcomes(passed=2)  # loopback by opt-in


def test_network_guard_refuses_any_internet_address(suite: pytest.Pytester) -> None:
    # 192.0.2.1 is reserved for documentation (RFC 5737): nothing answers there, and the
    # guard refuses it before connect() is called, so no packet leaves.
    suite.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    suite.makepyfile(
        test_net="""
        import socket
        import pytest
        from pytest_harness.errors import NetworkBlocked

        @pytest.mark.harness
        def test_documentation_address():
            with pytest.raises(NetworkBlocked, match="192.0.2.1:80"):
                socket.create_connection(("192.0.2.1", 80), timeout=5)
            # Refused before connect(): a non-blocking connect attempted first would report
            # itself in progress (its SYN sent) instead.
            with socket.socket() as sock, pytest.raises(NetworkBlocked) as caught:
                sock.setblocking(False)
                sock.connect(("192.0.2.1", 80))
            assert caught.value.__context__ is None
        """
    )
    result = run(suite)
    result.assert_outcomes(failed=1)  # refused, and the refusal fails the test
    result.stdout.no_fnmatch_line("*AssertionError*")  # and nothing else does
    result.stdout.fnmatch_lines(["*blocked network connections in replay mode: 192.0.2.1:80*"])


def test_redaction_keys_and_cassette_dir_from_the_ini_file(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = lambda body: Reply(content="ok")
    suite.makeini(
        "[pytest]\n"
        "harness_cassette_dir = recorded/llm\n"
        "harness_redact_headers = X-Tenant-Secret\n"
        "harness_redact_query = session\n"
        "harness_redact_body_fields = metadata.account_token\n"
    )
    suite.makepyfile(
        test_r="""
        import urllib.request
        from conftest import URL

        def test_r(ask):
            ask("x", extra_headers={"X-Tenant-Secret": "tenant-7"},
                extra_body={"metadata": {"account_token": "acct-9", "keep": "visible"}})
            # Any HTTP the test makes once its cassette is open is recorded too.
            urllib.request.urlopen(URL + "/models?session=s-42&page=2", timeout=5).read()
        """
    )
    run(suite, "--harness-live").assert_outcomes(passed=1)
    (sent,) = server.requests
    assert sent["metadata"] == {"account_token": "acct-9", "keep": "visible"}
    assert not (suite.path / "cassettes").exists()
    path = suite.path / "recorded/llm/test_r/test_r.yaml"
    chat, models = json.loads(path.read_text())["interactions"]
    assert chat["request"]["headers"]["x-tenant-secret"] == ["REDACTED"]
    body = json.loads(text(chat["request"]["body"]))
    assert body["metadata"] == {"account_token": "REDACTED", "keep": "visible"}
    assert models["request"]["uri"].endswith("/v1/models?session=REDACTED&page=2")
    for secret in ("tenant-7", "acct-9", "s-42"):
        assert secret not in path.read_text()
    run(suite).assert_outcomes(passed=1)  # and it replays from there, redacted
    assert len(server.requests) == 1


TIMEOUT = """
import pytest
from litellm.exceptions import Timeout

def test_ini_timeout(ask):
    with pytest.raises(Timeout):
        ask("slow", max_retries=0)

@pytest.mark.harness(timeout=5)
def test_marker_timeout(ask):
    assert ask("slow", max_retries=0).text == "late"
"""


def test_call_timeout_from_the_ini_file_and_the_marker(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = lambda body: Reply(content="late", delay=1.0)
    suite.makeini("[pytest]\nharness_timeout = 0.3\nharness_allow_hosts = 127.0.0.1\n")
    suite.makepyfile(test_t=TIMEOUT)
    result = run(suite, "--harness-live")
    result.assert_outcomes(passed=2)  # 0.3 s from the ini times out; 5 s from the marker waits
    assert len(server.requests) == 2


def test_xdist_records_a_shared_cassette_from_two_workers(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = lambda body: Reply(content="w", delay=0.2)
    tests = "\n".join(
        f"@pytest.mark.harness(cassette='shared')\ndef test_{i}(ask):\n    ask('{i}')\n"
        for i in range(6)
    )
    suite.makepyfile(test_x="import pytest\n\n" + tests)
    run(suite, "-n", "2", "--harness-live").assert_outcomes(passed=6)
    prompts = sorted(
        json.loads(text(i["request"]["body"]))["messages"][0]["content"]
        for i in cassette(suite, "shared.yaml")["interactions"]
    )
    assert prompts == [str(i) for i in range(6)]
    run(suite, "-n", "2").assert_outcomes(passed=6)
    assert len(server.requests) == 6


def test_cassette_false_skips_recording(suite: pytest.Pytester, server: LoopbackServer) -> None:
    suite.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    suite.makepyfile(
        test_f="""
        import pytest

        @pytest.mark.harness(cassette=False)
        def test_direct(ask):
            assert ask().text == "ok"
        """
    )
    run(suite).assert_outcomes(passed=1)
    assert len(server.requests) == 1
    assert not (suite.path / "cassettes").exists()


def test_yaml_written_by_hand_still_loads(suite: pytest.Pytester, server: LoopbackServer) -> None:
    server.queue(Reply(content="Paris"))
    suite.makepyfile(test_geo=SIMPLE)
    run(suite, "--harness-live").assert_outcomes(passed=1)
    path = suite.path / "cassettes/test_geo/test_capital.yaml"
    import yaml

    path.write_text(yaml.safe_dump(json.loads(path.read_text()), width=10_000))
    assert not path.read_text().lstrip().startswith("{")
    run(suite).assert_outcomes(passed=1)


def test_nothing_recorded_for_tests_without_model_calls(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_p="def test_plain():\n    assert True\n")
    run(suite, "--harness-live").assert_outcomes(passed=1)
    assert not Path(suite.path / "cassettes").exists()
