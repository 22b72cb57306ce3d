"""AWS's binary event-stream framing (``application/vnd.amazon.eventstream``), as Bedrock's
streaming operations send it: ``decode`` reads a body into its frames, ``encode`` writes
them back byte for byte.

A frame: a 12-byte prelude (total length, headers length, both big-endian uint32, and the
CRC32 of those 8 bytes), its headers (a 1-byte name length, the name, a 1-byte type, the
value), its payload, and the CRC32 of everything before it. The ten header types of
``botocore.eventstream`` are read and written (booleans, integers, bytes, strings,
timestamps, UUIDs); botocore is the reference, not a dependency.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# The content type of an event-stream body.
CONTENT_TYPE = "application/vnd.amazon.eventstream"

_PRELUDE = struct.Struct(">III")
_PRELUDE_LENGTH = _PRELUDE.size  # total length, headers length, prelude CRC
_CRC_LENGTH = 4
# Header value types: the struct format of those of a fixed size (0 and 1 have no value).
_FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}
_TRUE, _FALSE, _BYTES, _STRING, _UUID = 0, 1, 6, 7, 9


@dataclass(frozen=True, slots=True)
class Header:
    """One header of a frame.

    Attributes:
        name: its name (``:event-type``, ``:message-type``...).
        type: its wire type, 0 to 9 (7: a string, the usual one).
        value: a ``bool`` (types 0 and 1), ``int`` (2 to 5, and 8: a timestamp in ms),
            ``bytes`` (6, and 9: a 16-byte UUID) or ``str`` (7).
    """

    name: str
    type: int
    value: bool | int | bytes | str


@dataclass(frozen=True, slots=True)
class Frame:
    """One event-stream message: its headers in their order, and its payload."""

    headers: tuple[Header, ...]
    payload: bytes

    def header(self, name: str) -> str | None:
        """The value of the string header ``name``, or None (absent, or not a string)."""
        found = next((h.value for h in self.headers if h.name == name), None)
        return found if isinstance(found, str) else None


def decode(data: bytes) -> list[Frame] | None:
    """The frames of an event-stream body, or None when it is not one whole: a frame cut
    short, a length that does not add up, a CRC that does not match, a header of an
    unknown type or whose name or string is not UTF-8. Never raises."""
    if not isinstance(data, (bytes, bytearray)):
        return None
    frames: list[Frame] = []
    view, at = memoryview(bytes(data)), 0
    while at < len(view):
        found = _frame(view[at:])
        if found is None:
            return None
        frame, length = found
        frames.append(frame)
        at += length
    return frames


def encode(frames: Iterable[Frame]) -> bytes:
    """The bytes of ``frames``: ``decode``'s exact inverse.

    Raises:
        ValueError: a header that cannot be written (a name over 255 bytes, a value not of
            its type, or out of its type's range).
    """
    return b"".join(_frame_bytes(frame) for frame in frames)


def _frame(data: memoryview) -> tuple[Frame, int] | None:
    """The first frame of ``data`` and its length, or None when it is damaged or cut."""
    if len(data) < _PRELUDE_LENGTH + _CRC_LENGTH:
        return None
    total, headers_length, prelude_crc = _PRELUDE.unpack_from(data)
    payload_end = total - _CRC_LENGTH
    if total > len(data) or _PRELUDE_LENGTH + headers_length > payload_end:
        return None
    if zlib.crc32(data[:8]) != prelude_crc:
        return None
    if zlib.crc32(data[:payload_end]) != int.from_bytes(data[payload_end:total], "big"):
        return None
    headers = _headers(bytes(data[_PRELUDE_LENGTH : _PRELUDE_LENGTH + headers_length]))
    if headers is None:
        return None
    return Frame(headers, bytes(data[_PRELUDE_LENGTH + headers_length : payload_end])), total


def _headers(data: bytes) -> tuple[Header, ...] | None:
    found: list[Header] = []
    at = 0
    try:
        while at < len(data):
            size = data[at]
            name = data[at + 1 : at + 1 + size].decode("utf-8")
            kind = data[at + 1 + size]
            value, at = _value(data, kind, at + 2 + size)
            found.append(Header(name, kind, value))
    except (IndexError, UnicodeDecodeError, struct.error, ValueError):
        return None
    return tuple(found) if at == len(data) else None


def _value(data: bytes, kind: int, at: int) -> tuple[bool | int | bytes | str, int]:
    """A header value of type ``kind`` at ``at``, and where the next header starts.

    Raises:
        ValueError: an unknown type, or a value cut short.
        IndexError, struct.error, UnicodeDecodeError: as the bytes give them.
    """
    if kind in (_TRUE, _FALSE):
        return kind == _TRUE, at
    if kind in _FIXED:
        fixed = struct.Struct(_FIXED[kind])
        return fixed.unpack_from(data, at)[0], at + fixed.size
    if kind == _UUID:
        end = at + 16
    elif kind in (_BYTES, _STRING):
        end = at + 2 + int.from_bytes(data[at : at + 2], "big")
        at += 2
    else:
        raise ValueError(f"unknown header type {kind}")
    if end > len(data):
        raise ValueError("header value cut short")
    raw = data[at:end]
    return (raw.decode("utf-8") if kind == _STRING else raw), end


def _frame_bytes(frame: Frame) -> bytes:
    headers = b"".join(map(_header_bytes, frame.headers))
    total = _PRELUDE_LENGTH + len(headers) + len(frame.payload) + _CRC_LENGTH
    head = struct.pack(">II", total, len(headers))
    body = head + struct.pack(">I", zlib.crc32(head)) + headers + bytes(frame.payload)
    return body + struct.pack(">I", zlib.crc32(body))


def _header_bytes(header: Header) -> bytes:
    name = header.name.encode("utf-8")
    if len(name) > 255:
        raise ValueError(f"a header name is at most 255 bytes, got {len(name)}")
    return bytes([len(name)]) + name + bytes([header.type]) + _value_bytes(header)


def _value_bytes(header: Header) -> bytes:
    kind, value = header.type, header.value
    try:
        if kind in (_TRUE, _FALSE) and value is (kind == _TRUE):
            return b""
        if kind in _FIXED and type(value) is int:
            return struct.pack(_FIXED[kind], value)
        if kind == _UUID and isinstance(value, bytes) and len(value) == 16:
            return value
        raw = _variable(kind, value)
    except struct.error as error:
        raise ValueError(f"header {header.name!r}: {error}") from None
    if raw is None or len(raw) > 0xFFFF:
        raise ValueError(f"header {header.name!r}: {value!r:.40} is no value of type {kind}")
    return len(raw).to_bytes(2, "big") + raw


def _variable(kind: int, value: Any) -> bytes | None:
    if kind == _STRING and isinstance(value, str):
        return value.encode("utf-8")
    if kind == _BYTES and isinstance(value, bytes):
        return value
    return None
