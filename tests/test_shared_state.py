"""SharedState teams against a scripted model on loopback: real litellm calls over real HTTP.

The scripted model plays each member: it reads the store, writes what the test says, then
answers. Which member and cycle a request belongs to is read from the request itself (the
user message names both), so every assertion is on what the server received.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from pytest_harness._agent import Agent
from pytest_harness._pytest_glue.fixture import Harness
from pytest_harness.errors import CassetteMiss, ConfigError, TeamError
from pytest_harness.orchestrator._tools import tool
from pytest_harness.team._findings import KnowledgeStore, TeamResult
from pytest_harness.team._members import Member
from pytest_harness.team._shared_state import SharedState
from pytest_harness.team._turns import COORDINATION
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)

Writes = Callable[[str, int], Any]  # (member, cycle) -> write_finding arguments, or None


def agent(server: LoopbackServer, name: str, **attrs: Any) -> type[Agent]:
    """An Agent class called ``name``, on the loopback server."""
    body = {"model": server.model, "params": server.params, "instructions": f"I am {name}."}
    return type(name, (Agent,), {**body, **attrs})


def who(body: dict[str, Any]) -> tuple[str, int]:
    """The member and cycle a request is from (read from its user message)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    found = re.search(r"Cycle (\d+)(?: of \d+)?\. You are (\w+):", user)
    assert found is not None, user
    return found[2], int(found[1])


def call(name: str, arguments: Any = None) -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name=name, arguments=arguments or {})])


