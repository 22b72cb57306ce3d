"""The documentation site, built (``mkdocs build --strict``) and opened in headless Chromium.

``tox -e docs`` builds the site and names it in ``DOCS_SITE``; without it the site is built
here, into a temporary folder, which needs the ``docs`` extra: where MkDocs is missing (the
plain test envs) these tests are skipped, saying so. The pages are opened from their files,
offline (``browser``): a page that logs an error, fails a load or asks for anything beyond
its own files fails. The reference pages are checked against the code they come from: the
plugin's options, ini keys and markers, each namespace's ``__all__``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import struct
import subprocess
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import ARTIFACTS, Browser, Node, needs_chromium, parse

from pytest_harness import testing

ROOT = Path(__file__).resolve().parent.parent
DOCS_EXTRA = ("mkdocs", "material", "mkdocstrings")
TABS = ["Home", "Getting started", "Guides", "Migration notes", "Reference"]
# Each API page and the namespace it documents.
NAMESPACES = {
    "index": "pytest_harness",
    **{
        name: f"pytest_harness.{name}"
        for name in (
            "errors",
            "tribunal",
            "orchestrator",
            "team",
            "calibration",
            "judges",
            "datasets",
            "strategies",
            "testing",
            "hookspecs",
        )
    },
}
GUIDES = {
    "keyless": "No API key",
    "response-checks": "Response checks",
    "cassettes": "Cassettes and application traffic",
    "providers": "Providers (Bedrock, Azure, Vertex AI, Ollama)",
    "rerecording": "Re-recording: see what changed",
    "embedded-model": "The embedded model",
    "tribunals": "Judges and tribunals",
    "trustworthy-evaluation": "Evaluation you can trust",
    "datasets": "Datasets of cases",
    "judges": "Ready-made judges",
    "model-matrix": "A model matrix",
    "orchestrator": "Agents and the orchestrator",
    "agents": "Agents on any framework",
    "mcp": "MCP tools",
    "replay-tools": "Tools and MCP servers in replay",
    "teams": "Teams and scenarios",
    "simulated-users": "Simulated users",
    "property-tests": "Property tests",
    "reports": "Reports",
    "ci": "xdist and CI",
}
# The site's pages, in the order of the navigation (mkdocs.yml's nav).
NAVIGATION = [
    ("Home", "index.html"),
    ("Getting started", "getting-started.html"),
    *((name, f"guides/{page}.html") for page, name in GUIDES.items()),
    ("Migration notes", "migration.html"),
    ("Options", "reference/options.html"),
    ("Ini keys", "reference/ini.html"),
    ("Markers", "reference/markers.html"),
    *((name, f"reference/api/{page}.html") for page, name in NAMESPACES.items()),
    ("Cassette files", "reference/cassette-files.html"),
    ("Architecture", "reference/architecture.html"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site: ``DOCS_SITE`` (tox -e docs built it), else built here, strictly."""
    given = os.environ.get("DOCS_SITE")
    if given:
        return Path(given)
    missing = [name for name in DOCS_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"the docs extra is not installed (no {', '.join(missing)}): "
            "pip install 'pytest-harness[docs]', or run tox -e docs"
        )
    folder = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if built.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{built.stdout}{built.stderr}", pytrace=False)
    return folder


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    with Browser(tmp_path) as running:
        yield running


def open_page(browser: Browser, page: Path, shot: str) -> Node:
    """Open ``page``; it must load offline, cleanly, and paint something. Its DOM, parsed."""
    browser.open(page)
    assert browser.errors == []
    assert browser.external_requests == []
    picture = browser.screenshot(ARTIFACTS / shot)
    assert not blank(picture.read_bytes()), f"{page} painted nothing: see {picture}"
    return parse(browser.dom())


@needs_chromium
def test_the_home_page_opens_offline_with_its_navigation(site: Path, browser: Browser) -> None:
    dom = open_page(browser, site / "index.html", "docs-home.png")

    assert [text(link) for link in dom.find_all("a", "md-tabs__link")] == TABS
    assert pages(dom.find("nav", "md-nav--primary")) == NAVIGATION
    article = dom.find("article")
    links = {link.attrs.get("href") for link in article.find_all("a")}
    assert {"getting-started.html", "reference/options.html", "reference/api/index.html"} <= links


