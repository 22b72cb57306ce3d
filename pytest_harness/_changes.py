"""What a re-recording changed: each test's new recording against its previous one.

A recording is read as behaviour, not as JSON bodies: what each model call answered (a
structured reply by its fields), the tool calls made, the verdicts kept, the usage. Two
recordings of a test compare as ``same``, ``changed`` or ``regressed``, each with reasons;
the comparison is made while re-recording (``_pytest_glue.item``) and offline between the
cassettes of the working tree and those at a git ref (``python -m pytest_harness changes``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from pytest_harness import _drift as drift
from pytest_harness._report.text import clip, money, tabulate
from pytest_harness.errors import ConfigError

CHANGE_PROPERTY = "harness_change"  # a change record's JUnit property
BUDGET = 0.25  # harness_change_budget's default: cost or tokens may rise this much
KINDS = ("regressed", "changed", "same")  # most severe first
_NOT_JSON = object()  # a reply that does not parse as JSON
R = TypeVar("R", bound=Mapping[str, Any])  # a change record


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One model call of a recording, as a comparison reads it.

    Attributes:
        caller: ``application`` (its own traffic) or ``harness`` (a judge's, an agent's).
        api: the wire format (``openai.chat``...).
        model: the model that answered, or "".
        system: the system prompt it was sent with (pairs a judge with its counterpart).
        content: what the model said ("" when it said nothing).
        tool_calls: the tool calls it asked for, as ``tool call: name(arguments)``.
        structured: the request asked for a JSON reply.
        schema: the JSON Schema that reply must fit, or None.
        tokens: (prompt, completion) tokens, or None when the reply said none.
        cost: its recorded cost in USD, or None.
        latency_s: its recorded latency, or None.
        request: the digest its request is matched by (``match_key``), or None.
    """

    caller: str
    api: str
    model: str
    system: str = field(repr=False)
    content: str
    tool_calls: tuple[str, ...] = ()
    structured: bool = False
    schema: dict[str, Any] | None = field(default=None, repr=False)
    tokens: tuple[int, int] | None = None
    cost: float | None = None
    latency_s: float | None = None
    request: str | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        """The answer as a diff shows it: its text, then its tool calls, a line each."""
        return "\n".join(filter(None, [self.content, *self.tool_calls]))

    @property
    def reply(self) -> Any:
        """The structured reply parsed (``_NOT_JSON`` when it does not parse)."""
        try:
            return json.loads(self.content)
        except ValueError:
            return _NOT_JSON

    def schema_problem(self) -> str | None:
        """Why a structured reply does not fit what was asked (not JSON, or its schema's
        first error), or None when it fits (or nothing was asked)."""
        if not self.structured:
            return None
        reply = self.reply
        if reply is _NOT_JSON:
            return "it is not JSON"
        if self.schema is None:
            return None
        from pytest_harness._model.structured import schema_error

        return schema_error(self.schema, reply)


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """What one cassette file tells of a test's behaviour.

    Attributes:
        calls: its model calls, in the file's order.
        trajectory: its tool calls, in order, as (name, arguments): those the models asked
            for and those made on MCP servers (``_trajectory.from_interactions``).
        verdicts: its metadata's verdicts, by test (``_drift.entries``).
    """

    calls: tuple[Call, ...] = ()
    trajectory: tuple[tuple[str, Any], ...] = ()
    verdicts: Mapping[str, Any] = field(default_factory=dict)

    def usage(self) -> dict[str, Any]:
        """Model calls, tokens (in, out, total), cost and latency, summed."""
        counted = [call.tokens for call in self.calls if call.tokens is not None]
        costs = [call.cost for call in self.calls if call.cost is not None]
        latencies = [call.latency_s for call in self.calls if call.latency_s is not None]
        prompt, completion = sum(t[0] for t in counted), sum(t[1] for t in counted)
        return {
            "calls": len(self.calls),
            "tokens": prompt + completion,
            "input_tokens": prompt,
            "output_tokens": completion,
            "cost": round(sum(costs), 10) if costs else None,
            "latency_s": round(sum(latencies), 3) if latencies else None,
        }


def read(data: Mapping[str, Any]) -> Recording:
    """The recording a cassette file's data holds (``_cassettes.read.read``)."""
    from pytest_harness._trajectory import from_interactions

    interactions = [i for i in data.get("interactions") or [] if isinstance(i, Mapping)]
    calls = [c for c in map(_call, interactions) if c is not None]
    tools = [(c.name, _arguments(c)) for c in from_interactions(interactions).tool_calls]
    metadata = data.get("metadata")
    kept = metadata.get(drift.METADATA_KEY) if isinstance(metadata, Mapping) else None
    return Recording(
        calls=tuple(calls),
        trajectory=tuple(tools),
        verdicts=kept if isinstance(kept, Mapping) else {},
    )