def last_tool(body: dict[str, Any]) -> str | None:
    """The tool whose result ends the conversation so far (None after the user message)."""
    if body["messages"][-1]["role"] != "tool":
        return None
    asked = [m for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    return str(asked[-1]["tool_calls"][-1]["function"]["name"])


def members_write(writes: Writes | None = None) -> Callable[[dict[str, Any]], Reply]:
    """Each member reads the store, writes ``writes(member, cycle)``, then answers "done"."""
    writes = writes or (lambda name, cycle: {"content": f"{name} wrote in cycle {cycle}"})

    def reply(body: dict[str, Any]) -> Reply:
        previous = last_tool(body)
        if previous is None:
            return call("read_store")
        if previous == "read_store":
            arguments = writes(*who(body))
            return call("write_finding", arguments) if arguments is not None else Reply()
        return Reply(content="done")

    return reply


def store_seen(server: LoopbackServer, member: str, cycle: int) -> Any:
    """What ``read_store`` returned to ``member`` in ``cycle``, as the server received it."""
    for body in server.requests:
        if who(body) == (member, cycle) and last_tool(body) == "read_store":
            return json.loads(body["messages"][-1]["content"])
    raise AssertionError(f"{member} never read the store in cycle {cycle}")


def tool_result(server: LoopbackServer, name: str) -> str:
    """The first result of tool ``name`` the server received."""
    for body in server.requests:
        if last_tool(body) == name:
            return str(body["messages"][-1]["content"])
    raise AssertionError(f"no result of {name} was sent")


def team(*members: Any, **attrs: Any) -> type[SharedState]:
    return type("Team", (SharedState,), {"members": list(members), **attrs})


def warm_up(server: LoopbackServer, member: type[Agent]) -> None:
    """Pay litellm's first-call costs before a team with a deadline."""
    server.handler = members_write()
    team(member, max_cycles=1)().invoke("warm up")
    server.reset()


# Turns, order and what each member sees ---------------------------------------------------


def test_members_take_turns_in_order_and_see_what_earlier_ones_wrote(
    server: LoopbackServer,
) -> None:
    server.handler = members_write()
    Team = team(agent(server, "A"), agent(server, "B"), max_cycles=2, timeout=600)
    result = Team().invoke("Customer messages about late parcels")

    order = [who(body) for body in server.requests]
    assert order == [("A", 1)] * 3 + [("B", 1)] * 3 + [("A", 2)] * 3 + [("B", 2)] * 3
    assert store_seen(server, "A", 1) == []
    assert store_seen(server, "B", 1) == [
        {"author": "A", "cycle": 1, "content": "A wrote in cycle 1"}
    ]
    assert [f["author"] for f in store_seen(server, "A", 2)] == ["A", "B"]
    assert [f["author"] for f in store_seen(server, "B", 2)] == ["A", "B", "A"]
    assert tool_result(server, "write_finding") == "Finding recorded."

    assert (result["cycles"], result["terminated_by"]) == (2, "max_cycles")
    assert result["output"] == result.store.read_all()  # the default aggregate
    assert [(f.author, f.cycle, f.content) for f in result.output] == [
        ("A", 1, "A wrote in cycle 1"),
        ("B", 1, "B wrote in cycle 1"),
        ("A", 2, "A wrote in cycle 2"),
        ("B", 2, "B wrote in cycle 2"),
    ]
    assert result.errors == ()
    assert [(t.member, t.cycle, t.run.requests if t.run else 0) for t in result.turns] == [
        ("A", 1, 3),
        ("B", 1, 3),
        ("A", 2, 3),
        ("B", 2, 3),
    ]


def test_each_member_turn_is_a_run_the_test_sees_like_any_other(
    server: LoopbackServer, harness: Harness
) -> None:
    server.handler = members_write()
    result = team(agent(server, "A"), agent(server, "B"), max_cycles=2)().invoke("x")
    assert harness.runs == [turn.run for turn in result.turns]
    assert [run.tools_called for run in harness.runs] == [["read_store", "write_finding"]] * 4


def test_every_member_is_offered_the_two_store_tools(server: LoopbackServer) -> None:
    server.handler = members_write()
    team(agent(server, "A"), max_cycles=1)().invoke("x")
    tools = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert list(tools) == ["read_store", "write_finding"]
    assert tools["read_store"]["parameters"]["properties"] == {}
    written = tools["write_finding"]["parameters"]
    assert written["required"] == ["content"]
    assert written["properties"]["content"]["type"] == "string"
    assert written["properties"]["kind"]["type"] == "string"
    assert written["additionalProperties"] is False


def test_the_prompt_carries_the_guide_the_members_instruction_and_the_task(
    server: LoopbackServer,
) -> None:
    server.handler = members_write()
    A, B = agent(server, "A"), agent(server, "B")
    Team = team(A, SharedState.member(B, instruction="Look for angry customers."), max_cycles=1)
    Team().invoke({"topic": "late parcels"})
    system = {who(body)[0]: body["messages"][0]["content"] for body in server.requests}
    assert system["A"] == f"{COORDINATION}\n\nI am A."
    assert system["B"] == (
        f"{COORDINATION}\n\nYour specific focus for this session: Look for angry customers."
        "\n\nI am B."
    )
    assert "read_store" in COORDINATION
    assert "write_finding" in COORDINATION
    assert server.requests[0]["messages"][1]["content"] == (
        'Task: {\n  "topic": "late parcels"\n}\n\nCycle 1 of 1. You are A: what you write is '
        "recorded under that name."
    )


def test_a_teams_own_coordination_replaces_the_guide(server: LoopbackServer) -> None:
    server.handler = members_write()
    A = agent(server, "A")
    Team = team(SharedState.member(A, instruction="Be brief."), coordination="Read, then write.")
    Team(timeout=600, max_cycles=1).invoke("x")
    assert server.requests[0]["messages"][0]["content"] == (
        "Read, then write.\n\nYour specific focus for this session: Be brief.\n\nI am A."
    )


def test_an_agents_own_tools_are_offered_beside_the_stores(server: LoopbackServer) -> None:
    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return f"{order}: in transit"

    server.handler = members_write()
    team(agent(server, "A", tools=[lookup]), max_cycles=1)().invoke("x")
    body = server.requests[0]
    assert [t["function"]["name"] for t in body["tools"]] == [
        "lookup",
        "read_store",
        "write_finding",
    ]
    assert body["messages"][0]["content"].startswith(
        f"{COORDINATION}\nYou also have these tools: lookup."
    )


def test_researchers_registers_members_without_instructions(server: LoopbackServer) -> None:
    A, B = agent(server, "A"), agent(server, "B")
    Team = team(max_cycles=1)
    Team.members = SharedState.researchers(A, [B])
    assert Team.members == [Member(A), Member(B)]
    server.handler = members_write()
    Team().invoke("x")
    assert [who(body)[0] for body in server.requests] == ["A"] * 3 + ["B"] * 3


def test_an_agent_instance_can_sit_in_a_team(server: LoopbackServer) -> None:
    inline = Agent(model=server.model, params=server.params, name="Inline", instructions="Hi.")
    server.handler = members_write()
    result = team(inline, max_cycles=1)().invoke("x")
    assert [(f.author, f.content) for f in result.output] == [("Inline", "Inline wrote in cycle 1")]
    assert server.requests[0]["messages"][0]["content"] == f"{COORDINATION}\n\nHi."


# How a team ends --------------------------------------------------------------------------


def test_terminate_when_is_checked_after_each_full_cycle(server: LoopbackServer) -> None:
    class Team(SharedState):
        members = (agent(server, "A"), agent(server, "B"))
        max_cycles = 5

        async def terminate_when(self, store: KnowledgeStore) -> bool:
            return store.size >= 1

    server.handler = members_write()
    result = Team().invoke("x")
    assert (result.cycles, result.terminated_by) == (1, "terminate_when")
    assert [f.author for f in result.output] == ["A", "B"]  # B still had its turn


def test_a_team_without_max_cycles_or_timeout_is_a_value_error(server: LoopbackServer) -> None:
    Team = team(agent(server, "A"))
    with pytest.raises(ValueError, match=r"^Team: set max_cycles or timeout \(or both\)"):
        Team().invoke("x")
    assert server.requests == []


def test_a_custom_aggregate_makes_the_output(server: LoopbackServer) -> None:
    class Team(SharedState):
        members = (agent(server, "A"),)
        max_cycles = 2

        def aggregate(self, store: KnowledgeStore) -> dict[str, Any]:
            return {"texts": [f.content for f in store.read_all()], "total": store.size}

    server.handler = members_write()
    result = asyncio.run(Team().ainvoke("x"))
    assert result["output"] == {
        "texts": ["A wrote in cycle 1", "A wrote in cycle 2"],
        "total": 2,
    }
    assert isinstance(result, TeamResult)
    assert repr(result).startswith(
        "TeamResult(team='Team', cycles=2, terminated_by='max_cycles', findings=2, errors=[], "
        "output={'texts': ['A wrote in cycle 1'"
    )
    assert list(result.keys()) == [
        "output",
        "cycles",
        "terminated_by",
        "errors",
        "turns",
        "store",
        "team",
    ]
    with pytest.raises(KeyError, match="a team result has output, cycles, terminated_by"):
        result["verdict"]


# Declaring teams ------------------------------------------------------------------------


def test_a_subclass_inherits_and_overrides_without_changing_its_parent(
    server: LoopbackServer,
) -> None:
    A, B = agent(server, "A"), agent(server, "B")

    class Parent(SharedState):
        members = (A,)
        coordination = "Parent protocol."
        max_cycles = 1

        def aggregate(self, store: KnowledgeStore) -> list[str]:
            return [f.author for f in store.read_all()]

    class Child(Parent):
        members = (*Parent.members, SharedState.member(B, instruction="Focus."))
        max_cycles = 2

    class Sibling(Parent):
        pass

    assert Parent.members == (Member(A),)
    with pytest.raises(AttributeError):
        Parent.members.append(B)  # type: ignore[attr-defined]

    server.handler = members_write()
    child = Child().invoke("x")
    assert (child.cycles, child.output) == (2, ["A", "B", "A", "B"])
    assert all(
        body["messages"][0]["content"].startswith("Parent protocol.") for body in server.requests
    )

    server.reset()
    parent, sibling = Parent().invoke("x"), Sibling().invoke("x")
    assert (parent.cycles, parent.output) == (1, ["A"])
    assert (sibling.cycles, sibling.output) == (1, ["A"])
    assert {who(body) for body in server.requests} == {("A", 1)}
    assert (Parent.max_cycles, SharedState.max_cycles, SharedState.members) == (1, None, ())


def test_instance_keywords_override_the_class_for_that_instance(server: LoopbackServer) -> None:
    Team = team(agent(server, "A"), max_cycles=3)
    server.handler = members_write()
    assert Team(max_cycles=1).invoke("x").cycles == 1
    assert Team.max_cycles == 3
    with pytest.raises(ConfigError, match=r"Team.max_cycles expects None or a whole number >= 1"):
        Team(max_cycles=0)
    with pytest.raises(ConfigError, match=r"^Team.unique_findings expects True .* got 1 \(int\)$"):
        Team(unique_findings=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (
            {"members": [object]},
            "a member is an Agent subclass \\(or instance\\), got <class 'object'>",
        ),
        ({"members": "A"}, "EdgeCases.members must be a list of Agent classes"),
        ({"max_cycles": 0}, "EdgeCases.max_cycles expects None or a whole number >= 1, got 0"),
        ({"max_cycles": "3"}, "EdgeCases.max_cycles expects None or a whole number >= 1"),
        ({"max_cycles": True}, "EdgeCases.max_cycles expects"),
        ({"timeout": -1}, "EdgeCases.timeout expects None or a number of seconds > 0, got -1"),
        ({"member_requests": 0}, "EdgeCases.member_requests expects a whole number from 1 to 100"),
        ({"member_tool_rounds": -1}, "EdgeCases.member_tool_rounds expects None or a whole"),
        ({"member_timeout": 0}, "EdgeCases.member_timeout expects None or a number of seconds"),
        ({"coordination": "  "}, "EdgeCases.coordination must be non-blank text, or None"),
        (
            {"unique_findings": "yes"},
            r"EdgeCases.unique_findings expects True \(refuse a finding already in the store\) "
            r"or False \(append it, the default\), got 'yes' \(str\)",
        ),
        ({"aggregate": "all"}, "EdgeCases.aggregate must be a method"),
    ],
)
def test_a_bad_declaration_fails_when_the_class_is_created(
    attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        type("EdgeCases", (SharedState,), attrs)


def test_bad_members_name_the_team_and_the_fix(server: LoopbackServer) -> None:
    A = agent(server, "A")
    with pytest.raises(ConfigError, match=r"two members called 'A': give one of them another name"):
        team(A, A)
    team(A, SharedState.member(A, name="A2"))  # named apart, one agent may sit twice
    clashing = agent(server, "C", tools=[tool(lambda: "x", name="read_store")])
    with pytest.raises(ConfigError, match=r"declares a tool named 'read_store'.*rename"):
        team(clashing)
    with pytest.raises(ConfigError, match="a member is an Agent subclass"):
        SharedState.member("A")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="A's timeout expects None or a number of seconds"):
        SharedState.member(A, timeout=0)


