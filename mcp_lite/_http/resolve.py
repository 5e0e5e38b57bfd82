"""Host-name lookups bounded by the caller's deadline, and connecting to what they found. The lookup
runs on a short-lived daemon thread, with at most ``MAX_PENDING`` lookups running at once (see
docs/explanation/inside-http.md)."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable
from typing import Any

from .. import _fork

__all__ = ["MAX_PENDING", "LookupTimeout", "TooManyLookups", "connect_to", "is_literal", "lookup"]

# Lookups that may still be running at once (each on its own daemon thread): a resolver
# that never answers then costs this many threads, never more.
MAX_PENDING = 16

AddrInfo = tuple[Any, ...]

_pending = 0
_pending_lock = threading.Lock()


@_fork.on_child
def _reset_after_fork() -> None:
    """A forked child has none of the parent's lookup threads: none is pending there (else a
    child forked while ``MAX_PENDING`` lookups hung could never look a name up again)."""
    global _pending, _pending_lock
    _pending = 0
    _pending_lock = threading.Lock()


class LookupTimeout(TimeoutError):
    """The host name was not resolved before the deadline."""


class TooManyLookups(OSError):
    """``MAX_PENDING`` lookups are still running: the resolver is not answering."""


def is_literal(host: str) -> bool:
    """An IP address written out (no lookup needed: ``getaddrinfo`` answers at once)."""
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def lookup(host: str, port: int, family: int, seconds: float) -> list[AddrInfo]:
    """``getaddrinfo(host, port, family, SOCK_STREAM)``, waiting at most ``seconds``.

    Raises what ``getaddrinfo`` raises (``socket.gaierror`` for an unknown name),
    ``LookupTimeout`` at the deadline, ``TooManyLookups`` when the resolver is stuck.
    """
    global _pending
    with _pending_lock:
        if _pending >= MAX_PENDING:
            raise TooManyLookups(
                f"looking up {host!r}: all {MAX_PENDING} host-name lookup slots are full "
                "(that many earlier lookups got no answer yet: the resolver is not answering)"
            )
        _pending += 1
    outcome: list[Any] = []
    done = threading.Event()

    def run() -> None:
        global _pending
        try:
            outcome.append(socket.getaddrinfo(host, port, family, socket.SOCK_STREAM))
        except BaseException as exc:  # handed to the caller, if it still waits
            outcome.append(exc)
        finally:
            with _pending_lock:
                _pending -= 1
            done.set()

    threading.Thread(target=run, daemon=True, name="mcp-lite-resolve").start()
    if not done.wait(max(seconds, 0.0)):
        raise LookupTimeout(f"looking up {host!r} did not finish before the deadline")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return list(result)


def connect_to(
    addresses: list[AddrInfo],
    timeout: float | None,
    source_address: tuple[str, int] | None = None,
    socket_options: list[tuple[int, int, Any]] | None = None,
    arm: Callable[[socket.socket], None] | None = None,
) -> socket.socket:
    """A socket connected to the first of ``addresses`` that accepts, each tried in turn;
    the last failure when none does. ``arm(sock)`` runs before each connect: it registers
    the socket where a deadline can shut it down (which cuts the connect short), and may
    raise to connect no further."""
    failure: OSError | None = None
    for family, kind, proto, _name, address in addresses:
        sock = None
        try:
            sock = socket.socket(family, kind, proto)
            for level, option, value in socket_options or ():
                sock.setsockopt(level, option, value)
            if timeout is not None:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            if arm is not None:
                arm(sock)
            sock.connect(address)
            return sock
        except OSError as exc:
            failure = exc
            if sock is not None:
                sock.close()
    raise failure or OSError(f"no address to connect to ({len(addresses)} found)")
