"""Who is behind a Unix socket, and the rule a client applies before it sends anything on one: the
peer must run as this user, as root, or as the one other user allowed, else the connect fails with a
``ConnectError`` naming the user found (see docs/explanation/inside-http.md)."""

from __future__ import annotations

import os
import socket
import struct
from dataclasses import dataclass

try:
    import pwd
except ImportError:  # Windows: no users to name (and no check, see ``check``)
    pwd = None  # type: ignore[assignment]

from ..errors import ConfigError, ConnectError

__all__ = [
    "ENV_USER",
    "TARGET_KEY",
    "Peer",
    "allowed_uids",
    "check",
    "describe",
    "peer_of",
    "uid_of",
]

ENV_USER = "MCP_LITE_GATEWAY_USER"
# The key of a connect target (a dict) that carries ``allowed_uids`` as a frozenset: how a
# Hub's ``gateway_user=`` reaches the transport of its gateway's endpoints.
TARGET_KEY = "mcp_lite.peer_uids"
_SO_PEERCRED = getattr(socket, "SO_PEERCRED", None)


@dataclass(frozen=True)
class Peer:
    """The credentials of the process at the other end (pid None when only the file's owner
    is known)."""

    uid: int
    pid: int | None = None


def uid_of(user: str | int, what: str = "gateway_user") -> int:
    """The uid of ``user`` (a name, a uid, or a uid as text).

    Raises:
        ConfigError: no such user.
    """
    if isinstance(user, bool) or not isinstance(user, (str, int)):
        raise ConfigError(f"{what} takes a user name or uid, got {type(user).__name__}")
    if isinstance(user, int) or user.isdigit():
        uid = int(user)
        if uid < 0:
            raise ConfigError(f"{what}: a uid is not negative, got {uid}")
        return uid
    if pwd is None:
        raise ConfigError(f"{what}: user names mean nothing on this platform")
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        raise ConfigError(f"{what}: no user named {user!r} on this machine") from None


def allowed_uids(user: str | int | None = None) -> frozenset[int]:
    """The users a ``unix://`` peer may run as: this process's, root, and ``user`` (else
    the one ``MCP_LITE_GATEWAY_USER`` names, when set).

    Raises:
        ConfigError: ``user`` (or the variable) names no user.
    """
    if not hasattr(os, "geteuid"):  # Windows: nothing to compare (``check`` skips it)
        return frozenset()
    uids = {os.geteuid(), 0}
    if user is None:
        named = os.environ.get(ENV_USER, "").strip()
        if named:
            uids.add(uid_of(named, ENV_USER))
    else:
        uids.add(uid_of(user))
    return frozenset(uids)


def peer_of(sock: socket.socket, path: str) -> Peer | None:
    """The connected ``sock``'s peer: its process (``SO_PEERCRED``), else the owner of the
    socket file at ``path``; None when neither can be read."""
    if _SO_PEERCRED is not None:
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, _SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return None
        pid, uid, _ = struct.unpack("3i", raw)
        return Peer(uid, pid)
    try:
        return Peer(os.stat(path).st_uid)
    except OSError:
        return None


def describe(uid: int) -> str:
    """``user 'name' (uid N)``, or ``uid N`` for a uid with no name here."""
    try:
        return f"user {pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except (KeyError, AttributeError):  # no such user; no pwd module
        return f"uid {uid}"


def check(sock: socket.socket, path: str, allowed: frozenset[int] | None) -> None:
    """Return when the process behind the connected ``sock`` may be sent requests.

    ``allowed``: the uids accepted (``allowed_uids``); None: ``allowed_uids()`` now.

    Raises:
        ConnectError: it runs as another user (or cannot be identified); ``refused_peer``
            is set on it. The caller closes ``sock``.
    """
    if not hasattr(os, "geteuid"):  # no users to compare (Windows)
        return
    uids = allowed_uids() if allowed is None else allowed
    peer = peer_of(sock, path)
    if peer is not None and peer.uid in uids:
        return
    if peer is None:
        found = "whose user cannot be identified"
    else:
        pid = "" if peer.pid is None else f", pid {peer.pid}"
        found = f"run by {describe(peer.uid)}{pid}"
    others = sorted(uids - {os.geteuid(), 0})
    allowed_text = " or ".join(["this user", "root", *map(describe, others)])
    allowed_text = allowed_text.replace(" or ", ", ", len(others))  # "a, b or c"
    error = ConnectError(
        f"refused the socket {path}: the process behind it is {found}, not {allowed_text}; "
        f"nothing was sent to it (if it is your gateway, name its user with gateway_user= "
        f"or {ENV_USER})"
    )
    error.refused_peer = True  # type: ignore[attr-defined]
    error.permanent = True  # type: ignore[attr-defined]  # no retry makes it another user
    raise error