def test_a_member_without_a_model_fails_before_any_request(server: LoopbackServer) -> None:
    Team = team(agent(server, "A"), agent(server, "NoModel", model=None), max_cycles=1)
    with pytest.raises(ConfigError, match=r"^Team: member NoModel: agent NoModel has no model"):
        Team().invoke("x")
    assert server.requests == []


def test_a_team_without_members_says_so_when_invoked() -> None:
    with pytest.raises(ConfigError, match=r"Team has no members: set members = \[AgentClass"):
        team(max_cycles=1)().invoke("x")


# Bad input: members, findings, hooks ------------------------------------------------------


def test_a_member_that_errors_is_recorded_and_the_next_member_runs(
    server: LoopbackServer,
) -> None:
    healthy = members_write()

    def reply(body: dict[str, Any]) -> Reply:
        if who(body)[0] == "A":
            return Reply(status=400, error="this model does not exist")
        return healthy(body)

    server.handler = reply
    result = team(agent(server, "A"), agent(server, "B"), max_cycles=1)().invoke("x")
    assert result.terminated_by == "max_cycles"
    (failed,) = result["errors"]
    assert (failed.member, failed.cycle) == ("A", 1)
    assert failed.error is not None
    assert failed.error.startswith("Team: A in cycle 1 failed: RunFailed: request 1 of the run")
    assert "this model does not exist" in failed.error
    assert failed.run is not None
    assert failed.run.stop_reason == "error"
    assert [f.author for f in result.output] == ["B"]
    assert [who(body)[0] for body in server.requests] == ["A", "B", "B", "B"]


