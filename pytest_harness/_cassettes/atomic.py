"""Writing a file safely: an atomic replace, and where a file's lock lives.

A crash leaves either the old file or the new one. Every writer of a cassette, and a reader
that waits for them, takes the lock ``lock_path`` names (in the system's temp folder, so
that no lock file sits beside the cassettes).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a crash leaves either the old file or the new one.

    The file gets the mode any new file gets, 0666 less the umask (0644 usually), as a file
    checked out of git has; ``tempfile.mkstemp``'s 0600 would pass to the file put in place.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = _new_file(path)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _new_file(path: Path) -> tuple[int, Path]:
    """A new empty file beside ``path`` (0666 less the umask), named as no other writer's."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temporary = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
        with contextlib.suppress(FileExistsError):
            return os.open(temporary, flags, 0o666), temporary


def lock_path(path: Path) -> str:
    """Where the lock of ``path`` lives: the system's temp folder, never beside the file."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / "pytest-harness-locks"
    folder.mkdir(exist_ok=True)
    return str(folder / f"{digest}.lock")