@needs_chromium
def test_an_api_page_opens_offline_and_documents_its_namespace(
    site: Path, browser: Browser
) -> None:
    page = site / "reference" / "api" / "testing.html"
    dom = open_page(browser, page, "docs-api-testing.png")

    assert text(dom.find("h1")) == "pytest_harness.testing"
    navigation = dom.find("nav", "md-nav--primary")
    assert [name for name, _ in pages(navigation)] == [name for name, _ in NAVIGATION]
    active = [text(link) for link in navigation.find_all("a", "md-nav__link--active")]
    assert active == ["pytest_harness.testing"]
    assert text(dom.find("li", "md-tabs__item--active")) == "Reference"
    assert members(page, "pytest_harness.testing") == sorted(testing.__all__)


@pytest.mark.parametrize("page", sorted(NAMESPACES))
def test_an_api_page_lists_exactly_what_its_namespace_exports(site: Path, page: str) -> None:
    """Whatever private module a name comes from; nothing that ``__all__`` leaves out."""
    name = NAMESPACES[page]
    exported = getattr(importlib.import_module(name), "__all__", None)
    if exported is None:  # a plain module (hookspecs): its public names, none private
        html = (site / "reference" / "api" / f"{page}.html").read_text(encoding="utf-8")
        assert f'id="{name}.' in html
        assert f'id="{name}._' not in html
        return
    assert members(site / "reference" / "api" / f"{page}.html", name) == sorted(exported)


def test_the_reference_tables_list_what_pytest_lists(site: Path, tmp_path: Path) -> None:
    """Each table's rows, in order: the harness's options and ini keys as ``pytest --help``
    shows them (each with its help), the markers the plugin adds to ``pytest --markers``."""
    help_text = pytest_output(tmp_path, "--help")
    listed = {
        "options": re.findall(r"^  --(harness-[\w-]+)", help_text, re.M),
        "ini": re.findall(r"^  (harness_\w+) \(", help_text, re.M),
        "markers": [
            name
            for name in markers(pytest_output(tmp_path, "--markers"))
            if name not in markers(pytest_output(tmp_path, "-p", "no:harness", "--markers"))
        ],
    }
    shown = "".join(help_text.split())  # as wrapped: no spaces
    for page, names in listed.items():
        dom = parse((site / "reference" / f"{page}.html").read_text(encoding="utf-8"))
        rows = dom.find("article").find("table").find("tbody").find_all("tr")
        assert [row.find("span").attrs["id"] for row in rows] == names, page
        if page != "markers":  # a marker's help has code spans where --markers has backticks
            for row in rows:
                assert "".join(row.find_all("td")[-1].text.split()) in shown


def pytest_output(folder: Path, *args: str) -> str:
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, check=True).stdout


def markers(listing: str) -> list[str]:
    """The marker names of ``pytest --markers``."""
    return re.findall(r"^@pytest\.mark\.(\w+)", listing, re.M)


@needs_chromium
@pytest.mark.parametrize("page", ["options", "ini"])
def test_a_reference_table_shows_each_name_on_one_line(
    site: Path, browser: Browser, page: str
) -> None:
    """``--harness-record={none,new,all}`` reads whole, never broken inside a name."""
    open_page(browser, site / "reference" / f"{page}.html", f"docs-{page}.png")
    lines = browser.evaluate(
        "[...document.querySelectorAll('article tbody tr td:first-child code')]"
        ".map(code => code.getClientRects().length)"
    )
    assert lines, page
    assert set(lines) == {1}, lines


def generated_pages() -> list[Path]:
    """The pages that are placeholders until the build fills them in."""
    placeholder = re.compile(r"^(::: pytest_harness|<!-- reference: )", re.M)
    pages = sorted((ROOT / "docs").rglob("*.md"))
    return [page for page in pages if placeholder.search(page.read_text(encoding="utf-8"))]


def test_a_generated_page_says_so_where_it_is_read_unbuilt() -> None:
    """On a code host the page is its placeholder: its note says what the build puts there,
    how to read the same unbuilt, and how to build it; its links point at files that exist."""
    pages = generated_pages()
    assert len(pages) == len(NAMESPACES) + 3  # the API pages; options, ini keys, markers
    for page in pages:
        text = page.read_text(encoding="utf-8")
        note = re.search(r"^<!-- unbuilt\b.*?\n(?P<note>.*?)^<!-- /unbuilt -->$", text, re.M | re.S)
        assert note is not None, page
        said = " ".join(line.removeprefix(">") for line in note["note"].splitlines())
        assert said.split()[:4] == ["[!NOTE]", "**Generated", "page.**", "The"], page
        assert "`tox -e docs`" in said, page
        assert re.search(r"`python -m pydoc [\w.]+`|`pytest --(help|markers)`", said), page
        for link in re.findall(r"\]\(([^)]+)\)", said):
            assert (page.parent / link).resolve().is_file(), (page, link)