def test_a_member_past_its_own_timeout_is_cut_off_and_the_team_goes_on(
    server: LoopbackServer,
) -> None:
    """Slow answers after 5 s, past its own 0.5 s: cut off twice, Fast still runs twice."""
    healthy = members_write()
    server.handler = lambda body: Reply(delay=5) if who(body)[0] == "Slow" else healthy(body)
    Fast, Slow = agent(server, "Fast"), agent(server, "Slow")
    result = team(Fast, SharedState.member(Slow, timeout=0.5), max_cycles=2)().invoke("x")
    assert [(t.member, t.cycle, t.run) for t in result.errors] == [
        ("Slow", 1, None),
        ("Slow", 2, None),
    ]
    assert result.errors[0].error == (
        "Team: Slow in cycle 1 did not finish within its timeout of 0.5 s; its findings so "
        "far are kept. To give it longer: SharedState.member(..., timeout=...), or the team's "
        "member_timeout"
    )
    assert [(f.author, f.cycle) for f in result.output] == [("Fast", 1), ("Fast", 2)]
    assert (result.terminated_by, result.cycles) == ("max_cycles", 2)


def test_a_member_stopped_by_its_tool_rounds_is_recorded_and_its_findings_kept(
    server: LoopbackServer,
) -> None:
    def reply(body: dict[str, Any]) -> Reply:
        member, _ = who(body)
        return call("write_finding", {"content": f"{member}: idea {len(body['messages'])}"})

    server.handler = reply
    result = team(agent(server, "A"), agent(server, "B"), max_cycles=1)().invoke("x")
    assert [t.error for t in result.errors] == [
        "Team: A in cycle 1 stopped on max_tool_rounds after 4 requests",
        "Team: B in cycle 1 stopped on max_tool_rounds after 4 requests",
    ]
    assert [f.author for f in result.output] == ["A"] * 3 + ["B"] * 3
    # The request after the third round asked for an answer, not more tools.
    assert [body.get("tool_choice") for body in server.requests[:4]] == [None] * 3 + ["none"]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"content": 5}, "content"),
        ({}, "content"),
        ({"content": "   "}, "the finding is empty"),
        ({"content": "late", "severity": "high"}, "severity"),
        ("{not json", "write_finding"),
    ],
    ids=["not-text", "missing", "blank", "unknown-key", "not-json"],
)
def test_a_malformed_finding_is_refused_to_the_model_and_not_stored(
    server: LoopbackServer, arguments: Any, said: str
) -> None:
    server.handler = members_write(lambda name, cycle: arguments)
    result = team(agent(server, "A"), max_cycles=1)().invoke("x")
    sent = tool_result(server, "write_finding")
    assert sent.startswith("Error: ")
    assert said in sent
    assert result.output == []
    assert result.errors == ()  # the model was told; its turn went on to its end


