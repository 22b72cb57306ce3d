"""Importing litellm without its import-time warnings failing a ``filterwarnings = error``
suite.
"""

from __future__ import annotations

import importlib.abc
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

# What libraries raise about their own code while it loads; not RuntimeWarning or
# ResourceWarning, which report a real problem in the running process.
IMPORT_WARNINGS: tuple[type[Warning], ...] = (
    DeprecationWarning,
    PendingDeprecationWarning,
    FutureWarning,
    UserWarning,
    SyntaxWarning,
    ImportWarning,
)


def install(package: str) -> None:
    """Silence import-time warnings of ``package`` and its submodules from now on.

    Idempotent: installing the same package twice keeps one finder.

    Args:
        package: a top-level package name, ``"litellm"``.
    """
    if not any(isinstance(f, QuietFinder) and f.package == package for f in sys.meta_path):
        sys.meta_path.insert(0, QuietFinder(package))


def uninstall(package: str) -> None:
    """Stop silencing ``package``'s imports (its modules already loaded stay loaded)."""
    sys.meta_path[:] = [
        f for f in sys.meta_path if not (isinstance(f, QuietFinder) and f.package == package)
    ]


class QuietFinder(importlib.abc.MetaPathFinder):
    """Finds a package's modules with the other finders and wraps their loaders."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] != self.package:
            return None
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or isinstance(finder, QuietFinder) or find_spec is None:
                continue
            spec: ModuleSpec | None = find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and not isinstance(spec.loader, QuietLoader):
                    spec.loader = QuietLoader(spec.loader)
                return spec
        return None


class QuietLoader(importlib.abc.Loader):
    """A module's own loader, executing it with the import-time warnings ignored.

    Every other attribute (``get_resource_reader``, ``get_source``, ...) is the wrapped
    loader's, so ``importlib.resources`` and ``inspect`` work on the module as before.
    """

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        with warnings.catch_warnings():
            for category in IMPORT_WARNINGS:
                warnings.filterwarnings("ignore", category=category)
            self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
