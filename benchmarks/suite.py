"""A user's whole suite replayed, as CI feels it: wall time and peak memory of ``pytest``.

A test project is generated in a temporary directory for each N (N = 100 and 300 tests,
``--quick``: 30), in three variants that run the same application and ask the same
questions. Each test asks the application under test one question (its index in the
text, so every request differs): the application makes 2 calls through one module-level
``openai.OpenAI(...)`` client (``chat.completions.create``: a draft, then a polished
reply), and the answer is judged by 3 judges, majority wins. The model is a
``LoopbackServer`` on 127.0.0.1, which is stopped once everything is recorded: nothing
listens at its URL while the suites are timed.

- **replay**: pytest-harness replaying its cassettes, no flags. Tests take the ``harness``
  fixture and assert ``harness.assert_verdict(ReplyQuality, answer)``: a ``Tribunal`` of
  3 ``Agent`` judges (``model = "openai/loopback"``, ``api_base`` the server's URL, a
  ``{"pass", "reason"}`` schema), ``majority`` with ``may_fail=1``. Recorded once with
  ``--harness-live`` (one cassette per test: 5 interactions).
- **floor**: no cassette plugin at all (``-p no:harness -p no:recording``). The client's
  ``http_client`` is ``openai.DefaultHttpxClient(transport=httpx2.MockTransport(...))``,
  answering each request body with the response recorded for it, from a dict loaded once
  from a JSON file (recorded by running this suite once against the server through a
  recording transport). The judges are 3 plain SDK calls, one after the other, whose JSON
  votes the test counts itself (majority).
- **pytest-recording** (when installed): the floor's test bodies (5 SDK calls per test)
  on the default HTTP transport, every module marked ``pytest.mark.vcr`` and matched on
  method, URL and body (as the harness matches); recorded once with
  ``--record-mode=once``, replayed with ``--record-mode=none`` (``-p no:harness``).

Each variant runs as a fresh ``python -m pytest -p no:cacheprovider -q`` (the other
installed plugins load in every variant alike; the plugin a variant does not use is turned
off with ``-p no:...``), from the project's folder, with ``PYTHONPATH`` the repository
holding this script (each run's conftest writes where ``pytest_harness`` came from; the
script says loudly when it is not this repository), with no API key in the environment
(recording has a dummy ``OPENAI_API_KEY``) and ``LITELLM_LOCAL_MODEL_COST_MAP=True``.
After an untimed warm-up run of each, every round runs each variant at each N once, the
order of the variants reversed every other round. Per run: the wall time from start to
exit, the child's user + system CPU time and its peak memory (max RSS, from
``os.wait4``). A run whose exit code is not 0 or that does not pass exactly N tests is
reported as FAILED, with its output, and not counted. Each run's conftest also writes
whether ``litellm`` was imported by the end of the session.

Reported per N: every round's wall seconds, then the medians (wall, CPU, peak MB), the
ratios replay/floor and pytest-recording/floor and the memory differences with the floor.
``--profile PATH`` also runs one replay at the largest N under ``cProfile`` and prints where
its time goes (the harness's set-up and the cassette's, the app's calls through it, the
tribunal, the litellm import, the teardown) and the top pytest-harness functions, per test.

Run::

    python benchmarks/suite.py [--rounds 5] [--sizes 100,300] [--quick] [--profile PATH]

Targets: replay at most 1.25x the floor's wall time at N=300; replay faster than
pytest-recording's replay; replay's peak memory within +40 MB of the floor's.
The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from tabulate import tabulate

from pytest_harness.testing import LoopbackServer, Reply

REPO = Path(__file__).resolve().parents[1]
SIZES = (100, 300)
QUICK_SIZE = 30
TESTS_PER_MODULE = 50
RATIO_TARGET, RATIO_TARGET_N = 1.25, 300
MEMORY_TARGET_MB = 40.0
TOP_FUNCTIONS = 20
# Where a replay's time goes, for --profile: (label, path ending, function), indented rows
# being part of the row above.
PROFILE_PARTS = (
    ("harness set-up (pytest_runtest_setup)", "harness/plugin.py", "pytest_runtest_setup"),
    ("  cassette opened (CassetteSlot.open)", "_cassettes/slot.py", "open"),
    ("    vcrpy's patchers built, entered (store.patched)", "_cassettes/store.py", "patched"),
    ("    cassette file loaded (store.load)", "_cassettes/store.py", "load"),
    ("    the cassette module and vcrpy imported (once)", "_cassettes/store.py", "<module>"),
    ("app's SDK calls: vcrpy's httpx2 stub", "vcr/stubs/httpx_stubs.py", "_vcr_handle_request"),
    ("tribunal (harness.assert_verdict)", "tribunal/_assertions.py", "assert_verdict"),
    ("  litellm import (_model.lib, once)", "pytest_harness/_model/seam.py", "lib"),
    ("  judges' replayed calls (Agent.acall)", "pytest_harness/_agent.py", "acall"),
    ("  report record (_report.tribunals.record)", "_report/tribunals.py", "record"),
    ("harness teardown (pytest_runtest_teardown)", "harness/plugin.py", "pytest_runtest_teardown"),
)
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
HAS_RECORDING = find_spec("pytest_recording") is not None
VARIANTS = ("replay", "floor", "pytest-recording") if HAS_RECORDING else ("replay", "floor")
ARGS = {  # variant: (folder, extra pytest arguments when it replays)
    "replay": ("harness", ["-p", "no:recording"]),
    "floor": ("floor", ["-p", "no:harness", "-p", "no:recording"]),
    "pytest-recording": ("vcr", ["-p", "no:harness", "--record-mode=none"]),
}
RECORD_ARGS = {
    "replay": ["-p", "no:recording", "--harness-live"],
    "floor": ["-p", "no:harness", "-p", "no:recording"],
    "pytest-recording": ["-p", "no:harness", "--record-mode=once"],
}

# The model's side: the application's two prompts and the judges' instructions.
DRAFT = "You are a support agent for a parcel company. Draft a short reply to the customer."
POLISH = "You are an editor. Rewrite the support reply below to be warm, clear and brief."
JUDGES = {
    "Politeness": "You judge whether a customer support reply is polite.",
    "NextStep": "You judge whether a support reply tells the customer what happens next.",
    "OnTopic": "You judge whether a support reply is about the customer's problem.",
}
VOTE_HINT = 'Answer with JSON only: {"pass": true or false, "reason": "<one sentence>"}.'


def question(index: int) -> str:
    return (
        f"Hello, this is customer {index}. My order {10_000 + index} was due last week and "
        "the tracking page has not changed for five days. Can you tell me where it is and "
        "when it will arrive? I need it before the weekend."
    )


def model_reply(body: dict[str, Any]) -> Reply:
    """The loopback model: a draft, a polished reply, or a judge's vote (JSON)."""
    system = body["messages"][0]["content"]
    number = re.findall(r"order (\d+)", json.dumps(body["messages"]), re.IGNORECASE)[-1]
    if system.startswith(DRAFT):
        return Reply(content=f"Order {number} left our depot yesterday; it arrives Friday.")
    if system.startswith(POLISH):
        return Reply(
            content=f"Thank you for your patience! Your order {number} left our depot "
            "yesterday and will arrive on Friday. Anything else, just ask."
        )
    fails = "what happens next" in system and int(number) % 5 == 0  # a minority dissent
    reason = "no delivery day" if fails else "clear, polite and on topic"
    return Reply(content=json.dumps({"pass": not fails, "reason": reason}))


