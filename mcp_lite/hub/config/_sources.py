"""Raw configuration documents for ``mcp_lite.hub.config``: file locations, reading config files
safely, remote sources, name rules and project approvals, all on plain dicts before pydantic sees
them (the schema of one entry, ``${VAR}`` expansion and ``type`` inference are in
``mcp_lite._server_config``). Nothing here knows about scopes or precedence; every function returns
plain data plus an error message (``None`` when fine), so that ``config`` can turn problems into
``ConfigIssue`` values without one bad source hiding the others."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..._secrets import redact_text, redact_url

REMOTE_TIMEOUT = 10.0
"""Seconds allowed for fetching a remote server list from a URL (a total, not per read)."""
REMOTE_MAX_BYTES = 1024 * 1024
"""The largest remote server list accepted."""

# --- names, trust ---------------------------------------------------------------------------


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a server, or ``None``: ``^[a-zA-Z0-9_-]+$``, no ``__``
    inside and no ``_`` at either end (``mcp__<server>__<tool>`` must parse back)."""
    if not name or any(not (c.isascii() and (c.isalnum() or c in "-_")) for c in name):
        return f"invalid server name {name!r}: use only letters, digits, '-' and '_'"
    if "__" in name or name.startswith("_") or name.endswith("_"):
        return (
            f"invalid server name {name!r}: '__' inside, or '_' at either end, makes "
            "'mcp__<server>__<tool>' names ambiguous"
        )
    return None


def project_approvals(
    user_files: list[Any], trust: bool | Iterable[str]
) -> tuple[bool, set[str], set[str]]:
    """``(trust all, trusted names, rejected names)`` for project servers, from the
    ``trust_project`` argument and the approvals recorded in the user's own files
    (``enableAllProjectMcpServers``, ``enabledMcpjsonServers``, ``disabledMcpjsonServers``).
    A name given in ``trust`` is never rejected."""
    if isinstance(trust, str):
        trust = [trust]
    everything = trust is True
    named = set() if isinstance(trust, bool) else {str(n) for n in trust}
    enabled, rejected = set(named), set[str]()
    for data in user_files:
        if not isinstance(data, Mapping):
            continue
        if data.get("enableAllProjectMcpServers") is True:
            everything = True
        for key, into in (("enabledMcpjsonServers", enabled), ("disabledMcpjsonServers", rejected)):
            names = data.get(key)
            if isinstance(names, list):
                into.update(str(n) for n in names)
    return everything, enabled, rejected - named


# --- files ----------------------------------------------------------------------------------


MAX_CONFIG_BYTES = 1024 * 1024
"""The largest config file read (``.mcp.json``, settings, managed and plugin files, Claude
Desktop's file, ``--config``)."""
MAX_CLAUDE_JSON_BYTES = 64 * 1024 * 1024
"""The largest ``~/.claude.json`` read: Claude Code keeps its history there too, and that file
is known to grow to tens of megabytes on a heavy user's machine (still a regular file of the
user's own, size checked before reading)."""


