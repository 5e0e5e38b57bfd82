"""Raw configuration documents for ``mcp_lite.hub.config``: file locations, JSON reading,
remote sources, ``${VAR}`` expansion, name rules, ``type`` inference, project approvals and
URL normalization — everything that works on plain dicts before pydantic sees them.

Nothing here knows about scopes or precedence; every function returns plain data plus an
error message (``None`` when fine) so that ``config`` can turn problems into ``ConfigIssue``
values without one bad source hiding the others.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._secrets import redact_text, redact_url

REMOTE_TIMEOUT = 10.0
"""Seconds allowed for fetching a remote server list from a URL (a total, not per read)."""
REMOTE_MAX_BYTES = 1024 * 1024
"""The largest remote server list accepted."""

_VAR = re.compile(r"\$\{([^}:]+)(?::-([^}]*))?\}")


# --- ${VAR} expansion -----------------------------------------------------------------------


def expand_vars(value: str, environ: Mapping[str, str], missing: list[str]) -> str:
    """``value`` with ``${VAR}`` and ``${VAR:-default}`` replaced from ``environ``.

    ``${VAR:-default}`` takes the default when ``VAR`` is unset or empty (the shell's
    meaning of ``:-``). A ``${VAR}`` with no value is left as written and its name appended
    to ``missing``. Expansion is one pass: a substituted value or a default that itself
    contains ``${...}`` is not expanded again. ``$VAR`` without braces is not touched.
    """

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found:
            return found
        if default is not None:
            return default
        if found is not None:  # set but empty, no default
            return found
        if name not in missing:
            missing.append(name)
        return match.group(0)

    return _VAR.sub(replace, value)


def expand_server(
    raw: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """A copy of one raw server entry with variables expanded where Claude Code expands them:
    ``command``, each of ``args``, the values of ``env``, ``url`` and the values of
    ``headers``. Keys are never expanded; values that are not strings are left for
    validation to reject. Returns the copy and the names of missing variables, in order.
    """
    out = dict(raw)
    missing: list[str] = []
    for key in ("command", "url"):
        if isinstance(out.get(key), str):
            out[key] = expand_vars(out[key], environ, missing)
    if isinstance(out.get("args"), list):
        out["args"] = [
            expand_vars(a, environ, missing) if isinstance(a, str) else a for a in out["args"]
        ]
    for key in ("env", "headers"):
        if isinstance(out.get(key), Mapping):
            out[key] = {
                k: expand_vars(v, environ, missing) if isinstance(v, str) else v
                for k, v in out[key].items()
            }
    return out, missing


# --- known keys ---------------------------------------------------------------------------

# Keys the transports read from a config dict beyond the model's fields (see
# ``mcp_lite.transports._remote``); ``name`` names the client in logs.
_TRANSPORT_KEYS: dict[str, tuple[str, ...]] = {
    "http": ("connectTimeout", "readTimeout", "idleTimeout", "auth", "token_provider"),
    "sse": ("connectTimeout", "readTimeout", "idleTimeout", "auth", "token_provider"),
    "proxy": ("connectTimeout", "readTimeout", "idleTimeout"),
    "sse-ide": ("connectTimeout", "readTimeout", "idleTimeout"),
    "ws": ("connectTimeout", "pingInterval"),
    "ws-ide": ("connectTimeout", "pingInterval"),
}


def known_keys(kind: str, model: Any) -> set[str]:
    """Every key a server config of type ``kind`` (pydantic class ``model``) may hold:
    the model's fields and their aliases, the transport's own keys, ``type`` and ``name``."""
    keys = {"type", "name", *_TRANSPORT_KEYS.get(kind, ())}
    for field_name, info in model.model_fields.items():
        keys.add(field_name)
        alias = info.validation_alias
        keys.update(getattr(alias, "choices", None) or ([alias] if isinstance(alias, str) else []))
    if "token_provider" in keys:
        keys.add("tokenProvider")
    return keys


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known key, or an empty string."""
    import difflib

    choices = sorted(known)
    lowered = {k.lower(): k for k in choices}
    close = [lowered[key.lower()]] if key.lower() in lowered else []
    close = close or difflib.get_close_matches(key, choices, n=1, cutoff=0.7)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --- names, types, trust -------------------------------------------------------------------

TYPE_ALIASES = {
    "claudeai-proxy": "proxy",
    "streamable-http": "http",
    "streamableHttp": "http",
    "in-process": "sdk",
}
"""Other spellings of ``type`` seen in the wild, mapped to ours."""


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


def with_type(raw: Mapping[str, Any]) -> dict[str, Any] | str:
    """``raw`` with ``type`` filled in or normalized, or the reason it cannot be."""
    out = dict(raw)
    kind = out.get("type")
    if kind is None:
        if "command" in out:
            out["type"] = "stdio"
        elif isinstance(out.get("url"), str):
            scheme = out["url"].split("://", 1)[0].lower()
            out["type"] = "ws" if scheme in ("ws", "wss") else "http"
        elif "server" in out:
            out["type"] = "sdk"
        else:
            return "type: missing; give 'command' (stdio) or 'type' and 'url'"
    elif isinstance(kind, str):
        out["type"] = TYPE_ALIASES.get(kind, kind)
    return out


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


def read_json(path: Path) -> tuple[Any, str | None]:
    """The parsed content of a JSON file: ``(data, None)``; ``(None, None)`` when the file
    does not exist; ``(None, message)`` when it cannot be read or is not JSON."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read file: {exc}"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


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
            from ..auth._net import Http, require_secure

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


# --- signatures -----------------------------------------------------------------------------


def normalize_url(url: str) -> str:
    """``url`` compared by content: scheme and host lower-cased, default port dropped,
    trailing ``/`` of the path dropped, fragment dropped; query kept as written."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return url.strip()
    scheme = parts.scheme.lower()
    default = {"http": 80, "ws": 80, "https": 443, "wss": 443}.get(scheme)
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != default:
        netloc += f":{port}"
    if parts.username or parts.password:
        userinfo = parts.username or ""
        if parts.password:
            userinfo += f":{parts.password}"
        netloc = f"{userinfo}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))
