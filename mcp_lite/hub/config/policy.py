"""Managed policy and settings permissions: which MCP servers may run (``allowedMcpServers`` /
``deniedMcpServers``), and which tools the settings files' permission rules name
(``settings_rules``). The matching rules are in docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .._for_model.permissions import parse_rule

__all__ = [
    "ServerPolicy",
    "add_allow_rule",
    "policy_from_settings",
    "settings_rules",
]

_KEYS = ("serverName", "serverCommand", "serverUrl")


@dataclass(frozen=True)
class _Entry:
    key: str  # serverName | serverCommand | serverUrl
    value: Any  # str, tuple[str, ...] or a compiled URL pattern
    shown: str

    def matches(self, name: str, command: Sequence[str] | None, url: str | None) -> bool:
        if self.key == "serverName":
            return bool(name == self.value)
        if self.key == "serverCommand":
            return command is not None and tuple(command) == self.value
        return url is not None and self.value.fullmatch(url) is not None


def _url_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def _parse(raw: Any, what: str) -> list[_Entry]:
    if not isinstance(raw, Iterable) or isinstance(raw, (str, bytes, Mapping)):
        raise ConfigError(f"{what} must be a list of entries, got {type(raw).__name__}")
    out: list[_Entry] = []
    for item in raw:
        keys = [k for k in _KEYS if isinstance(item, Mapping) and k in item]
        if len(keys) != 1:
            raise ConfigError(
                f"{what}: each entry has exactly one of serverName, serverCommand, serverUrl; "
                f"got {item!r}"
            )
        key, value = keys[0], item[keys[0]]
        shown = json.dumps({key: value})
        if key == "serverName" and isinstance(value, str) and value:
            out.append(_Entry(key, value, shown))
        elif (
            key == "serverCommand"
            and isinstance(value, list)
            and value
            and all(isinstance(v, str) for v in value)
        ):
            out.append(_Entry(key, tuple(value), shown))
        elif key == "serverUrl" and isinstance(value, str) and value:
            out.append(_Entry(key, _url_pattern(value), shown))
        else:
            raise ConfigError(f"{what}: invalid {key} {value!r}")
    return out


@dataclass
class ServerPolicy:
    """Allow and deny lists of servers (see the module docstring).

    Args:
        allowed: entries admitted; ``None`` for no allow list (everything admitted).
        denied: entries refused.
        source: named in the reason of a blocked server (a file path, or ``Hub(...)``).

    Raises:
        ConfigError: a malformed entry.
    """

    allowed: Sequence[Mapping[str, Any]] | None = None
    denied: Sequence[Mapping[str, Any]] | None = None
    source: str = "Hub(allowed_servers=..., denied_servers=...)"
    _allow: list[_Entry] | None = field(init=False, repr=False)
    _deny: list[_Entry] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._allow = None if self.allowed is None else _parse(self.allowed, "allowedMcpServers")
        self._deny = [] if self.denied is None else _parse(self.denied, "deniedMcpServers")

    @property
    def empty(self) -> bool:
        return self._allow is None and not self._deny

    def blocked(
        self, name: str, kind: str, command: Sequence[str] | None = None, url: str | None = None
    ) -> str | None:
        """Why server ``name`` may not run, or None. ``kind`` is its config type; ``command``
        is ``[command, *args]`` of a stdio server, ``url`` a remote server's URL."""
        if kind == "sdk":
            return None
        for entry in self._deny:
            if entry.matches(name, command, url):
                return f"blocked by policy: deniedMcpServers entry {entry.shown} in {self.source}"
        if self._allow is None:
            return None
        if not self._allow:
            return f"blocked by policy: allowedMcpServers in {self.source} is empty"
        stdio = command is not None
        decisive = "serverCommand" if stdio else "serverUrl"
        strict = any(e.key == decisive for e in self._allow)
        key = decisive if strict else "serverName"
        if any(e.matches(name, command, url) for e in self._allow if e.key == key):
            return None
        what = ("command" if stdio else "URL") if strict else "name"
        return f"blocked by policy: its {what} matches no allowedMcpServers entry in {self.source}"

    def blocked_target(self, name: str, kind: str, target: Any) -> str | None:
        """``blocked`` for a ``connect()`` target (a stdio or remote config dict)."""
        command: list[str] | None = None
        url: str | None = None
        if isinstance(target, Mapping):
            if isinstance(target.get("command"), str):
                command = [target["command"], *[str(a) for a in target.get("args") or ()]]
            elif isinstance(target.get("url"), str):
                url = target["url"]
        elif isinstance(target, str) and "://" in target:
            url = target
        return self.blocked(name, kind, command, url)


def policy_from_settings(data: Any, source: str) -> ServerPolicy | None:
    """The policy in a managed settings document, or None when it has none.

    Raises:
        ConfigError: the lists are malformed (the caller records it as an issue).
    """
    if not isinstance(data, Mapping):
        return None
    allowed, denied = data.get("allowedMcpServers"), data.get("deniedMcpServers")
    if allowed is None and denied is None:
        return None
    return ServerPolicy(allowed, denied, source)


