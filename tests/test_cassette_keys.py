"""Stored match keys: a cassette loads without computing its keys, and never trusts a stale one.

A recording writes each interaction's match key (``match_key``, a digest), the settings the
keys were computed with (``match_keys``) and the file's checksum; a replay takes the keys
from the file while the checksum holds and the settings are the cassette's, and computes
them otherwise (an older file, one edited by hand, other settings). Cassettes here are
recorded through the model seam against a loopback server and replayed through vcrpy.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_harness import complete
from pytest_harness._cassettes import bodies, checksum, matching, read, store
from pytest_harness._cassettes.scrub import Redaction
from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import CassetteError, CassetteMiss
from pytest_harness.testing import LoopbackServer, Reply

pytestmark = pytest.mark.harness(cassette=False)

# "one" twice: a request recorded twice has two recordings, played in order.
PROMPTS = ("one", "two", "three", "one")


class Answers:
    """The loopback server's answers: the prompt, upper-cased, and how often it was asked."""

    def __init__(self) -> None:
        self.asked: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        prompt = str(body["messages"][-1]["content"])
        self.asked[prompt] = self.asked.get(prompt, 0) + 1
        return Reply(content=f"{prompt.upper()} {self.asked[prompt]}")


def record(path: Path, server: LoopbackServer, prompts: Sequence[str], run_id: str) -> None:
    """Record ``prompts`` into ``path`` through the seam, as a passing test does."""
    server.handler = Answers()
    slot = CassetteSlot(path=path, mode="all", nodeid="t.py::test_t", run_id=run_id)
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
        for prompt in prompts:
            complete(prompt, model="openai/loopback", **server.params)
    assert slot.close(keep=True) == path


def replay(path: Path, params: dict[str, Any], prompts: Sequence[str], **slot: Any) -> list[str]:
    """The answers a replaying test gets for ``prompts`` from the cassette at ``path``."""
    opened = CassetteSlot(path=path, mode="none", nodeid="t.py::test_t", run_id="replay", **slot)
    with scope.activate(scope.Scope(call_hooks=(opened,), degenerate="off")):
        try:
            return [complete(p, model="openai/loopback", **params).text for p in prompts]
        finally:
            opened.close(keep=False)


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A cassette of ``PROMPTS``, and the (stopped) server's parameters to replay it with."""
    path = tmp_path / "c.yaml"
    with LoopbackServer() as server:
        record(path, server, PROMPTS, run_id="run-1")
        yield path, server.params


def load(path: Path, ignore: Sequence[str] = ()) -> store.HarnessCassette:
    return store.load(
        path, mode="none", ignore=ignore, redaction=Redaction(), rerecord_hint=lambda: "hint"
    )


def uses_stored_keys(path: Path, ignore: Sequence[str] = ()) -> bool:
    return checksum.stored_keys(read.read(path), ignore, Redaction().query_params) is not None


def without_stored_keys(data: dict[str, Any]) -> dict[str, Any]:
    """A cassette's data as a version before stored keys wrote it."""
    old = {k: v for k, v in data.items() if k not in (checksum.MATCH_KEYS, checksum.CHECKSUM)}
    old["interactions"] = [
        {k: v for k, v in interaction.items() if k != checksum.MATCH_KEY}
        for interaction in data["interactions"]
    ]
    return old


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


EXPECTED = ["ONE 1", "TWO 1", "THREE 1", "ONE 2"]


