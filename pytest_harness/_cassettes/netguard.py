"""The network guard: in replay mode, tests run offline.

While a guard is installed, ``socket.connect`` to an internet address raises
``NetworkBlocked`` unless the host is allowed (``harness_allow_hosts``; loopback only when
listed). It sits below every client library, so it covers calls made outside litellm too;
each refusal is also remembered, so a library that swallows the error still fails the test.
Unix sockets and socket pairs are never touched.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from typing import Any

from pytest_harness.errors import NetworkBlocked

_LOOPBACK_ALIASES = {"localhost": ("127.0.0.1", "::1", "localhost")}
_lock = threading.Lock()
_active: NetworkGuard | None = None
_original_connect = socket.socket.connect
_original_connect_ex = socket.socket.connect_ex


class NetworkGuard:
    """Refuses outbound connections except to ``allow`` while installed.

    Attributes:
        blocked: ``host:port`` of every refused connection, in order.
        allowed_connections: ``host:port`` of every connection let through (an allowed
            host), in order, each once.
    """

    def __init__(self, allow: Iterable[str] = ()) -> None:
        hosts: set[str] = set()
        for host in allow:
            hosts.update(_LOOPBACK_ALIASES.get(host.lower(), (host.lower(),)))
        self.allowed = frozenset(hosts)
        self.blocked: list[str] = []
        self.allowed_connections: list[str] = []

    def permits(self, host: str) -> bool:
        return "*" in self.allowed or host.lower().strip("[]") in self.allowed

    def install(self) -> None:
        global _active
        with _lock:
            _active = self
            socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
            socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        global _active
        with _lock:
            if _active is self:
                _active = None
                socket.socket.connect = _original_connect  # type: ignore[method-assign]
                socket.socket.connect_ex = _original_connect_ex  # type: ignore[method-assign]

    def refuse(self, address: Any) -> NetworkBlocked:
        host, port = str(address[0]), address[1]
        self.blocked.append(f"{host}:{port}")
        return NetworkBlocked(
            f"pytest-harness blocked a connection to {host}:{port}: in replay mode tests run "
            "offline. Record the test with --harness-live (or --harness-record=new), or allow "
            "the host with the ini key harness_allow_hosts."
        )


def _check(sock: socket.socket, address: Any) -> None:
    guard = _active
    if guard is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    if not isinstance(address, tuple):
        return
    if not guard.permits(str(address[0])):
        raise guard.refuse(address)
    where = f"{address[0]}:{address[1]}"
    if where not in guard.allowed_connections:
        guard.allowed_connections.append(where)


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check(self, address)
    _original_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check(self, address)
    return _original_connect_ex(self, address)
