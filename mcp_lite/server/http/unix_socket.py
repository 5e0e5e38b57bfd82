"""The socket file of a server listening on a Unix domain socket: ``listen(path, mode)`` binds it
never more open than ``mode`` and replaces only a stale file, and ``remove`` deletes it at close
(see docs/explanation/server.md)."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import threading

__all__ = ["listen", "remove"]

_BACKLOG = 128
_umask_lock = threading.Lock()


def listen(path: str, mode: int = 0o600) -> tuple[socket.socket, tuple[int, int]]:
    """A listening ``AF_UNIX`` socket bound at ``path``, and the file's ``(st_dev, st_ino)``.

    Raises:
        FileExistsError: ``path`` is not a socket, or a server listens on it.
        OSError: the socket cannot be created there (no directory, no permission...).
    """
    path = os.fspath(path)
    _clear_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _bind(sock, path, mode)
        os.chmod(path, mode)  # exactly mode (the umask may have taken bits the caller asked for)
        info = os.stat(path)
        sock.listen(_BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock, (info.st_dev, info.st_ino)


def _bind(sock: socket.socket, path: str, mode: int) -> None:
    try:
        os.fchmod(sock.fileno(), mode & 0o777)  # Linux: bind creates the file with this mode
    except OSError:
        with _umask_lock:  # elsewhere: a process-wide umask, for the moment of the bind
            old = os.umask(0o777 & ~mode)
            try:
                sock.bind(path)
            finally:
                os.umask(old)
        return
    sock.bind(path)


def _clear_stale(path: str) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise FileExistsError(errno.EEXIST, "exists and is not a socket; not replaced", path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(0.5)
        probe.connect(path)
    except ConnectionRefusedError:  # nobody listens: a stale file of a server that died
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):  # a live server with a full queue
            raise FileExistsError(
                errno.EADDRINUSE, "a server listens on this socket", path
            ) from exc
        raise
    finally:
        probe.close()
    raise FileExistsError(errno.EADDRINUSE, "a server listens on this socket", path)


def remove(path: str, ident: tuple[int, int]) -> None:
    """Delete the socket file at ``path`` if it is still the one ``listen`` made."""
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if (info.st_dev, info.st_ino) == ident:
            os.unlink(path)
