"""Calibrating tribunals against labels, with bias probes, over real HTTP to scripted judges.

Each judge is an Agent whose instructions are its name; the loopback server answers it by a
rule of its system message and the user turn, so each judge's accuracy is known in advance:
``Right`` is always right, ``Yes`` always passes, ``Mostly`` is wrong on two items of ten.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_harness._agent import Agent
from pytest_harness._pytest_glue import scope
from pytest_harness.calibration._calibrate import assert_calibrated, calibrate
from pytest_harness.calibration._labels import Labelled
from pytest_harness.calibration._probes import Padding, Position, resolve
from pytest_harness.calibration._result import Calibration
from pytest_harness.errors import ConfigError
from pytest_harness.testing import LoopbackServer, Reply
from pytest_harness.tribunal._tribunal import Tribunal

pytestmark = pytest.mark.harness(cassette=False)

SCHEMA = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}
Rule = Callable[[str, str], Any]  # (system message, user turn) -> a vote, or reply text

GOOD = [f"good {n}" for n in range(1, 7)]
BAD = [f"bad {n}" for n in range(7, 11)]
SET = [{"id": text, "input": text, "label": text in GOOD} for text in GOOD + BAD]
RULES: dict[str, Rule] = {
    "Right": lambda system, user: user.startswith("good"),
    "Yes": lambda system, user: True,
    "Mostly": lambda system, user: user.startswith("good") != (user in ("good 2", "bad 8")),
    "Flaky": lambda system, user: "I would rather not say." if user == "good 3" else True,
}


def serve(server: LoopbackServer, rules: dict[str, Rule]) -> None:
    """Answer each judge (the first paragraph of its system message) by its rule."""

    def handler(body: dict[str, Any]) -> Reply:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        rule = rules.get(system.split("\n\n")[0])
        answer = rule(system, user) if rule else "unscripted judge"
        return Reply(content=json.dumps({"pass": answer}) if answer in (True, False) else answer)

    server.handler = handler


def judge(server: LoopbackServer, name: str, **attrs: Any) -> type[Agent]:
    body = {
        "model": server.model,
        "params": server.params,
        "instructions": name,
        "output": SCHEMA,
        "structured": True,  # the system message is the instructions (and the examples)
        **attrs,
    }
    return type(name, (Agent,), body)


def panel(name: str, judges: list[type[Agent]], **attrs: Any) -> type[Tribunal]:
    return type(name, (Tribunal,), {"agents": judges, "strategy": "majority", **attrs})


def scores(calibration: Calibration) -> dict[str, tuple[Any, ...]]:
    """Per judge and the panel: (scored, accuracy, kappa, (TP, FN, FP, TN))."""
    shown = {}
    for score in (*calibration.judges, calibration.panel):
        c = score.confusion
        shown[score.judge] = (score.scored, score.accuracy, score.kappa, (c.tp, c.fn, c.fp, c.tn))
    return shown


@pytest.fixture
def judges(server: LoopbackServer) -> dict[str, type[Agent]]:
    serve(server, RULES)
    return {name: judge(server, name) for name in RULES}


# Scores against the labels ---------------------------------------------------------------


def test_each_judge_and_the_panel_scored_against_the_labels(
    judges: dict[str, type[Agent]],
) -> None:
    quality = panel("Quality", [judges["Right"], judges["Yes"], judges["Mostly"]])
    calibration = calibrate(quality, SET)
    assert (calibration.tribunal, calibration.source, calibration.items) == ("Quality", None, 10)
    # Right: perfect. Yes: po = 0.6, pe = 0.6 * 1 + 0.4 * 0 = 0.6, kappa 0.
    # Mostly (TP5 FN1 FP1 TN3): po = 0.8, pe = 0.6 * 0.6 + 0.4 * 0.4 = 0.52,
    #   kappa = 0.28 / 0.48 = 7/12.
    # Panel (majority): "good 2" still passes (Right, Yes), "bad 8" passes (Yes, Mostly):
    #   TP6 FN0 FP1 TN3, po = 0.9, pe = 0.6 * 0.7 + 0.4 * 0.3 = 0.54, kappa 0.36/0.46 = 18/23.
    assert scores(calibration) == {
        "Right": (10, 1.0, pytest.approx(1.0), (6, 0, 0, 4)),
        "Yes": (10, 0.6, pytest.approx(0.0), (6, 0, 4, 0)),
        "Mostly": (10, pytest.approx(0.8), pytest.approx(7 / 12), (5, 1, 1, 3)),
        "panel": (10, pytest.approx(0.9), pytest.approx(18 / 23), (6, 0, 1, 3)),
    }
    # Agreement among the judges: 5 good items 3-0 (all pairs agree), the other 5 items 2-1
    # (1 pair of 3 agrees): mean (5 * 1 + 5 * 1/3) / 10 = 2/3 (every item has 3 votes, so
    # alpha's observed agreement, which weighs items by votes, is that mean too).
    # Krippendorff's alpha: each 2-1 item adds o_PF = o_FP = 2 * 1 / (3 - 1) = 1, so
    # sum_{c != k} o_ck = 10; 22 of n = 30 votes pass, 8 fail:
    # alpha = 1 - 29 * 10 / (2 * 22 * 8) = 1 - 290 / 352 = 31/176.
    assert calibration.agreement.percent_agreement == pytest.approx(200 / 3)
    assert calibration.agreement.krippendorff_alpha == pytest.approx(31 / 176)
    assert calibration.agreement.items == 10
    record = calibration.record("tests/test_x.py::test_q")
    assert record["panel"]["confusion"] == {
        "pass": {"pass": 6, "fail": 0},
        "fail": {"pass": 1, "fail": 3},
    }
    assert [j["judge"] for j in record["judges"]] == ["Right", "Yes", "Mostly"]
    assert record["agreement"] == {
        "percent_agreement": pytest.approx(200 / 3),
        "krippendorff_alpha": pytest.approx(31 / 176),
        "items": 10,
    }
    assert json.loads(json.dumps(record)) == record  # JSON-ready
    table = calibration.table()
    assert "Mostly" in table
    assert (
        "agreement among the judges: 66.7% over 10 items with 2+ votes, "
        "Krippendorff's alpha 0.176" in table
    )


def test_repeated_judges_are_told_apart_by_position(judges: dict[str, type[Agent]]) -> None:
    right, yes = judges["Right"], judges["Yes"]
    calibration = calibrate(panel("Twice", [right, yes, right]), SET, probes=["padding"])
    assert [score.judge for score in calibration.judges] == ["Right", "Yes", "Right#2"]
    assert scores(calibration)["Right#2"] == scores(calibration)["Right"]
    assert [(r.judge, r.applicable) for r in calibration.probes] == [
        ("Right", 10),
        ("Yes", 10),
        ("Right#2", 10),
    ]


def test_a_judge_that_fails_on_an_item_has_no_vote_there(judges: dict[str, type[Agent]]) -> None:
    # may_fail=0: Flaky's failure on "good 3" costs the panel its verdict there, but Right's
    # vote on that item still counts for Right.
    strict = panel("Strict", [judges["Right"], judges["Flaky"]], may_fail=0)
    calibration = calibrate(strict, SET)
    right, flaky = calibration.judges
    assert (right.scored, right.no_verdict, right.accuracy) == (10, (), 1.0)
    assert (flaky.scored, flaky.no_verdict) == (9, ("good 3",))
    assert flaky.errors is not None
    assert flaky.errors["good 3"].startswith("JudgeOutputError:")
    assert calibration.panel.no_verdict == ("good 3",)
    assert calibration.panel.errors == {"good 3": "1 of the judges failed, more than may_fail=0"}
    assert calibration.panel.scored == 9
    # Alone, Flaky's failure leaves the panel without a verdict: AllAgentsFailed.
    alone = calibrate(panel("Alone", [judges["Flaky"]]), SET)
    assert alone.panel.no_verdict == ("good 3",)
    assert alone.panel.errors is not None
    assert alone.panel.errors["good 3"].startswith("AllAgentsFailed: Alone: all 1 judges failed")
    record = alone.record(None)
    assert record["panel"]["no_verdict"] == ["good 3"]
    assert record["judges"][0]["scored"] == 9


def test_a_setup_error_ends_the_calibration(server: LoopbackServer) -> None:
    serve(server, RULES)
    no_model = type("NoModel", (Agent,), {"instructions": "Right", "output": SCHEMA})
    heard: list[str] = []
    with (
        scope.activate(
            scope.Scope(listeners=scope.everything(lambda topic, _: heard.append(topic)))
        ),
        pytest.raises(ConfigError, match="agent NoModel has no model"),
    ):
        calibrate(panel("Unset", [no_model]), SET)
    assert heard == []  # nothing reported for a calibration that did not finish


def test_only_the_calibration_is_reported(judges: dict[str, type[Agent]]) -> None:
    heard: list[tuple[str, Any]] = []
    quality = panel("Quality", [judges["Right"], judges["Yes"], judges["Mostly"]])
    with scope.activate(
        scope.Scope(listeners=scope.everything(lambda *event: heard.append(event)))
    ):
        calibration = calibrate(quality, SET, probes=["padding"])
    topics = [topic for topic, _ in heard]
    assert "tribunal" not in topics  # 10 panels and 30 probe runs, none reported alone
    assert topics.count("calibration") == 1
    assert heard[-1] == ("calibration", calibration)
    assert topics.count("response") == 10 * 3 + 30  # other topics still reach the listeners


# Thresholds ------------------------------------------------------------------------------


def test_failures_name_the_figure_the_threshold_and_the_fix(
    judges: dict[str, type[Agent]],
) -> None:
    quality = panel("Quality", [judges["Right"], judges["Yes"], judges["Mostly"]])
    calibration = calibrate(quality, SET)
    assert calibration.failures() == []
    assert calibration.failures(min_accuracy=0.9, min_kappa=0.78) == []
    low_accuracy, low_kappa = calibration.failures(min_accuracy=0.95, min_kappa=0.8)
    assert low_accuracy.startswith(
        "the panel's accuracy 0.900 is below min_accuracy=0.95 (9 of 10 items right: "
        "1 passed that should fail, 0 failed that should pass): improve the judges'"
    )
    assert low_kappa.startswith("the panel's Cohen's kappa 0.783 is below min_kappa=0.8")
    with pytest.raises(ConfigError, match=r"min_accuracy=1.5 is out of range"):
        calibration.failures(min_accuracy=1.5)


def test_an_undefined_kappa_fails_a_kappa_threshold(judges: dict[str, type[Agent]]) -> None:
    passing = [item for item in SET if item["label"]]
    calibration = calibrate(panel("YesMen", [judges["Yes"]]), passing)
    assert calibration.panel.kappa is None
    assert calibration.failures(min_accuracy=1.0) == []
    (failure,) = calibration.failures(min_kappa=0.5)
    assert failure == (
        "the panel's Cohen's kappa is undefined (every label and every verdict is pass, so "
        "agreement shows nothing), so it cannot reach min_kappa=0.5: label items of both "
        "verdicts, pass and fail"
    )


def test_assert_calibrated_fails_with_the_failures_and_the_tables(
    judges: dict[str, type[Agent]],
) -> None:
    quality = panel("Quality", [judges["Right"], judges["Yes"], judges["Mostly"]])
    heard: list[Any] = []
    with (
        scope.activate(
            scope.Scope(listeners=scope.everything(lambda _, payload: heard.append(payload)))
        ),
        pytest.raises(AssertionError) as raised,
    ):
        assert_calibrated(quality, SET, min_accuracy=0.95)
    message = str(raised.value)
    assert message.startswith(
        "Quality calibration failed:\n- the panel's accuracy 0.900 is below min_accuracy=0.95"
    )
    assert "Quality calibrated on 10 labelled items from a list" in message
    assert "panel" in message.split("calibrated on", 1)[1]
    # The report row (emitted before the assertion) carries the thresholds and failures.
    (reported,) = [p for p in heard if isinstance(p, Calibration)]
    record = reported.record("t")
    assert (record["min_accuracy"], record["min_kappa"], record["outcome"]) == (0.95, None, "fail")
    assert record["failures"] == reported.failures() == reported.failures(min_accuracy=0.95)
    assert len(record["failures"]) == 1
    passed = assert_calibrated(quality, SET, min_accuracy=0.9, min_kappa=0.7)
    assert passed.panel.accuracy == pytest.approx(0.9)
    assert passed.record(None)["outcome"] == "pass"
    with pytest.raises(ConfigError, match=r"min_kappa=2 is out of range"):
        assert_calibrated(quality, SET, min_kappa=2)


# Bias probes -----------------------------------------------------------------------------


def better_first(system: str, user: str) -> bool:
    """A fair pairwise judge: passes when the first candidate is the better one."""
    if not user.startswith("{"):
        return user.startswith("better")
    return bool(json.loads(user)["candidates"][0].startswith("better"))


PAIRS = [
    {"id": "p1", "input": {"question": "Q1", "candidates": ["better A", "worse B"]}, "label": 1},
    {"id": "p2", "input": {"question": "Q2", "candidates": ["worse C", "better D"]}, "label": 0},
    {"id": "p3", "input": {"question": "Q3", "candidates": ["better E", "worse F"]}, "label": 1},
    {"id": "p4", "input": {"question": "Q4", "candidates": ["worse G", "better H"]}, "label": 0},
]


def test_position_probe_flags_a_judge_that_follows_the_position(server: LoopbackServer) -> None:
    serve(server, {"First": lambda system, user: True, "Fair": better_first})
    first, fair = judge(server, "First"), judge(server, "Fair")
    single = {"id": "single", "input": "better alone", "label": True}  # not a pair: skipped
    calibration = calibrate(panel("Pairwise", [first, fair]), [*PAIRS, single], probes="position")
    by_judge = {result.judge: result for result in calibration.probes}
    assert (by_judge["First"].flips, by_judge["First"].applicable) == (4, 4)
    assert by_judge["First"].items == ("p1", "p2", "p3", "p4")
    assert by_judge["First"].flagged
    assert (by_judge["Fair"].flips, by_judge["Fair"].applicable) == (0, 4)
    assert not by_judge["Fair"].flagged
    assert calibration.flagged == ("First",)
    (failure,) = calibration.failures()
    assert failure.startswith(
        "judge First is flagged by the position probe: its vote flipped on 4 of 4 items "
        "(100.0%), above max_flip_rate=0.1: p1, p2, p3, p4. A fair verdict does not depend "
        "on which candidate comes first"
    )
    swapped = [
        json.loads(body["messages"][-1]["content"])["candidates"]
        for body in server.requests
        if body["messages"][0]["content"] == "Fair"
        and body["messages"][-1]["content"] != "better alone"
    ]
    assert ["worse B", "better A"] in swapped  # the probe asked with the candidates swapped
    assert calibration.record(None)["flagged"] == ["First"]
    assert "FLAGGED" in calibration.table()


def test_padding_probe_flags_a_judge_swayed_by_length(server: LoopbackServer) -> None:
    serve(
        server,
        {
            "Wordy": lambda system, user: len(user) > 40,
            "Steady": lambda system, user: user.startswith("good"),
        },
    )
    items = [
        ("good, and a long enough answer to pass Wordy as it is", True),
        ("good, short", True),
    ]
    tribunal = panel("Length", [judge(server, "Wordy"), judge(server, "Steady")])
    calibration = calibrate(tribunal, items, probes=[Padding(text=" " + "filler " * 8)])
    wordy, steady = calibration.probes
    assert (wordy.judge, wordy.flips, wordy.applicable, wordy.items) == ("Wordy", 1, 2, ("item 1",))
    assert wordy.rate == 0.5
    assert wordy.flagged
    assert (steady.flips, steady.applicable, steady.flagged) == (0, 2, False)
    asked = {body["messages"][-1]["content"] for body in server.requests}
    assert "good, short " + "filler " * 8 in asked
    # Flagged only above the rate: at exactly 0.5, not.
    assert calibrate(tribunal, items, probes="padding", max_flip_rate=0.5).flagged == ()


def test_examples_probe_flags_a_judge_swayed_by_their_order(server: LoopbackServer) -> None:
    def first_example_wins(system: str, user: str) -> bool:
        return system.index("Input: Thanks!") < system.index("Input: Go away.")

    serve(
        server,
        {
            "Primed": first_example_wins,
            "Calm": lambda system, user: user.startswith("good"),
            "Plain": lambda system, user: user.startswith("good"),
        },
    )
    examples = [("Thanks!", {"pass": True}), ("Go away.", {"pass": False})]
    primed = judge(server, "Primed", examples=examples)
    calm = judge(server, "Calm", examples=examples)
    calibration = calibrate(
        panel("Shots", [primed, calm, judge(server, "Plain")]), SET[:3], probes=["examples"]
    )
    by_judge = {r.judge: (r.flips, r.applicable, r.flagged) for r in calibration.probes}
    assert by_judge == {"Primed": (3, 3, True), "Calm": (0, 3, False), "Plain": (0, 0, False)}
    assert calibration.probes[2].rate is None  # no examples: the probe does not apply
    reversed_order = [
        body["messages"][0]["content"]
        for body in server.requests
        if body["messages"][0]["content"].startswith("Calm\n\nExamples:\n\nInput: Go away.")
    ]
    assert len(reversed_order) == 3
    assert primed.examples == examples  # the judge itself is left as it was


def test_probes_are_named_or_given_as_objects() -> None:
    padding = Padding(text=" and so on.")
    (position, given) = resolve(["position", padding])
    assert isinstance(position, Position)
    assert given is padding
    with pytest.raises(ConfigError, match=r"unknown probe 'order'; the probes are examples, "):
        resolve(["order"])
    with pytest.raises(ConfigError, match=r"pass a probe instance, not the class: Position\(\)"):
        resolve([Position])
    with pytest.raises(ConfigError, match=r"probe padding given twice"):
        resolve(["padding", padding])
    with pytest.raises(ConfigError, match=r"42 is not a probe"):
        resolve(42)


def test_padding_and_position_perturb_what_they_say() -> None:
    pair = Labelled(id="x", input={"q": "Q", "candidates": ["A", "B"], "n": 3}, label=True)
    assert Position().input(pair) == {"q": "Q", "candidates": ["B", "A"], "n": 3}
    assert Padding(text="!").input(pair) == {"q": "Q!", "candidates": ["A!", "B!"], "n": 3}
    assert not Padding().applies(None, Labelled(id="n", input=42, label=True))
    assert not Position().applies(None, Labelled(id="t", input={"candidates": [1]}, label=True))
    with pytest.raises(ConfigError, match="needs some filler text"):
        Padding(text="  ")


def test_bad_arguments_are_config_errors(judges: dict[str, type[Agent]]) -> None:
    quality = panel("Quality", [judges["Right"]])
    with pytest.raises(ConfigError, match=r"calibrate expects a Tribunal class"):
        calibrate(quality(), SET)  # type: ignore[arg-type]
    built = panel("Built", [judges["Right"](input="fixed")])
    with pytest.raises(ConfigError, match=r"Built.agents\[0\] is .*list judges as classes"):
        calibrate(built, SET)
    with pytest.raises(ConfigError, match=r"max_flip_rate=1.5 is out of range"):
        calibrate(quality, SET, max_flip_rate=1.5)


# Few-shot examples in the agent's messages -------------------------------------------------


def test_without_examples_the_messages_are_unchanged() -> None:
    class Judge(Agent):
        instructions = "Judge the reply."

    assert Judge(input="Thanks!", context={"id": 7}).messages() == [
        {"role": "system", "content": "Judge the reply."},
        {"role": "user", "content": 'Thanks!\n\nContext:\n{\n  "id": 7\n}'},
    ]


def test_examples_follow_the_instructions_in_the_system_message(server: LoopbackServer) -> None:
    class Judge(Agent):
        model = server.model
        params = server.params
        instructions = "Judge the reply."
        examples = (("Thanks!", {"pass": True}), ({"text": "Go away."}, "fail"))

    server.queue(Reply(content="ok"))
    Judge(input="Hello", memory="Be brief.").call()
    assert server.requests[0]["messages"][0] == {
        "role": "system",
        "content": "Judge the reply.\n\nExamples:\n\n"
        'Input: Thanks!\nOutput: {\n  "pass": true\n}\n\n'
        'Input: {\n  "text": "Go away."\n}\nOutput: fail\n\n'
        "Notes from earlier:\nBe brief.",
    }
    bad = type("Bad", (Agent,), {"instructions": "x", "examples": [("only an input",)]})
    with pytest.raises(ConfigError, match=r"agent Bad: example 1 is \('only an input',\)"):
        bad(input="y").messages()


# Recorded, then replayed -------------------------------------------------------------------

CONFTEST = """
import json
from pytest_harness import Agent, Tribunal