def settings_rules(data: Any, source: str) -> tuple[list[str], list[str], list[str]]:
    """``(allow, deny, problems)``: the ``mcp__`` rules of a settings document's
    ``permissions`` and what is wrong with the malformed ones."""
    allow: list[str] = []
    deny: list[str] = []
    problems: list[str] = []
    perms = data.get("permissions") if isinstance(data, Mapping) else None
    if not isinstance(perms, Mapping):
        return allow, deny, problems
    for key, into in (("allow", allow), ("deny", deny)):
        rules = perms.get(key)
        if rules is None:
            continue
        if not isinstance(rules, list):
            problems.append(f"permissions.{key} must be a list")
            continue
        for rule in rules:
            if not isinstance(rule, str) or not rule.startswith("mcp__"):
                continue  # another tool's rule: not ours
            try:
                parse_rule(rule)
            except ConfigError as exc:
                problems.append(str(exc))
                continue
            into.append(rule)
    return allow, deny, problems


def add_allow_rule(path: Path, rule: str) -> None:
    """Add ``rule`` to ``permissions.allow`` of the settings file ``path``
    (``<project>/.claude/settings.local.json``; created 0600 if missing; other keys kept;
    written atomically). A file that is not a JSON object is left alone.

    The write never follows a symbolic link: when the ``.claude`` folder or the file is a
    link (it could point out of the project, copying outside content into the repository
    or writing a file elsewhere), nothing is written. The folder is opened once without
    following links and every step works inside that open folder, so a link swapped in
    meanwhile changes nothing.

    Raises:
        ConfigError: the file or folder is a link or not a regular file, or the file cannot
            be read as a JSON object, or cannot be written (the caller keeps the rule in
            memory).
    """
    try:
        if os.open not in os.supports_dir_fd:  # Windows: no folder handles; check the links
            if path.parent.is_symlink() or path.is_symlink():
                raise _Refused(path)
            _update(path, rule)
            return
        folder = _open_folder(path)
        try:
            _update_at(folder, path, rule)
        finally:
            os.close(folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _Refused(path) from None
        raise ConfigError(f"cannot update {path}: {exc.strerror or exc}") from None


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_MAX_SETTINGS_BYTES = 1024 * 1024


class _Refused(ConfigError):
    def __init__(self, path: Path) -> None:
        super().__init__(
            f"cannot update {path}: it or its folder is a symbolic link or not a regular "
            "file, and the rule is not written through it (it could lead out of the project)"
        )


def _open_folder(path: Path) -> int:
    """A handle on ``path``'s folder (created 0700 if missing), refusing a link there."""
    base = os.open(path.parent.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        try:
            os.mkdir(path.parent.name, 0o700, dir_fd=base)
        except FileExistsError:
            pass
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
        return os.open(path.parent.name, flags, dir_fd=base)
    finally:
        os.close(base)


def _update_at(folder: int, path: Path, rule: str) -> None:
    name = path.name
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | _CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        data: Any = {}
        mode = 0o600
    else:
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _Refused(path)
            if info.st_size > _MAX_SETTINGS_BYTES:
                raise ConfigError(f"cannot update {path}: larger than {_MAX_SETTINGS_BYTES} bytes")
            data = _document(path, _read_all(fd, _MAX_SETTINGS_BYTES + 1))
            mode = stat.S_IMODE(info.st_mode)
        finally:
            os.close(fd)
    text = _with_rule(path, data, rule)
    if text is None:
        return
    tmp = f".settings-{secrets.token_hex(8)}.tmp"
    out = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=folder
    )
    try:
        try:
            data_out = memoryview(text.encode("utf-8"))
            while data_out:
                data_out = data_out[os.write(out, data_out) :]
            os.fchmod(out, mode)
        finally:
            os.close(out)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
        raise


def _update(path: Path, rule: str) -> None:
    """``add_allow_rule`` by path, where the system has no folder handles."""
    data = _document(path, path.read_bytes()) if path.exists() else {}
    text = _with_rule(path, data, rule)
    if text is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=".settings-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_all(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    while limit > 0 and (chunk := os.read(fd, min(limit, 65536))):
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def _document(path: Path, raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except ValueError as exc:
        raise ConfigError(f"cannot update {path}: {exc}") from None


def _with_rule(path: Path, data: Any, rule: str) -> str | None:
    """The new text of the settings document with ``rule`` allowed, or None when it
    already is."""
    if not isinstance(data, dict):
        raise ConfigError(f"cannot update {path}: not a JSON object")
    perms = data.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise ConfigError(f"cannot update {path}: 'permissions' is not an object")
    allow = perms.setdefault("allow", [])
    if not isinstance(allow, list):
        raise ConfigError(f"cannot update {path}: 'permissions.allow' is not a list")
    if rule in allow:
        return None
    allow.append(rule)
    return json.dumps(data, indent=2) + "\n"
