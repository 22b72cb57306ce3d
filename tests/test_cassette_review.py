"""Cassettes that review like code: re-recording the same answers changes no byte.

Recording runs against the loopback scripted server (on a new port each time, with new
dates, request ids, completion ids and timestamps), replays offline; ``--harness-prune``
lists and removes the cassettes a full run did not open.
"""

from __future__ import annotations

import difflib
import json
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler as Handler
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_cassettes import CONFTEST

from pytest_harness._cassettes import interactions, steady
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec, completion_body

TWO_CALLS = """
def test_two(ask):
    assert ask("one").text
    assert ask("two").text
"""


def volatile(content: str, delay: float = 0.0) -> Any:
    """A handler answering ``content`` as a provider does: new ids, times and headers each time."""

    def handler(body: dict[str, Any]) -> Reply:
        reply = completion_body(body, Reply(content=content), 1)
        reply.update(id=f"chatcmpl-{uuid.uuid4().hex}", created=int(uuid.uuid4().int % 10**9))
        reply["system_fingerprint"] = f"fp_{uuid.uuid4().hex[:10]}"
        headers = {
            "x-request-id": uuid.uuid4().hex,
            "openai-processing-ms": str(uuid.uuid4().int % 900),
            "x-ratelimit-remaining-requests": str(uuid.uuid4().int % 9000),
            "cf-ray": uuid.uuid4().hex[:16],
            "openai-version": "2020-10-01",  # not volatile: kept
        }
        return Reply(raw=json.dumps(reply), headers=headers, delay=delay)

    return handler


def per_prompt(answers: dict[str, str]) -> Any:
    """``volatile`` answers chosen by the prompt."""
    return lambda body: volatile(answers[body["messages"][-1]["content"]])(body)


@pytest.fixture
def servers() -> Iterator[list[LoopbackServer]]:
    """Two loopback servers: two recording sessions, two ports."""
    with LoopbackServer() as first, LoopbackServer() as second:
        assert first.port != second.port
        yield [first, second]


def record(pytester: pytest.Pytester, server: LoopbackServer, *args: str) -> pytest.RunResult:
    """A recording run of the suite against ``server`` (its port is in the conftest)."""
    pytester.makeconftest(CONFTEST.format(url=server.url))
    return pytester.runpytest("-p", "no:cacheprovider", "--harness-live", *args)


