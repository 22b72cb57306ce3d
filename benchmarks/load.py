"""Loading a 1,000-interaction cassette, as a ratio to ``json.loads`` of the same bytes.

A cassette of 1,000 interactions is recorded in a temporary directory through the real model
seam against a ``LoopbackServer`` on 127.0.0.1 (1,000 distinct prompts of about 1 KB, each
answered ``answer <i>``, as ``replay.py`` records them). A copy in the older format, without
the stored match keys (each interaction's ``match_key``, the file's ``match_keys`` and
``checksum``), shows what a cassette recorded before them costs: its keys are computed as it
loads.

Each round times, for each file, ``store.load(...)`` in replay mode (``none``), which returns
once a request can be matched (the index is built), and ``json.loads`` of the file's text,
one right after the other, and prints both and their ratio; wall time, and the process's CPU
time (less sensitive to other load on a shared machine). The median ratio of the rounds
follows, and the ratio of the fastest time of each (the least disturbed by other load).

Run::

    python benchmarks/load.py [--rounds 15]

Target (issue 29, goal 2): the new format loads within 2x ``json.loads`` of the same bytes.
The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabulate import tabulate

from pytest_harness._cassettes import checksum, read, store
from pytest_harness._cassettes.scrub import Redaction
from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._model.seam import complete
from pytest_harness._pytest_glue import scope
from pytest_harness.testing import LoopbackServer, Reply

SIZE = 1000
TARGET = 2.0

SYSTEM = (
    "You are a careful assistant for a test suite. Answer in one short sentence, in plain "
    "English, without lists, code blocks or markdown. If the question is ambiguous, pick the "
    "most common reading and answer it; never ask a follow-up question. Keep numbers exact, "
    "keep names as given, and do not add any greeting or closing remark. When you do not "
    "know, say so in five words or fewer. Do not mention that you are a model or assistant."
)
USER = (
    "Question #{index}: a customer wrote to support about order {index} and asked whether "
    "the parcel can still be redirected to a neighbour while it is in transit. The order "
    "was placed on a weekday, paid by card, and shipped with the standard carrier from the "
    "central warehouse. The customer also asked whether the delivery window can be moved "
    "to the evening and whether a signature will be needed at the door. Give the answer "
    "the support agent should send back."
)
INDEX = re.compile(r"Question #(\d+):")


def messages(index: int) -> list[dict[str, str]]:
    """The chat messages of prompt ``index``."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER.format(index=index)},
    ]


def answer(body: dict[str, Any]) -> Reply:
    """The loopback server's reply: ``answer <i>`` for prompt ``i``."""
    found = INDEX.search(str(body["messages"][-1]["content"]))
    return Reply(content=f"answer {found.group(1) if found else '?'}")


def record(path: Path, size: int) -> None:
    """Record ``size`` interactions into ``path`` through the model seam."""
    with LoopbackServer(handler=answer) as server:
        slot = CassetteSlot(path=path, mode="all", nodeid="bench", run_id="bench")
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            for index in range(size):
                response = complete(messages(index), model="openai/loopback", **server.params)
                if response.content != f"answer {index}":
                    raise RuntimeError(f"prompt {index} got {response.content!r}")
        if slot.close(keep=True) is None:
            raise RuntimeError(f"nothing was recorded into {path}")


def old_format(path: Path, old: Path) -> None:
    """Write ``path``'s cassette into ``old`` as it was written before keys were stored."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for name in (checksum.MATCH_KEYS, checksum.CHECKSUM):
        data.pop(name)
    for interaction in data["interactions"]:
        interaction.pop(checksum.MATCH_KEY)
    old.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def load(path: Path) -> store.HarnessCassette:
    """The cassette at ``path`` as a replaying test opens it: ready to match a request."""
    cassette = store.load(path, mode="none", ignore=(), redaction=Redaction(), rerecord_hint=str)
    if len(cassette.data) != SIZE:
        raise RuntimeError(f"loaded {len(cassette.data)} interactions from {path}")
    return cassette


def timed(function: Callable[[], object]) -> tuple[float, float]:
    """Wall and process CPU milliseconds of one ``function()``."""
    gc.collect()
    cpu, start = time.process_time(), time.perf_counter()
    function()
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000


def uses_stored_keys(path: Path) -> bool:
    """Whether loading ``path`` takes its match keys from the file."""
    return checksum.stored_keys(read.read(path), (), Redaction().query_params) is not None


def measure(path: Path, rounds: int) -> list[list[float]]:
    """Per round: load ms, json.loads ms, their ratio, and the ratio of their CPU times."""
    text = path.read_text(encoding="utf-8")
    load(path)  # warm-up: imports, caches
    rows = []
    for _ in range(rounds):
        load_wall, load_cpu = timed(lambda: load(path))
        json_wall, json_cpu = timed(lambda: json.loads(text))
        rows.append([load_wall, json_wall, load_wall / json_wall, load_cpu / max(json_cpu, 1e-9)])
    return rows


def report(name: str, path: Path, rows: list[list[float]]) -> float:
    """Print the rounds of one file and its median ratios; return the median wall ratio."""
    size_mb = path.stat().st_size / 1e6
    stored = "stored keys used" if uses_stored_keys(path) else "keys computed on load"
    print(f"{name}: {SIZE} interactions, {size_mb:.2f} MB, {stored}")
    table = [[i, *row] for i, row in enumerate(rows, 1)]
    headers = ["round", "store.load (ms)", "json.loads (ms)", "ratio", "CPU ratio"]
    print(tabulate(table, headers=headers, floatfmt=".2f"))
    wall = statistics.median(row[2] for row in rows)
    cpu = statistics.median(row[3] for row in rows)
    fastest_load, fastest_json = min(row[0] for row in rows), min(row[1] for row in rows)
    print(
        f"median ratio {wall:.2f}x (CPU {cpu:.2f}x); fastest rounds: {fastest_load:.1f} ms and "
        f"{fastest_json:.1f} ms, {fastest_load / fastest_json:.2f}x\n"
    )
    return wall


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="harness-load-") as tmp:
        new, old = Path(tmp) / "new.yaml", Path(tmp) / "old.yaml"
        record(new, SIZE)
        old_format(new, old)
        new_rows, old_rows = measure(new, args.rounds), measure(old, args.rounds)
        ratio = report("new format", new, new_rows)
        report("old format (no stored keys)", old, old_rows)
    verdict = "OK" if ratio <= TARGET else "OVER"
    print(f"target: the new format within {TARGET:.0f}x json.loads: {ratio:.2f}x, {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