def _call(interaction: Any) -> Call | None:
    """The model call an interaction holds, or None (not a model reply, or no answer)."""
    from pytest_harness._cassettes import bodies, interactions
    from pytest_harness._wire import read_request

    if not isinstance(interaction, Mapping) or not isinstance(interaction.get("response"), Mapping):
        return None
    found = interactions.recognised(interaction)
    if found is None:
        return None
    asked = read_request(found.api, bodies.body_bytes(interaction["request"].get("body")))
    answer, priced = found.response, interactions.price(interaction)
    harness = interactions.seam(interaction) is not None
    if harness and asked.schema is not None:
        from pytest_harness._local import route

        read_back = route.read_back_recorded(asked.schema, answer)
        if read_back is not None:  # the embedded model's tool call, made as a grammar
            answer, asked = read_back, replace(asked, structured=False, schema=None)
    usage = answer.usage if answer.usage.total_tokens else (priced and priced.usage)
    return Call(
        caller="harness" if harness else "application",
        api=found.api,
        model=found.model,
        system=asked.system,
        content=answer.content or "",
        tool_calls=tuple(map(_said, answer.tool_calls)),
        structured=asked.structured,
        schema=asked.schema,
        tokens=(usage.prompt_tokens, usage.completion_tokens) if usage else None,
        cost=priced.cost if priced else None,
        latency_s=interactions.latency(interaction),
        request=_text_or_none(interaction.get("match_key")),
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _said(tool: Any) -> str:
    """A tool call as an answer shows it: ``tool call: name({"q": "refund"})``."""
    return f"tool call: {tool.name}({tool.raw_arguments})"


def _arguments(tool: Any) -> Any:
    return dict(tool.arguments) if tool.arguments is not None else tool.raw_arguments


# Comparing two recordings.


@dataclass(slots=True, kw_only=True)
class _Findings:
    """What a comparison found, sorted as it goes: regressions and changes, in order."""

    regressed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "regressed" if self.regressed else "changed" if self.changed else "same"


def compare(
    old: Recording | None,
    new: Recording | None,
    *,
    test: str,
    cassette: str,
    tests: Sequence[str] = (),
    outcome: Mapping[str, str] | None = None,
    verdicts: Sequence[Mapping[str, Any]] | None = None,
    budget: float | None = BUDGET,
) -> dict[str, Any]:
    """The change record of ``test`` (its JSON report entry): its kind, the reasons and
    what differs (answers, trajectory, verdicts, usage).

    Args:
        old, new: the previous and the new recording; None when there is none (a new or a
            removed recording).
        tests: every test that recorded into the cassette.
        outcome: ``{"old": ..., "new": ...}`` when known (while re-recording).
        verdicts: the verdict drift rows (``_drift.compare``); None: computed from the
            recordings' kept verdicts.
        budget: how much cost or tokens may rise (0.25: a quarter) before it is a
            regression; None: not judged (a file that only gains recordings).
    """
    record: dict[str, Any] = {"test": test, "tests": list(tests or [test]), "cassette": cassette}
    if old is None or new is None:
        said = "a new recording: nothing to compare with" if old is None else "removed"
        record.update(kind="changed", reasons=[said], new=old is None, removed=new is None)
        record["usage"] = {"old": old and old.usage(), "new": new and new.usage()}
        return record
    found = _Findings()
    if outcome and outcome.get("old") == "passed" and outcome.get("new") == "failed":
        found.regressed.append("the test failed; it passed with its previous recording")
    rows = list(verdicts) if verdicts is not None else _verdict_rows(old, new, test, cassette)
    answers = _answers(old.calls, new.calls, found)
    record.update(
        outcome=dict(outcome) if outcome else None,
        answers=answers,
        trajectory=_trajectory(old.trajectory, new.trajectory, found),
        verdicts=rows,
        usage={"old": old.usage(), "new": new.usage()},
    )
    _verdicts(rows, found)
    _usage(record["usage"], budget, found)
    record.update(kind=found.kind, reasons=found.regressed + found.changed)
    return record


def _verdict_rows(old: Recording, new: Recording, test: str, cassette: str) -> list[Any]:
    rows = []
    for name, entry in new.verdicts.items():
        earlier = old.verdicts.get(name)
        if isinstance(earlier, Mapping) and isinstance(entry, Mapping):
            before, after = earlier.get("runs") or [], entry.get("runs") or []
            rows += drift.flips(before, after, test=name, path=cassette)
    return rows


def _verdicts(rows: Sequence[Mapping[str, Any]], found: _Findings) -> None:
    for row in rows:
        judges = ", ".join(map(drift.judge_change, row.get("judges") or ()))
        said = f" ({judges})" if judges else ""
        if row.get("drift") == "score":
            found.changed.append(f"{row['key']}'s judges' scores moved{said}")
        elif row.get("new") == "fail":
            found.regressed.append(f"{row['key']}'s verdict went {row['old']} -> fail{said}")
        else:
            found.changed.append(f"{row['key']}'s verdict went {row['old']} -> {row['new']}{said}")


def _usage(usage: Mapping[str, Any], budget: float | None, found: _Findings) -> None:
    old, new = usage["old"], usage["new"]
    if old["calls"] != new["calls"]:
        found.changed.append(f"{new['calls']} model calls, {old['calls']} before")
    if budget is None:
        return
    for name, show in (("tokens", str), ("cost", money)):
        before, after = old[name], new[name]
        if before and after is not None and after > before * (1 + budget):
            rise = (after - before) / before
            found.regressed.append(
                f"{name} rose {rise:.0%} ({show(before)} -> {show(after)}), over the "
                f"{budget:.0%} budget (harness_change_budget)"
            )


def _answers(old: Sequence[Call], new: Sequence[Call], found: _Findings) -> list[dict[str, Any]]:
    """Each pair of calls whose answers differ (or a call on one side only); the reasons
    say which, one line per caller and kind of change."""
    shown = []
    moved: dict[tuple[str, str], list[int]] = {}  # (caller, how) -> call numbers
    for number, (before, after) in enumerate(pair(old, new), 1):
        either = after or before
        assert either is not None  # pair never yields two Nones
        how = _how(number, before, after, found)
        if how is not None:
            moved.setdefault((either.caller, how), []).append(number)
            shown.append(_answer(number, before, after))
    found.changed += [_moved(caller, how, numbers) for (caller, how), numbers in moved.items()]
    return shown


def _how(number: int, before: Call | None, after: Call | None, found: _Findings) -> str | None:
    """How a pair of calls differs (``changed``, ``new``, ``gone``), or None; a structured
    reply that stopped fitting its schema is a regression."""
    if before is None:
        return "new"
    if after is None:
        return "gone"
    problem = after.schema_problem()
    if problem is not None and before.schema_problem() is None:
        found.regressed.append(
            f"{after.caller} call {number}: the structured reply no longer fits its schema: "
            f"{problem}"
        )
    return None if before.text == after.text else "changed"


def _moved(caller: str, how: str, numbers: Sequence[int]) -> str:
    """``application call 2: the answer changed``; ``3 harness answers changed (calls 1, 2,
    4)``; ``harness call 5: a new call``; ``2 application calls no longer made (...)``."""
    if len(numbers) == 1:
        said = {"changed": "the answer changed", "new": "a new call", "gone": "no longer made"}
        return f"{caller} call {numbers[0]}: {said[how]}"
    many = {"changed": "answers changed", "new": "calls are new", "gone": "calls no longer made"}
    listed = ", ".join(map(str, numbers[:10])) + (", ..." if len(numbers) > 10 else "")
    return f"{len(numbers)} {caller} {many[how]} (calls {listed})"


def _answer(number: int, before: Call | None, after: Call | None) -> dict[str, Any]:
    either = after or before
    assert either is not None  # pair never yields two Nones
    label = f"{either.caller} call {number} · {either.api}"
    return {
        "caller": either.caller,
        "label": label + (f" · {either.model}" if either.model else ""),
        "old": before and before.text,
        "new": after and after.text,
        "fields": _fields(before, after) if before and after and after.structured else [],
    }


def pair(old: Sequence[Call], new: Sequence[Call]) -> Iterator[tuple[Call | None, Call | None]]:
    """The calls of two recordings paired, in the new recording's order: first each call
    with the next unpaired one that made the same request (the same match key), then with
    one of the same caller and system prompt (judges answer in any order, each with its own
    instructions), then the rest of each caller's in order; a call left over is paired with
    None."""
    taken: set[int] = set()
    pairs: dict[int, int] = {}
    rules: tuple[Callable[[Call], Any], ...] = (
        lambda c: c.request or id(c),  # a call without a key pairs by the other rules
        lambda c: (c.caller, c.api, c.system),
        lambda c: (c.caller,),
    )
    for keyed in rules:
        waiting: dict[Any, list[int]] = {}
        for i, call in enumerate(old):
            if i not in taken:
                waiting.setdefault(keyed(call), []).append(i)
        for j, call in enumerate(new):
            if j not in pairs and waiting.get(keyed(call)):
                pairs[j] = waiting[keyed(call)].pop(0)
                taken.add(pairs[j])
    for j, call in enumerate(new):
        yield (old[pairs[j]] if j in pairs else None), call
    for i, call in enumerate(old):
        if i not in taken:
            yield call, None


def _fields(before: Call, after: Call) -> list[dict[str, Any]]:
    """The fields of two structured replies that differ, by dotted path."""
    old, new = dict(_flat(before.reply)), dict(_flat(after.reply))
    return [
        {"field": path, "old": old.get(path), "new": new.get(path)}
        for path in dict.fromkeys([*old, *new])
        if old.get(path, _NOT_JSON) != new.get(path, _NOT_JSON)
    ]


def _flat(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if value is _NOT_JSON:
        yield (path or "(reply)", "(not JSON)")
    elif isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _flat(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _flat(item, f"{path}[{index}]")
    else:
        yield (path or "(reply)", value)


def _trajectory(
    old: Sequence[tuple[str, Any]], new: Sequence[tuple[str, Any]], found: _Findings
) -> dict[str, Any]:
    """Tools added and removed, their order, arguments changed (the k-th call of a tool
    against its k-th call before)."""
    before, after = [name for name, _ in old], [name for name, _ in new]
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    found.regressed += [f"the tool {name} is no longer called" for name in removed]
    found.regressed += [f"a new tool is called: {name}" for name in added]
    common = set(before) & set(after)
    reordered = [n for n in before if n in common] != [n for n in after if n in common]
    if reordered:
        found.changed.append("the tools are called in another order")
    elif Counter(before) != Counter(after) and not (added or removed):
        found.changed.append("the tools are called another number of times")
    arguments = list(_arguments_changed(old, new))
    found.changed += [f"{a['tool']}'s arguments changed (call {a['call']})" for a in arguments]
    return {
        "old": [{"name": name, "arguments": args} for name, args in old],
        "new": [{"name": name, "arguments": args} for name, args in new],
        "added": added,
        "removed": removed,
        "reordered": reordered,
        "arguments": arguments,
    }


def _arguments_changed(
    old: Sequence[tuple[str, Any]], new: Sequence[tuple[str, Any]]
) -> Iterator[dict[str, Any]]:
    earlier: dict[str, list[Any]] = {}
    for name, args in old:
        earlier.setdefault(name, []).append(args)
    seen: Counter[str] = Counter()
    for name, args in new:
        seen[name] += 1
        before = earlier.get(name, [])
        if seen[name] <= len(before) and before[seen[name] - 1] != args:
            yield {"tool": name, "call": seen[name], "old": before[seen[name] - 1], "new": args}


# Showing them.


def ordered(records: Iterable[R]) -> list[R]:
    """Regressed first, then changed, then same; by test within each."""
    return sorted(records, key=lambda r: (KINDS.index(r["kind"]), r["test"]))


def tally(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many records of each kind, a new recording counted apart from the changed:
    ``{"regressed": 1, "changed": 2, "same": 5, "new": 3}``."""
    records = list(records)
    kinds = Counter("new" if r.get("new") else r["kind"] for r in records)
    return {kind: kinds[kind] for kind in (*KINDS, "new")}


def counts(records: Iterable[Mapping[str, Any]]) -> str:
    """``1 regressed · 2 changed · 5 same`` (``· 3 new`` when there are new recordings)."""
    return " · ".join(f"{n} {kind}" for kind, n in tally(records).items() if n or kind != "new")


def changes_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The terminal section: each regressed test, then each changed one, with its reasons
    (a new recording only counted); then the counts."""
    records = by_cassette(records)
    shown = [r for r in ordered(records) if r["kind"] != "same" and not r.get("new")]
    rows = [[r["test"], r["kind"], "\n".join(clip(s, 100) for s in r["reasons"])] for r in shown]
    table = tabulate(rows, headers=["test", "kind", "reasons"]) + "\n" if rows else ""
    return table + counts(records)


def by_cassette(records: Sequence[R]) -> list[R]:
    """One record per cassette: of a cassette several tests recorded into, the one that
    compares the most calls (made last: the file grows as a run records into it), naming
    them all."""
    kept: dict[str, Any] = {}
    for record in records:
        earlier = kept.get(record["cassette"])
        tests = [*(earlier or {}).get("tests", []), *record.get("tests", [])]
        chosen = record if earlier is None or _calls(record) >= _calls(earlier) else earlier
        kept[record["cassette"]] = {**chosen, "tests": list(dict.fromkeys(tests))}
    return list(kept.values())


def _calls(record: Mapping[str, Any]) -> int:
    new = (record.get("usage") or {}).get("new") or {}
    return int(new.get("calls") or 0)


def junit_property(record: Mapping[str, Any]) -> tuple[str, str]:
    return (CHANGE_PROPERTY, json.dumps(record, sort_keys=True, default=str))


# Offline: the working tree's cassettes against those at a git ref.


def between(
    base: str, paths: Sequence[Path], *, budget: float = BUDGET, cwd: Path | None = None
) -> list[dict[str, Any]]:
    """The change record of every cassette under ``paths`` (files or folders): as the
    working tree holds it against as the commit ``base`` held it.

    Raises:
        ConfigError: not in a git repository, ``base`` names no commit, or a path is
            neither in the working tree nor at ``base``.
        CassetteError: a cassette that cannot be read (naming it, and the ref).
    """
    from pytest_harness._cassettes.read import parse
    from pytest_harness._cassettes.slot import SUFFIX

    here = (cwd or Path.cwd()).resolve()
    top = Path(_git(here, "rev-parse", "--show-toplevel").decode().strip())
    try:
        _git(here, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    except ConfigError:
        raise ConfigError(
            f"--base {base} names no commit of this repository: name a branch, a tag or a "
            "commit (origin/main, HEAD~1); a repository with no commit yet has nothing to "
            "compare with"
        ) from None
    before = _at_ref(here, top, base, paths)
    after = _in_tree(here, top, paths)
    if not before and not after:
        shown = ", ".join(map(str, paths))
        raise ConfigError(
            f"no cassette (*{SUFFIX}) under {shown}, in the working tree or at {base}"
        )
    records = []
    for name in sorted(before.keys() | after.keys()):
        old = read(parse(before[name], Path(f"{base}:{name}"))) if name in before else None
        new = read(parse(after[name], top / name)) if name in after else None
        tests = _tests(new, old) or [name]
        records.append(compare(old, new, test=tests[0], cassette=name, tests=tests, budget=budget))
    return ordered(records)


def _tests(*recordings: Recording | None) -> list[str]:
    """The tests a cassette's verdicts name (the first recording that names any)."""
    for recording in recordings:
        if recording is not None and recording.verdicts:
            return sorted(recording.verdicts)
    return []


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    import subprocess

    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False
        )
    except OSError as error:
        raise ConfigError(
            f"git could not be run ({error}): install git, or run it in a repository"
        ) from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
        raise ConfigError(
            f"git {' '.join(args)} failed: {said}. Run it inside a git repository, "
            "with --base naming a commit (a branch, a tag, HEAD~1)"
        )
    return done.stdout


def _at_ref(cwd: Path, top: Path, base: str, paths: Sequence[Path]) -> dict[str, bytes]:
    """Every cassette under ``paths`` at ``base``: its path from the top, its bytes."""
    from pytest_harness._cassettes.slot import SUFFIX

    specs = [str(path) for path in paths]
    listed = _git(cwd, "ls-tree", "-r", "-z", "--full-name", "--name-only", base, "--", *specs)
    names = [n for n in listed.decode().split("\0") if n.endswith(SUFFIX)]
    if not names:
        return {}
    batch = _git(cwd, "cat-file", "--batch", stdin="".join(f"{base}:{n}\n" for n in names).encode())
    files, at = {}, 0
    for name in names:
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        files[name] = batch[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1  # the content, then a newline
    return files


def _in_tree(cwd: Path, top: Path, paths: Sequence[Path]) -> dict[str, bytes]:
    """Every cassette under ``paths`` in the working tree: its path from the top, its bytes."""
    from pytest_harness._cassettes.slot import SUFFIX

    found = {}
    for path in paths:
        where = (cwd / path).resolve()
        files = [where] if where.is_file() else sorted(where.rglob(f"*{SUFFIX}"))
        for file in files:
            found[file.relative_to(top).as_posix()] = file.read_bytes()
    return found