def replay(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def cassette(pytester: pytest.Pytester, relative: str = "test_r/test_two.yaml") -> Path:
    return pytester.path / "cassettes" / relative


def test_recording_the_same_answers_again_changes_no_byte(
    pytester: pytest.Pytester, servers: list[LoopbackServer]
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_r=TWO_CALLS)
    for server in servers:
        server.handler = volatile("Paris")
    record(pytester, servers[0]).assert_outcomes(passed=1)
    path = cassette(pytester)
    first = path.read_bytes()
    record(pytester, servers[1]).assert_outcomes(passed=1)
    assert len(servers[1].requests) == 2  # recorded again, for real
    assert path.read_bytes() == first  # another port, date, ids, request ids: the same file

    data = json.loads(first)
    assert data["metadata"] == {}  # no run id: it changed every file on every recording run
    for interaction in data["interactions"]:
        request, response = interaction["request"], interaction["response"]
        assert request["uri"] == "http://127.0.0.1:0/v1/chat/completions"  # the port pinned
        assert "host" not in request["headers"]
        assert "x-stainless-retry-count" not in request["headers"]
        assert sorted(response["headers"]) == [
            "content-length",
            "content-type",
            "openai-version",
            "server",
        ]
        assert isinstance(interaction["latency_s"], float)
    for server in servers:
        server.stop()
    replay(pytester).assert_outcomes(passed=1)  # the kept interactions replay byte-exact


def test_a_changed_answer_changes_only_its_part(
    pytester: pytest.Pytester, servers: list[LoopbackServer]
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_r=TWO_CALLS)
    servers[0].handler = per_prompt({"one": "Paris", "two": "Rome"})
    record(pytester, servers[0]).assert_outcomes(passed=1)
    path = cassette(pytester)
    before = path.read_text()
    servers[1].handler = per_prompt({"one": "Paris", "two": "Madrid"})
    record(pytester, servers[1]).assert_outcomes(passed=1)
    after = path.read_text()

    old, new = json.loads(before)["interactions"], json.loads(after)["interactions"]
    assert new[0] == old[0]  # the same answer: kept as it was, its latency too
    reply = new[1]["response"]["body"]["json"]
    assert reply["choices"][0]["message"]["content"] == "Madrid"
    changed = [
        line[1:].strip()
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    # The reply's id, time, fingerprint, text, length and latency, and the file's checksum
    # (its last line): nothing else.
    assert len(changed) <= 14, changed
    assert sum(line.startswith('"checksum": ') for line in changed) == 2
    assert any('"Madrid"' in line for line in changed)
    assert not any("127.0.0.1" in line or "date" in line for line in changed)


def test_a_stream_of_the_same_events_changes_no_byte(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_r="def test_two(ask):\n    assert ask('go', stream=True).text == 'a b c'\n"
    )
    server.handler = lambda body: Reply(content="a b c")  # ids chatcmpl-loopback-1, then -2
    record(pytester, server).assert_outcomes(passed=1)
    first = cassette(pytester).read_bytes()
    events = json.loads(first)["interactions"][0]["response"]["body"]["events"]
    assert events[0]["data"]["id"] == "chatcmpl-loopback-1"
    record(pytester, server).assert_outcomes(passed=1)
    assert len(server.requests) == 2
    assert cassette(pytester).read_bytes() == first


SENT_ON = """
import json, urllib.request
from conftest import URL

def post(body):
    request = urllib.request.Request(URL + "/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=5).read())

def test_two(harness):
    first = post({"model": "m", "messages": [{"role": "user", "content": "look it up"}]})
    call = first["choices"][0]["message"]["tool_calls"][0]
    result = {"role": "tool", "tool_call_id": call["id"], "content": "found"}
    assert post({"model": "m", "messages": [first["choices"][0]["message"], result]})
"""


def test_an_id_the_application_sent_on_is_recorded_anew(
    pytester: pytest.Pytester, servers: list[LoopbackServer]
) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(content="done")
        return Reply(content=None, tool_calls=[ToolCallSpec(name="f", id=uuid.uuid4().hex)])

    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_r=SENT_ON)
    for server in servers:
        server.handler = handler
    record(pytester, servers[0]).assert_outcomes(passed=1)
    record(pytester, servers[1]).assert_outcomes(passed=1)
    tool_call = servers[1].requests[1]["messages"][-1]["tool_call_id"]
    assert tool_call in cassette(pytester).read_text()  # the reply that named it was kept
    for server in servers:
        server.stop()
    replay(pytester).assert_outcomes(passed=1)  # the old reply would not match request two


LATENCY = """
from pytest_harness._pytest_glue import scope
from pytest_harness._cassettes.slot import CassetteSlot

def test_two(ask):
    (slot,) = [h for h in scope.current().call_hooks if isinstance(h, CassetteSlot)]
    seen, watch = [], slot.on_response
    slot.on_response = lambda found: seen.append(found) or watch(found)
    assert ask("slow").text == "late"
    (latency,) = [found.latency_s for found in seen]
    print("LATENCY", latency, "REPLAYED", seen[0].replayed)
"""


def test_latency_is_recorded_and_replayed_as_recorded(
    pytester: pytest.Pytester, servers: list[LoopbackServer]
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_r=LATENCY)
    servers[0].handler = lambda body: Reply(content="late", delay=0.3)
    result = record(pytester, servers[0], "-s")
    result.assert_outcomes(passed=1)
    measured = float(result.stdout.str().split("LATENCY ")[1].split()[0])
    assert 0.3 <= measured < 5
    first = cassette(pytester).read_bytes()
    (interaction,) = json.loads(first)["interactions"]
    assert interaction["latency_s"] == round(measured, 3)

    servers[1].handler = lambda body: Reply(content="late", delay=0.05)
    record(pytester, servers[1]).assert_outcomes(passed=1)
    assert cassette(pytester).read_bytes() == first  # only the latency differed: kept
    for server in servers:
        server.stop()
    result = replay(pytester, "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*LATENCY {round(measured, 3)} REPLAYED True*"])


