"""Where a gateway may listen: ``check_folder`` refuses a folder that another user could write, and
``holder`` names who holds a path that is taken (see docs/explanation/inside-the-hub.md)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from .._http import peer as _peer
from ..errors import ConfigError

__all__ = ["check_folder", "holder"]


def check_folder(path: str) -> None:
    """Return when the folder of the socket ``path`` is one only this user (and root) can
    change, as written and after resolving links, and so is every folder above it (sticky
    ones may be writable by others). Nothing is checked where there are no user ids.

    Raises:
        ConfigError: naming the folder, what is wrong with it and what to do.
    """
    if not hasattr(os, "geteuid"):
        return
    me = os.geteuid()
    folder = os.path.dirname(os.path.abspath(path))
    for place in dict.fromkeys((folder, os.path.realpath(folder))):
        try:
            info = os.stat(place)
        except OSError as exc:
            raise ConfigError(
                f"the gateway cannot listen on {path}: its folder {place}: {exc.strerror or exc}"
            ) from None
        if info.st_uid not in (me, 0):
            raise ConfigError(
                f"the gateway cannot listen on {path}: its folder {place} belongs to "
                f"{_peer.describe(info.st_uid)}, who could put a socket of their own in its "
                "place; use a folder of your own (mkdir -m 755)"
            )
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            who = "others" if info.st_mode & stat.S_IWOTH else "its group"
            sticky = " (sticky: they can still take the name while the gateway is down)"
            raise ConfigError(
                f"the gateway cannot listen on {path}: its folder {place} can be written by "
                f"{who} (mode {stat.S_IMODE(info.st_mode):o})"
                f"{sticky if info.st_mode & stat.S_ISVTX else ''}, who could listen in the "
                "gateway's place; use a folder only you can write (mkdir -m 755, or chmod go-w)"
            )
    above = {*Path(folder).parents, *Path(os.path.realpath(folder)).parents}
    for parent in sorted(above):
        try:
            info = os.stat(parent)
        except OSError:
            continue
        if info.st_uid not in (me, 0):
            raise ConfigError(
                f"the gateway cannot listen on {path}: it lies in {parent}, which belongs to "
                f"{_peer.describe(info.st_uid)}; use a folder of your own"
            )
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            raise ConfigError(
                f"the gateway cannot listen on {path}: it lies in {parent}, which others can "
                f"write (mode {stat.S_IMODE(info.st_mode):o}); use a folder of your own"
            )


def holder(path: str) -> str | None:
    """Who holds ``path``: ``"user 'x' (uid N), pid P"`` of the process listening there,
    else ``"the socket file's owner, user 'x' (uid N)"`` (a socket it cannot connect to),
    else the owner of whatever file is there; None when nothing is."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISSOCK(info.st_mode):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(0.5)
            probe.connect(path)
            peer = _peer.peer_of(probe, path)
        except OSError:
            peer = None
        finally:
            probe.close()
        if peer is not None and peer.pid is not None:
            return f"{_peer.describe(peer.uid)}, pid {peer.pid}"
        return f"the owner of the socket file, {_peer.describe(info.st_uid)}"
    kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a file that is not a socket"
    return f"{kind} owned by {_peer.describe(info.st_uid)}"