def read_json(
    path: Path,
    *,
    max_bytes: int = MAX_CONFIG_BYTES,
    in_project: bool = False,
    explicit: bool = False,
) -> tuple[Any, str | None]:
    """The parsed content of a JSON config file: ``(data, None)``; ``(None, None)`` when
    the file does not exist; ``(None, message)`` when it is not read (the message says why).

    Read only when it is a regular file of at most ``max_bytes`` (checked on the open file
    before reading, then at most ``max_bytes + 1`` bytes are read): a FIFO, a device such
    as ``/dev/zero``, a folder or a huge file is refused at once, never a hang or an OOM.

    Args:
        in_project: a file a project could ship (``.mcp.json``, ``.claude/settings*.json``):
            a symbolic link there is refused rather than followed.
        explicit: named by the caller (``config_files``, ``--config``): the ownership rule
            of ``ownership_problem`` is not applied (the caller chose that file).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if in_project:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP and in_project:
            return (
                None,
                "not read: a symbolic link (a project's config files must be regular files)",
            )
        return None, f"cannot read file: {exc.strerror or exc}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"not read: {_kind(info.st_mode)}, not a regular file"
        if info.st_size > max_bytes:
            return None, f"not read: {info.st_size} bytes, larger than the {max_bytes} allowed"
        problem = None if explicit else ownership_problem(path, info)
        if problem is not None:
            return None, problem
        raw = _read_at_most(fd, max_bytes + 1)
    except OSError as exc:
        return None, f"cannot read file: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if len(raw) > max_bytes:  # it grew after the check
        return None, f"not read: larger than the {max_bytes} bytes allowed"
    try:
        return json.loads(raw.decode("utf-8-sig")), None
    except UnicodeDecodeError as exc:
        return None, f"cannot read file: not UTF-8 ({exc.reason} at byte {exc.start})"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


def ownership_problem(path: Path, info: os.stat_result) -> str | None:
    """Why a config file must not be read as configuration, or ``None``.

    Refused (POSIX): a file owned by another user (root excepted), and a file lying in a
    folder owned by another user (root excepted) or writable by its group or by others
    without the sticky bit. The sticky bit (``/tmp``) keeps others from replacing or
    removing a file they do not own, so there the file's owner decides. Otherwise anyone
    who can write the folder can swap the file (a ``.mcp.json`` planted in a parent folder
    would replace the user's own server of that name).
    """
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # Windows: no uid to compare
        return None
    me = geteuid()
    if info.st_uid not in (me, 0):
        return f"not read as configuration: owned by another user (uid {info.st_uid})"
    try:
        folder = os.stat(os.path.dirname(os.path.realpath(path)))
    except OSError as exc:
        return f"cannot check its folder: {exc.strerror or exc}"
    if folder.st_uid not in (me, 0):
        return (
            f"not read as configuration: its folder is owned by another user (uid {folder.st_uid})"
        )
    writable = folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not folder.st_mode & stat.S_ISVTX:
        who = "others" if folder.st_mode & stat.S_IWOTH else "its group"
        return (
            f"not read as configuration: its folder can be written by {who} "
            f"(mode {stat.S_IMODE(folder.st_mode):o})"
        )
    return None


def default_managed_paths(platform: str | None = None) -> list[Path]:
    """Where an administrator deploys ``managed-mcp.json``, most current location first.

    macOS ``/Library/Application Support/ClaudeCode/``; Linux and WSL ``/etc/claude-code/``;
    Windows ``C:\\Program Files\\ClaudeCode\\`` (current Claude Code documentation), then the
    older ``C:\\ProgramData\\ClaudeCode\\``.
    """
    platform = sys.platform if platform is None else platform
    if platform == "darwin":
        return [Path("/Library/Application Support/ClaudeCode/managed-mcp.json")]
    if platform.startswith("win"):
        return [
            Path("C:/Program Files/ClaudeCode/managed-mcp.json"),
            Path("C:/ProgramData/ClaudeCode/managed-mcp.json"),
        ]
    return [Path("/etc/claude-code/managed-mcp.json")]


def claude_desktop_path(
    platform: str | None = None, environ: Mapping[str, str] | None = None, home: Path | None = None
) -> Path:
    """Claude Desktop's ``claude_desktop_config.json``: macOS
    ``~/Library/Application Support/Claude/``, Windows ``%APPDATA%\\Claude\\``, elsewhere
    ``$XDG_CONFIG_HOME/Claude/`` (default ``~/.config/Claude/``)."""
    platform = sys.platform if platform is None else platform
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    name = "claude_desktop_config.json"
    if platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / name
    if platform.startswith("win"):
        appdata = environ.get("APPDATA")
        base = Path(appdata) if appdata else home / "AppData" / "Roaming"
        return base / "Claude" / name
    xdg = environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else home / ".config") / "Claude" / name


def project_section(claude_json: Any, project_dir: Path) -> Mapping[str, Any] | None:
    """The ``projects[<project path>]`` object of ``~/.claude.json`` for ``project_dir``.

    Claude Code keys projects by absolute path; the key is matched as written, resolved
    (symlinks followed) and with forward slashes (Windows), whichever is present.
    """
    if not isinstance(claude_json, Mapping):
        return None
    projects = claude_json.get("projects")
    if not isinstance(projects, Mapping):
        return None
    absolute = project_dir.absolute()
    for candidate in (absolute, absolute.resolve()):
        for key in (str(candidate), candidate.as_posix()):
            found = projects.get(key)
            if isinstance(found, Mapping):
                return found
    return None


# --- remote ---------------------------------------------------------------------------------


def describe_remote(remote: Callable[[], Mapping[str, Any]] | str) -> str:
    """How a remote source is named in ``ServerEntry.source`` and in issues."""
    if isinstance(remote, str):
        return f"remote:{redact_url(remote)}"
    name = getattr(remote, "__qualname__", None) or type(remote).__name__
    return f"remote:{getattr(remote, '__module__', '?')}.{name}"


def fetch_remote(remote: Callable[[], Mapping[str, Any]] | str) -> tuple[Any, str | None]:
    """Call the remote callable, or GET the URL and parse JSON: ``REMOTE_TIMEOUT`` seconds in
    all (a server that drips is cut off), at most ``REMOTE_MAX_BYTES``, and only over https
    (plain http on loopback only: a list of servers says what runs, so it must not be
    rewritten on the way).

    Returns ``(data, None)`` or ``(None, message)``; never raises for a failing source.
    """
    try:
        if isinstance(remote, str):
            from ...auth._net import Http, require_secure

            require_secure(remote, "remote server list")
            status, _, raw = Http(timeout=REMOTE_TIMEOUT).exchange(
                "GET", remote, "remote server list", headers={"Accept": "application/json"}
            )
            if status != 200:
                return None, f"could not load remote servers: HTTP {status}"
            if len(raw) > REMOTE_MAX_BYTES:
                return None, f"could not load remote servers: larger than {REMOTE_MAX_BYTES} bytes"
            return json.loads(raw.decode("utf-8")), None
        return remote(), None
    except Exception as exc:  # a failing source is an issue, never a crash
        text = redact_text(f"{type(exc).__name__}: {exc}")
        return None, f"could not load remote servers: {text}"
