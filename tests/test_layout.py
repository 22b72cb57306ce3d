"""The package's layout: no import cycles, no import of another package's private modules.

A module whose name starts with ``_`` (``pytest_harness.tribunal._panel``) or lies in a
private package (``pytest_harness._cassettes.store``) belongs to the package that holds it:
modules of that package (and of its subpackages) import it; every other module goes through
a public namespace (``pytest_harness.tribunal``). The top-level private modules
(``pytest_harness._model.seam``) are shared by the whole package. Each private part of a name
counts: ``pytest_harness._wire._json`` belongs to ``pytest_harness._wire`` alone.

The wire formats (``pytest_harness._wire``) run on every recorded or replayed interaction:
they import the standard library, ``pytest_harness._model.response`` and ``pytest_harness.errors``
only.

The import graph is read from the source (``ast``): every import counts, at module level,
inside functions and under ``TYPE_CHECKING``, because each is a dependency a reader has to
follow. An import of ``pytest_harness.a.b`` is an edge to that module only (its parent
packages are initialised first by Python, whatever imports them).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_harness

pytestmark = pytest.mark.harness(cassette=False)

ROOT = Path(pytest_harness.__file__).parent
PACKAGE = "pytest_harness"

# Private attributes of other libraries' objects, read on purpose (and only these).
FOREIGN_PRIVATE = {
    "_hidden_params": "litellm keeps a response's cost there (the model seam)",
    "_to_dict": "vcrpy's Request serialises itself there (cassettes.store)",
    "_replace": "a NamedTuple's public copy with changes (Settings, for a matrix's copy: _item)",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, ast.Module]:
    return {module_name(path): parse(path.read_text()) for path in ROOT.rglob("*.py")}


def parse(source: str) -> ast.Module:
    """``ast.parse``, once more if CPython 3.11's AST recursion counter was disturbed.

    The counter lives in the interpreter's AST state, shared by all threads (see CPython
    gh-106905): when another thread builds an AST at the same moment (earlier tests leave
    litellm's logging threads behind, and litellm imports lazily, so it compiles),
    ``ast.parse`` raises "SystemError: AST constructor recursion depth mismatch" for a
    source that is fine. Each parse starts the counter afresh, so the second one stands.
    """
    try:
        return ast.parse(source)
    except SystemError:
        return ast.parse(source)


def imports(tree: ast.Module, known: set[str]) -> Iterator[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for every import of the package."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE):
                    yield alias.name, None
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in known:
                    yield submodule, None
                else:
                    yield str(node.module), alias.name


def graph() -> dict[str, set[str]]:
    trees = modules()
    known = set(trees)
    return {
        name: {target for target, _ in imports(tree, known) if target != name}
        for name, tree in trees.items()
    }


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(edges.get(node, ())):
            cycle = visit(target, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(edges):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_the_package_has_no_import_cycle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_another_packages_private_modules() -> None:
    trees = modules()
    found = [
        f"{name} imports {target}"
        for name, tree in trees.items()
        for target in _imported_modules(tree, set(trees))
        if not _may_import(name, target, trees)
    ]
    assert found == []


def test_the_privacy_rule_refuses_a_reach_into_another_package() -> None:
    trees = {name: ast.Module(body=[], type_ignores=[]) for name in ("p", "p.a", "p.a._x", "p.b")}
    assert _may_import("p.a", "p.a._x", trees)  # the package itself
    assert not _may_import("p.b", "p.a._x", trees)  # a sibling package
    assert _may_import("p.b", "p._shared", trees)  # the top level's private modules: everyone's
    assert _may_import("p.a", "p.b", trees)
    trees |= dict.fromkeys(("p._w", "p._w._x", "p._w.y"), trees["p"])
    assert _may_import("p._w.y", "p._w._x", trees)  # a private module, inside its package
    assert not _may_import("p.a", "p._w._x", trees)  # each private part counts, not the first
    assert _may_import("p.a", "p._w.y", trees)


# What the wire formats may import from the package (and the standard library).
WIRE = f"{PACKAGE}._wire"
WIRE_MAY_IMPORT = (WIRE, f"{PACKAGE}._model.response", f"{PACKAGE}.errors")


def test_the_wire_formats_import_only_the_standard_library_and_the_response() -> None:
    found = [
        f"{name} imports {target}"
        for name, tree in modules().items()
        if name == WIRE or name.startswith(WIRE + ".")
        for target in _every_import(tree)
        if not _wire_may_import(target)
    ]
    assert found == []


def _every_import(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or ""  # a relative import (the package uses none) shows as ""


def _wire_may_import(target: str) -> bool:
    top = target.partition(".")[0]
    if top != PACKAGE:
        return top in sys.stdlib_module_names
    return any(target == name or target.startswith(name + ".") for name in WIRE_MAY_IMPORT)


def test_no_module_reads_another_modules_private_attributes() -> None:
    """``x._name`` is read only where ``_name`` is defined, or on ``self`` / ``cls``."""
    found = []
    for name, tree in modules().items():
        own = _defined_names(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner in ("self", "cls") or node.attr in own or node.attr in FOREIGN_PRIVATE:
                continue
            found.append(f"{name}:{node.lineno} reads {ast.unparse(node)}")
    assert found == []


def test_each_public_constant_and_alias_is_defined_once() -> None:
    homes: dict[str, list[str]] = {}
    for name, tree in modules().items():
        for constant in _public_constants(tree):
            homes.setdefault(constant, []).append(name)
    assert {constant: where for constant, where in homes.items() if len(where) > 1} == {}


def test_startup_imports_only_what_registering_the_plugin_needs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import sys

        def pytest_sessionfinish(session):
            loaded = sorted(m for m in sys.modules if m.startswith("pytest_harness"))
            print("LOADED:", ",".join(loaded))
        """
    )
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-s", "--collect-only", "-q")
    assert result.ret == 0
    loaded = ",".join(
        [
            "pytest_harness",
            "pytest_harness._model",
            "pytest_harness._model.env",
            "pytest_harness.hookspecs",
            "pytest_harness.plugin",
        ]
    )
    result.stdout.fnmatch_lines([f"LOADED: {loaded}"])


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    """Every module imports first in a fresh interpreter: no order a cycle would need."""
    names = sorted(n for n in modules() if n != PACKAGE)
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    for name in names:
        subprocess.run([sys.executable, "-c", code, name], check=True, capture_output=True)