def test_the_built_pages_leave_the_unbuilt_note_out(site: Path) -> None:
    for page in generated_pages():
        relative = page.relative_to(ROOT / "docs").with_suffix(".html")
        html = (site / relative).read_text(encoding="utf-8")
        assert "Generated page" not in html, relative
        assert "[!NOTE]" not in html, relative


def text(node: Node) -> str:
    """The node's text in one line, without a heading's permalink sign."""
    return " ".join(node.text.replace("\u00b6", "").split())


def pages(navigation: Node) -> list[tuple[str, str]]:
    """The pages a navigation links to (not the anchors of the page's own contents)."""
    links = navigation.find_all("a", "md-nav__link")
    return [(text(a), a.attrs["href"]) for a in links if not a.attrs["href"].startswith("#")]


def members(page: Path, namespace: str) -> list[str]:
    """The names documented directly under ``namespace`` on an API page, sorted."""
    dom = parse(page.read_text(encoding="utf-8"))
    ids = [node.attrs["id"] for node in dom.find("article").find_all() if "id" in node.attrs]
    prefix = namespace + "."
    return sorted(
        {i[len(prefix) :] for i in ids if i.startswith(prefix) and "." not in i[len(prefix) :]}
    )


def blank(png: bytes) -> bool:
    """Whether a PNG screenshot is (nearly) one colour: the page painted nothing."""
    _, _, channels, rows = decode_png(png)
    step = channels * 5  # every fifth pixel of every fifth row is plenty
    colours = Counter(row[i : i + channels] for row in rows[::5] for i in range(0, len(row), step))
    most = colours.most_common(1)[0][1]
    return len(colours) < 16 or most > 0.98 * sum(colours.values())


def decode_png(png: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes per pixel and rows of an 8-bit RGB(A) PNG (Chromium's)."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    at, data, header = 8, b"", b""
    while at < len(png):
        size, kind = struct.unpack(">I4s", png[at : at + 8])
        body = png[at + 8 : at + 8 + size]
        at += 12 + size
        header = body if kind == b"IHDR" else header
        data += body if kind == b"IDAT" else b""
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, colour, interlace) in ((8, 2, 0), (8, 6, 0)), "not an 8-bit RGB(A) PNG"
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(data), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = unfilter(
            raw[start], bytearray(raw[start + 1 : start + 1 + stride]), previous, channels
        )
        rows.append(bytes(row))
        previous = row
    return width, height, channels, rows


def unfilter(kind: int, row: bytearray, above: bytearray, channels: int) -> bytearray:
    """Undo one scanline's PNG filter: none, sub, up, average or Paeth (0 to 4)."""
    if kind == 0:
        return row
    if kind == 2:
        return bytearray((a + b) & 255 for a, b in zip(row, above, strict=True))
    for i in range(len(row)):
        left = row[i - channels] if i >= channels else 0
        corner = above[i - channels] if i >= channels else 0
        row[i] = (row[i] + predict(kind, left, above[i], corner)) & 255
    return row


def predict(kind: int, left: int, up: int, corner: int) -> int:
    """What a PNG filter predicts a byte from its decoded neighbours."""
    if kind in (0, 1, 2):
        return (0, left, up)[kind]
    if kind == 3:
        return (left + up) >> 1
    guess = left + up - corner  # Paeth: the neighbour nearest the guess, ties in this order
    return min(
        (abs(guess - left), 0, left), (abs(guess - up), 1, up), (abs(guess - corner), 2, corner)
    )[2]


def test_blank_tells_a_painted_page_from_an_empty_one() -> None:
    white = [b"\xff" * 3 * 40] * 40
    assert blank(png(white))
    painted = [bytes((x * 7 + y * y * 3) % 256 for x in range(120)) for y in range(40)]
    assert not blank(png(painted))
    assert decode_png(png(painted))[3] == painted  # rows filtered with each of the 5 filters


def png(rows: list[bytes]) -> bytes:
    """An RGB PNG of ``rows``, the rows filtered in turn with each of PNG's five filters."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", 0)

    filtered, above = b"", bytes(len(rows[0]))
    for y, row in enumerate(rows):
        kind = y % 5
        left = [row[i - 3] if i >= 3 else 0 for i in range(len(row))]
        corner = [above[i - 3] if i >= 3 else 0 for i in range(len(row))]
        guesses = [predict(kind, *near) for near in zip(left, above, corner, strict=True)]
        filtered += bytes([kind]) + bytes((b - g) & 255 for b, g in zip(row, guesses, strict=True))
        above = row
    header = struct.pack(">IIBBBBB", len(rows[0]) // 3, len(rows), 8, 2, 0, 0, 0)
    signature = b"\x89PNG\r\n\x1a\n"
    return signature + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(filtered))