# The generated project -------------------------------------------------------------------

PYTEST_INI = "[pytest]\npythonpath = .\ntestpaths = tests\n"

APP = '''\
"""The application under test: a support reply, drafted then polished by the model."""

import openai

BASE_URL = {url!r}
client = openai.OpenAI(base_url=BASE_URL, api_key="sk-loopback", max_retries=0{http_client})


def answer(question: str) -> str:
    draft = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {{"role": "system", "content": {draft!r}}},
            {{"role": "user", "content": question}},
        ],
    )
    final = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {{"role": "system", "content": {polish!r}}},
            {{"role": "user", "content": draft.choices[0].message.content}},
        ],
    )
    return final.choices[0].message.content
'''

HARNESS_JUDGES = '''\
"""The tribunal that judges the application's replies."""

from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule

from app import BASE_URL

VOTE = {{
    "type": "object",
    "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
    "required": ["pass", "reason"],
}}


class Judge(Agent):
    model = "openai/loopback"
    params = {{"api_base": BASE_URL}}
    output = VOTE
    temperature = 0
{judges}

class ReplyQuality(Tribunal):
    agents = [{names}]
    timeout = 30

    @rule("majority", may_fail=1)
    def passed(result):
        return result.processed["pass"] is True
'''

PLAIN_JUDGES = '''\
"""Three judges as plain SDK calls; the test counts their JSON votes itself."""

import json

from app import client

JUDGES = {judges!r}
VOTE_HINT = {hint!r}


def vote(instructions: str, reply: str) -> bool:
    completion = client.chat.completions.create(
        model="loopback",
        messages=[
            {{"role": "system", "content": instructions + " " + VOTE_HINT}},
            {{"role": "user", "content": reply}},
        ],
        temperature=0,
    )
    return json.loads(completion.choices[0].message.content)["pass"] is True


def majority(reply: str) -> bool:
    votes = [vote(instructions, reply) for instructions in JUDGES.values()]
    return sum(votes) * 2 > len(votes)
'''