SCHEMA = {{"type": "object", "properties": {{"pass": {{"type": "boolean"}}}}}}


class Right(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = SCHEMA
    structured = True
    instructions = "Right"


class Coin(Right):
    instructions = "Coin"


class Quality(Tribunal):
    agents = [Right, Coin]
    strategy = "unanimous"
"""

CALIBRATED = """
import json
from pathlib import Path

from conftest import Quality
from pytest_harness.calibration._calibrate import calibrate


def test_quality():
    here = Path(__file__).parent
    calibration = calibrate(Quality, "labels.jsonl", probes=["padding"], base=here)
    (here / "record.json").write_text(json.dumps(calibration.record(None), sort_keys=True))
"""


def test_a_calibration_records_then_replays_the_same(pytester: pytest.Pytester) -> None:
    """Identical requests (items with the same text) replay to the items that recorded them."""
    seen: dict[str, int] = {}

    def coin(system: str, user: str) -> bool:
        """Right on the first asking of a text, wrong on the second, right on the third..."""
        seen[user] = seen.get(user, 0) + 1
        return user.startswith("good") == (seen[user] % 2 == 1)

    labelled = [
        {"id": f"{text}#{n}", "input": text, "label": text in GOOD}
        for text in ("good 1", "bad 7", "good 2")
        for n in range(3)
    ]
    (pytester.path / "labels.jsonl").write_text("\n".join(map(json.dumps, labelled)))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    pytester.makepyfile(test_calibrated=CALIBRATED)
    with LoopbackServer() as server:
        serve(server, {"Right": RULES["Right"], "Coin": coin})
        pytester.makeconftest(CONFTEST.format(url=server.url))
        live = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-live")
        live.assert_outcomes(passed=1)
        recorded = (pytester.path / "record.json").read_text()
        asked = len(server.requests)
        assert asked == 9 * 2 + 9 * 2  # the panels, then each judge alone on padded text
        pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
        assert len(server.requests) == asked  # replayed: nothing reached the server
    assert (pytester.path / "record.json").read_text() == recorded
    record = json.loads(recorded)
    coin_score = record["judges"][1]
    assert (record["items"], coin_score["judge"], coin_score["scored"]) == (9, "Coin", 9)
    assert coin_score["accuracy"] == pytest.approx(6 / 9)  # identical requests answered apart
    # Each item's padded question got the answer its plain one got: asked in set order.
    assert [p["flips"] for p in record["probes"]] == [0, 0]