def old_cassette(port: int) -> dict[str, Any]:
    """A cassette as pytest-harness wrote it before: run id, text body, every header."""
    asked = {"messages": [{"role": "user", "content": "one"}], "model": "loopback"}
    body = completion_body(asked, Reply(content="Paris"), 7)
    text = json.dumps({**body, "system_fingerprint": "fp_0123456789"})
    return {
        "version": 1,
        "metadata": {"run": "0123456789abcdef"},
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": f"http://127.0.0.1:{port}/v1/chat/completions",
                    "body": json.dumps(asked, separators=(",", ":")),
                    "headers": {"host": [f"127.0.0.1:{port}"], "x-stainless-retry-count": ["0"]},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {
                        "date": ["Mon, 23 Nov 2026 22:10:52 GMT"],
                        "x-request-id": ["a5053fd577504422a28e278e04617d32"],
                        "content-type": ["application/json"],
                        "content-length": [str(len(text))],
                        "server": [f"{Handler.server_version} {Handler.sys_version}"],
                        "openai-version": ["2020-10-01"],
                    },
                    "body": {"string": text},
                },
            }
        ],
    }


def test_an_old_cassette_replays_and_is_cleaned_once_when_re_recorded(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_r="def test_two(ask):\n    assert ask('one').text == 'Paris'\n")
    path = cassette(pytester)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old_cassette(40707), indent=2))
    pytester.makeconftest(CONFTEST.format(url=server.url))
    replay(pytester).assert_outcomes(passed=1)  # another port: loopback matches any

    server.handler = volatile("Paris")
    record(pytester, server).assert_outcomes(passed=1)
    data = json.loads(path.read_text())
    assert data["metadata"] == {}  # the run id is gone
    (interaction,) = data["interactions"]
    assert interaction["request"]["uri"] == "http://127.0.0.1:0/v1/chat/completions"
    assert "date" not in interaction["response"]["headers"]
    assert "latency_s" not in interaction  # the old interaction, kept: no latency was recorded
    cleaned = path.read_bytes()
    record(pytester, server).assert_outcomes(passed=1)
    assert path.read_bytes() == cleaned


# --harness-prune ---------------------------------------------------------------------------

PRUNED = """
import pytest

def test_kept(ask):
    assert ask("one").text

@pytest.mark.skip(reason="not today")
def test_skipped(ask):
    ask("two")
"""


def stale(pytester: pytest.Pytester, *relative: str) -> list[Path]:
    paths = [cassette(pytester, name) for name in relative]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(old_cassette(1234)))
    return paths


def test_prune_lists_then_removes_the_cassettes_no_test_opened(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_p=PRUNED)
    record(pytester, server).assert_outcomes(passed=1, skipped=1)
    used = cassette(pytester, "test_p/test_kept.yaml")
    gone, skipped, scenarios = stale(
        pytester,
        "test_p/test_removed_long_ago.yaml",
        "test_p/test_skipped.yaml",
        "scenarios/Team-0123abcd.yaml",  # a team recording for an input since changed
    )
    server.stop()

    result = replay(pytester, "--harness-prune")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*pytest-harness cassettes no test used*",
            "2 cassette(s) under cassettes not used by any test:",
            "  cassettes/scenarios/Team-0123abcd.yaml",
            "  cassettes/test_p/test_removed_long_ago.yaml",
            "Delete them with pytest --harness-prune=remove*",
        ]
    )
    assert gone.exists()  # listed only
    assert scenarios.exists()

    result = replay(pytester, "--harness-prune=remove")
    result.stdout.fnmatch_lines(["2 cassette(s) under cassettes removed:"])
    assert not gone.exists()
    assert not scenarios.exists()
    assert not scenarios.parent.exists()  # the folder it left empty
    assert used.exists()  # opened
    assert skipped.exists()  # a skipped test's
    replay(pytester, "--harness-prune").stdout.fnmatch_lines(
        ["every cassette under cassettes was used."]
    )


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("-k", "kept"), "*tests were deselected*"),
        (("test_p.py",), "*the command line named what to run*"),
        (("--collect-only",), "*--collect-only runs no test*"),
    ],
)
def test_a_partial_run_prunes_nothing_and_says_why(
    pytester: pytest.Pytester, server: LoopbackServer, args: tuple[str, ...], why: str
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_p=PRUNED)
    record(pytester, server).assert_outcomes(passed=1, skipped=1)
    (gone,) = stale(pytester, "test_p/test_removed_long_ago.yaml")
    result = replay(pytester, "--harness-prune=remove", *args)
    result.stdout.fnmatch_lines(["*--harness-prune=remove: nothing listed or removed, this " + why])
    assert gone.exists()