MEMORY = '''\
"""The floor's transport: each request body answered from a dict of recorded responses.

With FLOOR_RECORD set, requests go to the server and their responses are kept instead.
"""

import json
import os
from pathlib import Path

import httpx2

RECORDED = Path(__file__).with_name("responses.json")
SEEN = {}


class Recorder(httpx2.BaseTransport):
    def __init__(self):
        self.inner = httpx2.HTTPTransport()

    def handle_request(self, request):
        response = self.inner.handle_request(request)
        body = response.read()
        headers = [(k, v) for k, v in response.headers.items() if k != "content-encoding"]
        SEEN[request.content.decode()] = (response.status_code, headers, body.decode())
        return httpx2.Response(response.status_code, headers=headers, content=body)


def transport():
    if os.environ.get("FLOOR_RECORD"):
        return Recorder()
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))

    def handle(request):
        status, headers, body = recorded[request.content.decode()]
        return httpx2.Response(status, headers=headers, content=body.encode())

    return httpx2.MockTransport(handle)


def save():
    if os.environ.get("FLOOR_RECORD"):
        RECORDED.write_text(json.dumps(SEEN), encoding="utf-8")
'''

CONFTEST = """\
import json
import sys
from pathlib import Path
{extra_imports}

def pytest_sessionfinish(session):
    harness = sys.modules.get("pytest_harness")
    facts = {{
        "litellm": "litellm" in sys.modules,
        "pytest_harness": getattr(harness, "__file__", None),
    }}
    Path(__file__).with_name("facts.json").write_text(json.dumps(facts))
{extra}"""

VCR_CONFIG = """

@pytest.fixture(scope="module")
def vcr_config():
    return {
        "match_on": ["method", "scheme", "host", "port", "path", "query", "body"],
        "filter_headers": ["authorization"],
    }
"""

HARNESS_TEST = """

def test_reply_{index:04d}(harness):
    reply = answer({question!r})
    harness.assert_verdict(ReplyQuality, reply)
"""

PLAIN_TEST = """

def test_reply_{index:04d}():
    reply = answer({question!r})
    assert majority(reply)
"""