def test_a_recording_stores_each_match_key_and_the_files_checksum(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    path, _ = recorded
    data = json.loads(path.read_text())
    key = load(path).stored_key
    for interaction in data["interactions"]:
        assert interaction[checksum.MATCH_KEY] == matching.digest(key(interaction["request"]))
    assert data[checksum.MATCH_KEYS] == {"ignore": [], "blank": sorted(Redaction().query_params)}
    assert list(data)[-1] == checksum.CHECKSUM  # the last field, over every byte before it
    assert uses_stored_keys(path)


def test_a_cassette_replays_with_the_keys_it_stores(recorded: tuple[Path, dict[str, Any]]) -> None:
    path, params = recorded
    assert replay(path, params, PROMPTS) == EXPECTED
    assert replay(path, params, ["three", "one", "two", "one"]) == [
        "THREE 1",
        "ONE 1",
        "TWO 1",
        "ONE 2",
    ]


def test_an_old_cassette_loads_and_replays_the_same(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, params = recorded
    old = write(tmp_path / "old.yaml", without_stored_keys(json.loads(path.read_text())))
    assert not uses_stored_keys(old)
    assert load(old)._index == load(path)._index  # computed on load: the keys it would store
    assert replay(old, params, PROMPTS) == EXPECTED
    with pytest.raises(CassetteMiss, match="closest recorded request"):
        replay(old, params, ["four"])


def test_an_old_cassette_gains_its_keys_once_when_re_recorded(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        path = tmp_path / "c.yaml"
        record(path, server, PROMPTS, run_id="run-1")
        current = path.read_bytes()
        write(path, without_stored_keys(json.loads(current)))
        record(path, server, PROMPTS, run_id="run-2")
        assert path.read_bytes() == current  # the same answers: only the keys were added
        assert uses_stored_keys(path)


def test_re_recording_the_same_answers_changes_no_stored_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with LoopbackServer() as first:
        record(path, first, PROMPTS, run_id="run-1")
    before = path.read_bytes()
    with LoopbackServer() as second:  # another port, another run
        record(path, second, PROMPTS, run_id="run-2")
    assert path.read_bytes() == before


def test_a_changed_answer_is_written_with_its_key_and_a_new_checksum(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with LoopbackServer() as server:
        record(path, server, PROMPTS, run_id="run-1")
        before = json.loads(path.read_text())
        record(path, server, [*PROMPTS, "four"], run_id="run-2")
    after = json.loads(path.read_text())
    assert after["interactions"][:4] == before["interactions"]
    added = after["interactions"][4]
    assert added[checksum.MATCH_KEY] == matching.digest(load(path).stored_key(added["request"]))
    assert after[checksum.CHECKSUM] != before[checksum.CHECKSUM]
    assert uses_stored_keys(path)


def edited_prompt(path: Path, old: str, new: str) -> None:
    """Edit the prompt of a request by hand: its stored key and the checksum stay."""
    text = path.read_text()
    assert text.count(f'"content": "{old}"') == 2  # both recordings of "one"
    path.write_text(text.replace(f'"content": "{old}"', f'"content": "{new}"'))


def test_a_request_edited_by_hand_is_never_found_by_its_stale_key(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    path, params = recorded
    edited_prompt(path, "one", "uno")
    assert not uses_stored_keys(path)  # the checksum no longer holds
    assert replay(path, params, ["uno", "two", "uno"]) == ["ONE 1", "TWO 1", "ONE 2"]
    with pytest.raises(CassetteMiss) as missed:
        replay(path, params, ["one"])  # what the stale key stood for
    assert '"content": "uno"' in str(missed.value)  # the closest recording: the edited one


def test_a_stored_key_edited_by_hand_is_not_trusted(recorded: tuple[Path, dict[str, Any]]) -> None:
    path, params = recorded
    data = json.loads(path.read_text())
    first, second = data["interactions"][:2]
    key = checksum.MATCH_KEY
    first[key], second[key] = second[key], first[key]
    # Written as the harness writes, with the old checksum: it no longer holds.
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text)
    assert not uses_stored_keys(path)
    assert replay(path, params, PROMPTS) == EXPECTED


def test_stored_keys_of_other_match_settings_are_computed_again(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    path, params = recorded
    assert not uses_stored_keys(path, ignore=("temperature",))
    assert replay(path, params, PROMPTS, ignore=("temperature",)) == EXPECTED
    assert replay(path, params, PROMPTS, ignore=("messages",)) == EXPECTED  # any prompt


def test_a_file_written_on_windows_keeps_its_stored_keys(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    path, params = recorded
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert uses_stored_keys(path)
    assert replay(path, params, PROMPTS) == EXPECTED


def test_the_cassettes_data_is_a_list_of_pairs_made_as_they_are_read(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    from vcr.request import Request

    path, _ = recorded
    cassette = load(path)
    assert len(cassette.data) == 4
    first = cassette.data[0]
    request, response = first
    assert isinstance(request, Request)
    assert request.method == "POST"
    assert json.loads(request.body)["messages"] == [{"role": "user", "content": "one"}]
    assert response["status"] == {"code": 200, "message": "OK"}
    assert cassette.data[0] is first  # made once
    assert cassette.data[-4] is first
    assert list(cassette.data)[1:] == cassette.data[1:]
    assert cassette.recorded_now == []
    assert cassette.play_response(request) is response
    assert cassette.play_counts[0] == 1
    assert not cassette.all_played
    assert cassette.responses_of(request) == [response, cassette.data[3][1]]


def test_a_replayed_response_is_made_without_its_request_and_is_the_one_its_pair_holds(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    path, _ = recorded
    cassette = load(path)
    request = cassette.data[0][0]  # interactions 0 and 3 ask the same
    assert cassette.play_response(request) is cassette.data[0][1]
    played = cassette.play_response(request)  # interaction 3: its pair not made yet
    assert isinstance(cassette.data._items[3], store._Stored)  # no Request made to play it
    assert played["status"]["code"] == 200
    assert cassette.data[3][1] is played  # the pair made later holds the response played
    assert cassette.play_counts[3] == 1


class Dawdling(Counter[int]):
    """Play counts that let other threads run between reading a count and changing it."""

    def __getitem__(self, index: int) -> int:
        time.sleep(0.001)
        return super().__getitem__(index)


def test_threads_sending_the_same_request_each_get_their_own_recording(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    recorded = [f"answer {number}" for number in range(8)]
    replies = iter(recorded)
    with LoopbackServer(handler=lambda request: Reply(content=next(replies))) as server:
        slot = CassetteSlot(path=path, mode="all", nodeid="t", run_id="r")
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            for _ in recorded:
                complete("same", model="openai/m", **server.params)
        slot.close(keep=True)
    cassette = load(path)
    cassette.play_counts = Dawdling(cassette.play_counts)
    request = cassette.data[0][0]
    together = threading.Barrier(len(recorded))

    def play() -> Any:
        together.wait()
        return cassette.play_response(request)

    with ThreadPoolExecutor(len(recorded)) as pool:
        played = [future.result() for future in [pool.submit(play) for _ in recorded]]
    said = [json.loads(r["body"]["string"])["choices"][0]["message"]["content"] for r in played]
    assert sorted(said) == sorted(recorded)  # each recording played once
    assert cassette.play_counts == dict.fromkeys(range(8), 1)


# Damaged stored keys: any value in their place loads (their keys computed) or is a
# CassetteError naming the part, never a raw TypeError or KeyError.

# Another key or checksum, or any value at all.
values = st.text("0123456789abcdef", min_size=30, max_size=66) | st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=70),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)
PLACES = st.sampled_from(
    [
        ("interactions", 0, checksum.MATCH_KEY),
        ("interactions", 3, checksum.MATCH_KEY),
        (checksum.MATCH_KEYS,),
        (checksum.MATCH_KEYS, "ignore"),
        (checksum.MATCH_KEYS, "blank"),
        (checksum.CHECKSUM,),
    ]
)


def part(place: tuple[Any, ...]) -> str:
    """What a CassetteError says of the field at ``place``."""
    if place[0] == "interactions":
        return f"interaction {place[1] + 1} of {len(PROMPTS)}: {checksum.MATCH_KEY} must be text"
    return ".".join(place)


def replaced(data: Any, place: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(data))
    node = copy
    for step in place[:-1]:
        node = node[step]
    node[place[-1]] = value
    return copy


@pytest.fixture(scope="module")
def damaged_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("damaged")


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("keys") / "c.yaml"
    with LoopbackServer() as server:
        record(path, server, PROMPTS, run_id="run-1")
    return dict(json.loads(path.read_text()))


SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(place=PLACES, value=values)
def test_any_value_in_a_stored_key_field_loads_or_is_a_cassette_error(
    recorded_once: dict[str, Any], damaged_dir: Path, place: Any, value: Any
) -> None:
    from vcr.request import Request

    path = damaged_dir / "c.yaml"
    document = replaced(recorded_once, place, value)
    write(path, document)
    try:
        cassette, problem = load(path), ""
    except CassetteError as error:
        cassette, problem = None, str(error)
    if cassette is None:
        assert f"cassette {path} cannot be read: " in problem
        assert part(place) in problem
        return
    # Edited, the file's keys are computed from its requests (the same value: not edited).
    assert uses_stored_keys(path) == (document == recorded_once)
    for interaction in recorded_once["interactions"]:  # each recording replays, in order
        stored = interaction["request"]
        body = bodies.body_bytes(stored["body"])
        request = Request(stored["method"], stored["uri"], body, stored["headers"])
        assert request in cassette
        played = cassette.play_response(request)
        assert played["body"]["string"] == bodies.body_bytes(interaction["response"]["body"])
    assert cassette.all_played