@pytest.mark.parametrize("where", ["class", "instance"])
def test_with_unique_findings_a_finding_already_in_the_store_is_refused(
    server: LoopbackServer, where: str
) -> None:
    """An opt-in beyond the seed (whose tool always appends): the model is told why."""
    server.handler = members_write(lambda name, cycle: {"content": "Parcel lost"})
    members = (agent(server, "A"), agent(server, "B"))
    if where == "class":
        result = team(*members, max_cycles=1, unique_findings=True)().invoke("x")
    else:
        result = team(*members, max_cycles=1)(unique_findings=True).invoke("x")
    assert [f.author for f in result.output] == ["A"]
    assert tool_result(server, "write_finding") == "Finding recorded."
    refused = [
        body["messages"][-1]["content"]
        for body in server.requests
        if who(body)[0] == "B" and last_tool(body) == "write_finding"
    ]
    assert refused == [
        "Error: tool 'write_finding' raised ValueError: this finding is already in the store "
        "(written by A in cycle 1): write a new insight, or stop if you have none"
    ]


def test_an_aggregate_that_raises_is_a_team_error_keeping_the_findings(
    server: LoopbackServer,
) -> None:
    class EdgeCases(SharedState):
        members = (agent(server, "A"),)
        max_cycles = 1

        def aggregate(self, store: KnowledgeStore) -> Any:
            raise KeyError("text")

    server.handler = members_write()
    with pytest.raises(TeamError) as caught:
        EdgeCases().invoke("x")
    error = caught.value
    assert str(error) == (
        "EdgeCases: aggregate(store) raised KeyError: 'text'. The store's 1 findings are kept "
        "on this error (error.findings)."
    )
    assert [f.content for f in error.findings] == ["A wrote in cycle 1"]
    assert (error.team, error.cycles, len(error.turns)) == ("EdgeCases", 1, 1)
    assert isinstance(error.__cause__, KeyError)


def test_a_terminate_when_that_raises_is_a_team_error(server: LoopbackServer) -> None:
    class EdgeCases(SharedState):
        members = (agent(server, "A"),)
        max_cycles = 3

        def terminate_when(self, store: KnowledgeStore) -> bool:
            raise RuntimeError("no convergence rule")

    server.handler = members_write()
    with pytest.raises(TeamError, match=r"^EdgeCases: terminate_when.store. raised RuntimeError"):
        EdgeCases().invoke("x")
    assert {who(body)[1] for body in server.requests} == {1}