def write_project(root: Path, variant: str, n: int, url: str) -> None:
    """Write one variant's project for N tests into ``root``."""
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text(PYTEST_INI)
    client = ""
    if variant == "floor":
        client = ", http_client=openai.DefaultHttpxClient(transport=memory.transport())"
        (root / "memory.py").write_text(MEMORY)
    app = APP.format(url=url, draft=DRAFT, polish=POLISH, http_client=client)
    if variant == "floor":
        app = app.replace("import openai\n", "import memory\nimport openai\n")
    (root / "app.py").write_text(app)
    extra_imports, extra = "", ""
    if variant == "replay":
        judges = "".join(
            f"\n\nclass {name}(Judge):\n    instructions = {text!r}\n"
            for name, text in JUDGES.items()
        )
        names = ", ".join(JUDGES)
        (root / "judges.py").write_text(HARNESS_JUDGES.format(judges=judges, names=names))
        head, test = "from app import answer\nfrom judges import ReplyQuality\n", HARNESS_TEST
    else:
        (root / "judges.py").write_text(PLAIN_JUDGES.format(judges=JUDGES, hint=VOTE_HINT))
        head, test = "from app import answer\nfrom judges import majority\n", PLAIN_TEST
        if variant == "floor":
            extra_imports = "\nimport memory\n"
            extra = "    memory.save()\n"
        else:
            extra_imports = "\nimport pytest\n"
            head = "import pytest\n\n" + head + "\npytestmark = pytest.mark.vcr\n"
            extra = VCR_CONFIG
    (root / "conftest.py").write_text(CONFTEST.format(extra_imports=extra_imports, extra=extra))
    for start in range(0, n, TESTS_PER_MODULE):
        tests = range(start, min(n, start + TESTS_PER_MODULE))
        body = "".join(test.format(index=i, question=question(i)) for i in tests)
        module = root / "tests" / f"test_replies_{start // TESTS_PER_MODULE:02d}.py"
        module.write_text(f'"""Support replies {tests[0]}-{tests[-1]}."""\n\n{head}{body}')


# Running pytest --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    wall_s: float
    cpu_s: float
    peak_mb: float
    code: int
    output: str

    def passed(self) -> int:
        found = re.search(r"(\d+) passed", self.output)
        return int(found.group(1)) if found else 0

    def ok(self, n: int) -> bool:
        failed = re.search(r"\d+ (failed|errors?)\b", self.output)
        return self.code == 0 and self.passed() == n and failed is None


def environment(recording: bool) -> dict[str, str]:
    """No key (recording: a dummy one), litellm's local cost map, this repository first."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not re.search(r"KEY|TOKEN|SECRET|PASSWORD|PROXY", name, re.IGNORECASE)
        and not name.startswith(("PYTEST", "PYTHON", "OPENAI", "LITELLM", "FLOOR"))
    }
    env.update(PYTHONPATH=str(REPO), LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONHASHSEED="0")
    if recording:
        env.update(OPENAI_API_KEY="sk-dummy", FLOOR_RECORD="1")
    return env


def run_pytest(root: Path, args: list[str], *, recording: bool = False, python: Any = None) -> Run:
    """Run pytest in ``root``: wall and CPU time, peak RSS and output of the child."""
    command = [*(python or PYTEST), *args]
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(
            command, cwd=root, env=environment(recording), stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read().decode(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(
        wall_s=wall, cpu_s=cpu, peak_mb=usage.ru_maxrss / 1024, code=child.returncode, output=output
    )


def loud(what: str, run: Run, n: int) -> None:
    print(
        f"\n!!! FAILED: {what}: exit code {run.code}, {run.passed()} of {n} tests passed.\n"
        + textwrap.indent(run.output[-3000:], "    ")
        + "\n",
        flush=True,
    )


def record(folder: Path, sizes: list[int]) -> dict[int, dict[str, Path]]:
    """Write every variant's project per N and record them all against one loopback server."""
    projects: dict[int, dict[str, Path]] = {}
    with LoopbackServer(handler=model_reply) as server:
        for n in sizes:
            projects[n] = {}
            for variant in VARIANTS:
                root = folder / f"n{n}" / ARGS[variant][0]
                write_project(root, variant, n, server.url)
                run = run_pytest(root, RECORD_ARGS[variant], recording=True)
                print(f"recorded {variant} at N={n} in {run.wall_s:.1f} s", flush=True)
                if not run.ok(n):
                    loud(f"recording {variant} at N={n}", run, n)
                    continue
                projects[n][variant] = root
    return projects