def test_a_failing_test_makes_the_run_partial(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_p=PRUNED + "\ndef test_fails():\n    assert False\n")
    (gone,) = stale(pytester, "test_p/test_removed_long_ago.yaml")
    pytester.makeconftest(CONFTEST.format(url=server.url))
    result = replay(pytester, "--harness-prune=remove", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["*nothing listed or removed*tests failed*"])
    assert gone.exists()


def test_prune_gathers_what_every_xdist_worker_opened(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    pytester.makeini("[pytest]\n")
    tests = "".join(f"def test_{i}(ask):\n    assert ask('{i}').text\n\n" for i in range(6))
    pytester.makepyfile(test_x=tests)
    pytester.makeconftest(CONFTEST.format(url=server.url))
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-live").assert_outcomes(
        passed=6
    )
    stale(pytester, "test_x/test_6.yaml")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--harness-prune")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        ["1 cassette(s) under cassettes not used by any test:", "  cassettes/test_x/test_6.yaml"]
    )


def test_a_wrong_prune_action_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--harness-prune=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-prune expects one of list, remove, got 'all'*"])


# Units: the volatile parts -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "pinned"),
    [
        ("http://127.0.0.1:40707/v1/x?a=1", "http://127.0.0.1:0/v1/x?a=1"),
        ("http://localhost:8080/v1", "http://localhost:0/v1"),
        ("http://[::1]:5000/v1", "http://[::1]:0/v1"),
        ("http://127.0.0.1/v1", "http://127.0.0.1/v1"),  # no port: nothing to pin
        ("https://api.openai.com:443/v1", "https://api.openai.com:443/v1"),
        ("http://10.0.0.1:8000/v1", "http://10.0.0.1:8000/v1"),
    ],
)
def test_only_a_loopback_port_is_pinned(uri: str, pinned: str) -> None:
    assert steady.pinned(uri) == pinned


@given(st.text())
def test_pinning_any_text_never_raises_and_is_idempotent(uri: str) -> None:
    once = steady.pinned(uri)
    assert steady.pinned(once) == once


def stored(content: str, **fields: Any) -> dict[str, Any]:
    body = {**completion_body({"model": "m"}, Reply(content=content), 1), **fields}
    return interactions.interaction(
        {"method": "POST", "uri": "http://127.0.0.1:9/v1/chat/completions", "body": b"{}"},
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"date": ["now"], "content-type": ["application/json"]},
            "body": {"string": json.dumps(body).encode()},
        },
    )


def key(request: Any) -> Any:
    return request["method"], request["uri"]


def test_align_keeps_the_same_answer_and_replaces_a_changed_one() -> None:
    old = [stored("a", id="x1"), stored("b", id="x2")]
    same = [stored("a", id="y1"), stored("b", id="y2", created=5)]
    assert steady.align(old, same, key) == old
    changed = [stored("a", id="y1"), stored("c", id="y2")]
    assert steady.align(old, changed, key) == [old[0], changed[1]]
    extra = [*same, stored("d")]
    assert steady.align(old, extra, key) == [*old, extra[2]]  # a new one follows
    assert steady.align(old, same[:1], key) == old[:1]  # one no longer asked: dropped


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(
                st.sampled_from(["id", "created", "x", "choices"]), children, max_size=3
            )
        ),
        max_leaves=12,
    )
)
def test_any_json_answer_is_the_same_as_itself(value: Any) -> None:
    response = {"status": {"code": 200}, "headers": {}, "body": {"json": value, "form": "compact"}}
    assert steady.same_answer(response, response) == set()