def test_every_member_failing_in_a_cycle_stops_the_team(server: LoopbackServer) -> None:
    server.handler = lambda body: Reply(status=400, error="bad key")
    Team = team(agent(server, "A"), agent(server, "B"), max_cycles=3)
    with pytest.raises(TeamError, match=r"^Team: every member failed in cycle 1") as caught:
        Team().invoke("x")
    assert [turn.member for turn in caught.value.turns] == ["A", "B"]
    assert "Team: B in cycle 1 failed: RunFailed" in str(caught.value)
    assert len(server.requests) == 2  # no second cycle


def test_a_cassette_miss_inside_a_member_reaches_the_test_untouched(
    server: LoopbackServer,
) -> None:
    @tool
    def fetch() -> str:
        """Fetch something over HTTP (here: a request the cassette does not hold)."""
        raise CassetteMiss("no recording of GET https://example.com")

    server.handler = lambda body: call("fetch")
    Team = team(agent(server, "A", tools=[fetch]), agent(server, "B"), max_cycles=1)
    with pytest.raises(CassetteMiss, match=r"^no recording of GET https://example.com$"):
        Team().invoke("x")
    assert {who(body)[0] for body in server.requests} == {"A"}


# What the seed says (shared_state.rb), checked against its own words ---------------------


def test_write_finding_appends_a_finding_already_in_the_store(server: LoopbackServer) -> None:
    """Seed: "+write_finding+ — appends a Hash finding to the store"; the store is
    append-only. A repeat is appended like any finding, and the model is told it was
    recorded."""
    server.handler = members_write(lambda name, cycle: {"content": "Parcel lost"})
    result = team(agent(server, "A"), agent(server, "B"), max_cycles=1)().invoke("x")
    assert [(f.author, f.content) for f in result.output] == [
        ("A", "Parcel lost"),
        ("B", "Parcel lost"),
    ]
    sent = [
        (who(body)[0], body["messages"][-1]["content"])
        for body in server.requests
        if last_tool(body) == "write_finding"
    ]
    assert sent == [("A", "Finding recorded."), ("B", "Finding recorded.")]
    assert store_seen(server, "B", 1) == [{"author": "A", "cycle": 1, "content": "Parcel lost"}]


def test_terminate_when_counts_every_finding_written_repeats_included(
    server: LoopbackServer,
) -> None:
    """Seed: ``terminate_when { |store| store.size >= 20 }``, "evaluated after each completed
    cycle". Both members write the same finding: the store holds 2 after cycle 1, so a
    size >= 2 rule ends the team there."""

    class Team(SharedState):
        members = (agent(server, "A"), agent(server, "B"))
        max_cycles = 3

        def terminate_when(self, store: KnowledgeStore) -> bool:
            return store.size >= 2

    server.handler = members_write(lambda name, cycle: {"content": "Parcel lost"})
    result = Team().invoke("x")
    assert (result["cycles"], result["terminated_by"]) == (1, "terminate_when")
    assert {who(body)[1] for body in server.requests} == {1}


@pytest.mark.parametrize("max_cycles", [None, 1, 3])
def test_the_teams_timeout_is_checked_after_each_full_cycle_never_inside_one(
    server: LoopbackServer, max_cycles: int | None
) -> None:
    """Seed: ``timeout`` is "the maximum wall-clock seconds for the entire invocation", and
    ``invoke`` checks ``Time.now >= deadline`` only after every member of a cycle ran
    (``completed_cycles = cycle`` first). A deadline that passed while cycle 1 ran (this one
    passes at once) lets every member of cycle 1 finish; the team then stops, that cycle
    counted, ``terminated_by: :timeout`` (also when cycle 1 was the last allowed)."""
    server.handler = members_write()
    result = team(agent(server, "A"), agent(server, "B"), timeout=1e-9)(
        max_cycles=max_cycles
    ).invoke("x")
    assert [who(body) for body in server.requests] == [("A", 1)] * 3 + [("B", 1)] * 3
    assert (result["cycles"], result["terminated_by"]) == (1, "timeout")
    assert result.errors == ()
    assert [(f.author, f.cycle) for f in result.output] == [("A", 1), ("B", 1)]