def facts(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "facts.json").read_text()))


def measure(
    projects: dict[int, dict[str, Path]], rounds: int
) -> tuple[dict[tuple[int, str], list[Run]], dict[tuple[int, str], dict[str, Any]]]:
    """Every counted run per (N, variant), and what its conftest saw."""
    runs: dict[tuple[int, str], list[Run]] = {}
    seen: dict[tuple[int, str], dict[str, Any]] = {}
    for roots in projects.values():  # warm-up, not counted
        for variant, root in roots.items():
            run_pytest(root, ARGS[variant][1])
    for round_ in range(rounds):
        order = VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]
        for n, roots in projects.items():
            for variant in order:
                if variant not in roots:
                    continue
                run = run_pytest(roots[variant], ARGS[variant][1])
                if not run.ok(n):
                    loud(f"round {round_ + 1}, {variant} at N={n}", run, n)
                    continue
                runs.setdefault((n, variant), []).append(run)
                seen[n, variant] = facts(roots[variant])
        print(f"round {round_ + 1}/{rounds} done", flush=True)
    return runs, seen


# The report ------------------------------------------------------------------------------


def median(runs: list[Run], field: str) -> float:
    return float(statistics.median(getattr(run, field) for run in runs))


def verdict(ok: bool) -> str:
    return "OK" if ok else "OVER"


def rounds_table(runs: dict[tuple[int, str], list[Run]]) -> list[list[object]]:
    return [
        [n, variant, " ".join(f"{r.wall_s:.2f}" for r in found)]
        for (n, variant), found in sorted(runs.items())
    ]


def summary_rows(runs: dict[tuple[int, str], list[Run]], sizes: list[int]) -> list[list[object]]:
    rows: list[list[object]] = []
    for n in sizes:
        floor = runs.get((n, "floor"))
        for variant in VARIANTS:
            found = runs.get((n, variant))
            if not found:
                rows.append([n, variant, "FAILED"])
                continue
            wall, cpu, peak = (median(found, f) for f in ("wall_s", "cpu_s", "peak_mb"))
            row: list[object] = [n, variant, len(found), wall, cpu, peak]
            if floor and variant != "floor":
                row += [wall / median(floor, "wall_s"), cpu / median(floor, "cpu_s")]
                row.append(peak - median(floor, "peak_mb"))
            rows.append(row)
    return rows


def target_rows(runs: dict[tuple[int, str], list[Run]], sizes: list[int]) -> list[list[object]]:
    rows: list[list[object]] = []
    for n in sizes:
        replay, floor = runs.get((n, "replay")), runs.get((n, "floor"))
        vcr = runs.get((n, "pytest-recording"))
        if not (replay and floor):
            rows.append([n, "replay and floor", "", "", "not measured (a run failed)"])
            continue
        wall = median(replay, "wall_s")
        ratio = wall / median(floor, "wall_s")
        target, ok = f"(<= {RATIO_TARGET}x at N={RATIO_TARGET_N})", ""
        if n == RATIO_TARGET_N:
            target, ok = f"<= {RATIO_TARGET}x", verdict(ratio <= RATIO_TARGET)
        rows.append([n, "replay / floor, wall", f"{ratio:.2f}x", target, ok])
        if vcr:
            theirs = median(vcr, "wall_s")
            row = [n, "replay / pytest-recording, wall", f"{wall / theirs:.2f}x", "< 1x"]
            rows.append([*row, verdict(wall < theirs)])
        extra = median(replay, "peak_mb") - median(floor, "peak_mb")
        row = [
            n,
            "replay peak memory - floor's",
            f"{extra:+.1f} MB",
            f"<= +{MEMORY_TARGET_MB:g} MB",
        ]
        rows.append([*row, verdict(extra <= MEMORY_TARGET_MB)])
    return rows