def _imported_modules(tree: ast.Module, known: set[str]) -> Iterator[str]:
    for target, _ in imports(tree, known):
        yield target


def _may_import(importer: str, target: str, trees: dict[str, ast.Module]) -> bool:
    """Whether ``importer`` lies inside the package that owns each private part of ``target``."""
    parts = target.split(".")
    here = importer if _is_package(importer, trees) else importer.rpartition(".")[0]
    owners = [".".join(parts[:i]) for i, part in enumerate(parts) if _private(part)]
    return all(here == owner or here.startswith(owner + ".") for owner in owners)


def _is_package(name: str, trees: dict[str, ast.Module]) -> bool:
    return name == PACKAGE or any(other.startswith(name + ".") for other in trees)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_names(tree: ast.Module) -> set[str]:
    """Every name this module defines or assigns (functions, classes, attributes, locals)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _public_constants(tree: ast.Module) -> Iterator[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            continue
        for target in targets:
            alias = isinstance(node, ast.AnnAssign) and "TypeAlias" in ast.unparse(node.annotation)
            if not _private(target) and (target.isupper() or alias) and target != "__all__":
                yield target


def test_module_names_say_one_thing_each() -> None:
    """No two modules share a name (``run.py`` three times meant three things)."""
    trees = modules()
    names: dict[str, list[str]] = {}
    for name in trees:
        leaf = name.rpartition(".")[2].lstrip("_")
        if name != PACKAGE and not _is_package(name, trees):
            names.setdefault(leaf, []).append(name)
    assert {leaf: where for leaf, where in names.items() if len(where) > 1} == {}