@pytest.mark.parametrize(("converged", "ended_by"), [(True, "terminate_when"), (False, "timeout")])
def test_terminate_when_is_checked_before_the_deadline(
    server: LoopbackServer, converged: bool, ended_by: str
) -> None:
    """Seed: after a cycle, ``if self.class._terminate_when&.call(store)`` comes before ``if
    deadline && Time.now >= deadline``: when both hold, the team ended by terminate_when."""
    seen: list[int] = []

    class Team(SharedState):
        members = (agent(server, "A"),)
        timeout = 1e-9

        def terminate_when(self, store: KnowledgeStore) -> bool:
            seen.append(store.size)
            return converged

    server.handler = members_write()
    result = Team().invoke("x")
    assert (result.cycles, result.terminated_by, seen) == (1, ended_by, [1])


def test_a_turn_still_running_at_the_deadline_finishes_and_its_cycle_counts(
    server: LoopbackServer,
) -> None:
    """Seed: each cycle runs ``self.class._members.each { invoke_researcher(...) }`` to its
    end before ``if deadline && Time.now >= deadline``, so a cycle that started completes.
    B's first answer in cycle 2 comes 2 s late, so the team's 2 s deadline passes during
    B's turn: B still reads, writes and answers, cycle 2 counts, and no cycle 3 starts."""
    A, B = agent(server, "A"), agent(server, "B")
    warm_up(server, A)
    healthy = members_write()

    def reply(body: dict[str, Any]) -> Reply:
        late = who(body) == ("B", 2) and last_tool(body) is None
        return dataclasses.replace(healthy(body), delay=2) if late else healthy(body)

    server.handler = reply
    result = team(A, B, timeout=2)().invoke("x")
    order = [who(body) for body in server.requests]
    assert order == [("A", 1)] * 3 + [("B", 1)] * 3 + [("A", 2)] * 3 + [("B", 2)] * 3
    assert (result["cycles"], result["terminated_by"]) == (2, "timeout")
    assert result.errors == ()
    assert [(f.author, f.cycle) for f in result.output] == [("A", 1), ("B", 1), ("A", 2), ("B", 2)]


def test_member_timeout_not_the_teams_bounds_one_members_turn(server: LoopbackServer) -> None:
    """The team's timeout bounds the invocation between cycles (the seed); one member's turn
    is bounded by its own timeout (``member_timeout`` or ``member(..., timeout=)``). Slow
    answers after 5 s: its 0.5 s cuts it off, and the cycle, complete, counts."""
    healthy = members_write()
    server.handler = lambda body: Reply(delay=5) if who(body)[0] == "Slow" else healthy(body)
    Fast, Slow = agent(server, "Fast"), agent(server, "Slow")
    result = team(Fast, Slow, timeout=1e-9, member_timeout=0.5)().invoke("x")
    assert [who(body) for body in server.requests] == [("Fast", 1)] * 3 + [("Slow", 1)]
    (cut,) = result.errors
    assert (cut.member, cut.cycle, cut.run) == ("Slow", 1, None)
    assert cut.error == (
        "Team: Slow in cycle 1 did not finish within its timeout of 0.5 s; its findings so "
        "far are kept. To give it longer: SharedState.member(..., timeout=...), or the team's "
        "member_timeout"
    )
    assert (result.cycles, result.terminated_by) == (1, "timeout")


def test_the_result_is_a_mapping_whose_first_keys_are_the_seeds(server: LoopbackServer) -> None:
    """Seed: ``invoke`` "Returns: (Hash) +:output+, +:cycles+, +:terminated_by+", e.g.
    ``{ output: {...}, cycles: 3, terminated_by: :max_cycles }``. Here a read-only Mapping
    (those three keys first) that is also a frozen dataclass with typed attributes."""
    server.handler = members_write()
    result = team(agent(server, "A"), max_cycles=2)().invoke("x")
    assert isinstance(result, Mapping)
    assert list(result)[:3] == list(result.keys())[:3] == ["output", "cycles", "terminated_by"]
    as_dict = dict(result)
    assert {key: as_dict[key] for key in ("cycles", "terminated_by")} == {
        "cycles": 2,
        "terminated_by": "max_cycles",
    }
    assert as_dict["output"] is result.output
    assert {**result} == as_dict
    assert len(result) == len(as_dict) == 7
    assert list(result.values()) == [getattr(result, key) for key in result]
    assert ("output" in result, "verdict" in result, result.get("verdict")) == (True, False, None)
    assert dataclasses.is_dataclass(result)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.cycles = 3  # type: ignore[misc]
