"""The keyless page, verbatim, against the real embedded model, then replayed offline.

``docs/guides/keyless.md`` promises that its files and its two commands work as written
on a fresh machine. ``tests/test_docs.py`` runs the page's files against a scripted model;
here they run against the embedded model itself (llama.cpp and Gemma 3 270M), with the
page's own commands: the first records, the second replays with networking disabled
(``unshare -n`` where it works).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.live

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "keyless.md"
FILE = re.compile(r'^```python title="(?P<name>[^"]+)"\n(?P<code>.*?)^```', re.M | re.S)
SECTION = re.compile(r"^## 3\. Record, then replay\n.*?^```sh\n(?P<commands>.*?)^```", re.M | re.S)


def offline_command() -> list[str]:
    """``unshare -n`` (no network at all) when this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], check=False).returncode == 0:
        return [unshare, "-n"]
    return []


def test_the_keyless_page_records_with_the_embedded_model_and_replays_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = PAGE.read_text()
    files = {found["name"]: found["code"] for found in FILE.finditer(text)}
    assert set(files) == {"reviews.py", "test_reviews.py"}
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    section = SECTION.search(text)
    assert section is not None, "the page's section 3 has no sh block"
    record, replay = [shlex.split(line) for line in section["commands"].splitlines()]
    assert record == ["pytest", "--harness-live", "--harness-model=local"]
    assert replay == ["pytest"]
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)

    recorded = subprocess.run(record, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "1 passed" in recorded.stdout
    cassette = tmp_path / "cassettes/test_reviews/test_a_review_gets_one_of_the_two_labels.yaml"
    assert '"endpoint": "local"' in cassette.read_text()

    replayed = subprocess.run(
        [*offline_command(), *replay], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "1 passed" in replayed.stdout