def profile(root: Path, n: int, path: Path) -> None:
    """One replay under cProfile: where its time goes, and the top pytest-harness functions."""
    python = [sys.executable, "-m", "cProfile", "-o", str(path), "-m", "pytest"]
    run = run_pytest(root, ["-p", "no:cacheprovider", "-q", *ARGS["replay"][1]], python=python)
    if not run.ok(n):
        loud(f"profiled replay at N={n}", run, n)
        return
    stats = pstats.Stats(str(path))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total: float = stats.total_tt  # type: ignore[attr-defined]
    print(f"\nProfile of one replay at N={n}: {total:.2f} s under cProfile, saved to {path}.")
    print("Where it goes (cumulative; indented rows are part of the row above):")
    rows = []
    for label, ending, name in PROFILE_PARTS:
        found = [
            (cum, calls)
            for (file, _, function), (_, calls, _, cum, _) in raw.items()
            if function == name and Path(file).as_posix().endswith(ending)
        ]
        cum, calls = max(found, default=(0.0, 0))
        part = label.replace("  ", "· ")  # tabulate strips leading spaces
        rows.append([part, calls, cum, 1000 * cum / n, 100 * cum / total])
    headers = ["part", "calls", "cum s", "ms per test", "% of run"]
    print(tabulate(rows, headers=headers, floatfmt=".2f"))
    own = [
        (cum, calls, f"{Path(file).name}:{line}({function})")
        for (file, line, function), (_, calls, _, cum, _) in raw.items()
        if f"{os.sep}pytest_harness{os.sep}" in file
    ]
    own.sort(reverse=True)
    print("\nTop pytest-harness functions by cumulative time (nested, so they overlap):")
    rows = [[where, calls, cum, 1000 * cum / n] for cum, calls, where in own[:TOP_FUNCTIONS]]
    print(tabulate(rows, headers=["function", "calls", "cum s", "ms per test"], floatfmt=".2f"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed runs of each variant per N")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="numbers of tests, comma-separated"
    )
    parser.add_argument("--quick", action="store_true", help=f"--sizes {QUICK_SIZE} --rounds 2")
    parser.add_argument("--profile", type=Path, help="also profile one replay at the largest N")
    return parser.parse_args(argv)


def report(
    runs: dict[tuple[int, str], list[Run]],
    seen: dict[tuple[int, str], dict[str, Any]],
    sizes: list[int],
) -> None:
    print("\nWall seconds of every round (in order):")
    print(tabulate(rounds_table(runs), headers=["N", "variant", "wall s per round"]))
    headers = ["N", "variant", "runs", "wall s", "CPU s", "peak MB"]
    headers += ["wall / floor", "CPU / floor", "peak - floor MB"]
    print("\nMedians (CPU: the child's user + system time; peak: its max RSS):")
    print(tabulate(summary_rows(runs, sizes), headers=headers, floatfmt=".2f"))
    print("\nTargets:")
    print(tabulate(target_rows(runs, sizes), headers=["N", "check", "figure", "target", "verdict"]))
    print("\nlitellm imported by the end of the session (the replay should not need it):")
    for (n, variant), found in sorted(seen.items()):
        print(f"  N={n} {variant}: {'YES' if found['litellm'] else 'no'}")
        where = found["pytest_harness"]
        if variant == "replay" and not (where and Path(where).is_relative_to(REPO)):
            print(f"!!! WARNING: pytest_harness was imported from {where}, not from {REPO}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [QUICK_SIZE] if args.quick else [int(s) for s in args.sizes.split(",")]
    rounds = 2 if args.quick else args.rounds
    with os.popen("uptime") as uptime:
        print(f"load: {uptime.read().strip()}; {os.cpu_count()} CPUs")
    if not HAS_RECORDING:
        print("NOTE: pytest-recording is not installed: its column is skipped")
        print("      (pip install pytest-recording to compare with it).")
    with tempfile.TemporaryDirectory(prefix="harness-suite-") as tmp:
        projects = record(Path(tmp), sizes)
        runs, seen = measure(projects, rounds)
        report(runs, seen, sizes)
        if args.profile and "replay" in projects[max(sizes)]:
            profile(projects[max(sizes)]["replay"], max(sizes), args.profile)
    with os.popen("uptime") as uptime:
        print(f"\nload at the end: {uptime.read().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
