"""Hub configuration: which MCP servers exist, from which scope, and whether they may start.
``load_config()`` reads the same files as Claude Code and merges them into one ``HubConfig`` of
``ServerEntry`` values; a broken file or entry becomes a ``ConfigIssue`` and every other server
still loads. The sources and the rules applied to them are in docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..._server_config import (
    DEFAULT_IDE_AUTH_HEADER,
    HttpServerConfig,
    OAuthConfig,
    ProxyServerConfig,
    SdkServerConfig,
    ServerConfig,
    ServerTarget,
    SseIdeServerConfig,
    SseServerConfig,
    StdioServerConfig,
    WsIdeServerConfig,
    WsServerConfig,
    _Invalid,
    _validate,
    validate_target,
)
from ...errors import ConfigError
from . import _discovery
from . import _sources as src
from ._entries import ConfigIssue, HubConfig, Scope, ServerEntry

log = logging.getLogger("mcp_lite.hub")

# The entry schema lives in ``mcp_lite._server_config`` and the records in ``_entries``
# (below both this loader and ``_discovery``); they are re-exported here, where they are
# documented.
__all__ = [
    "DEFAULT_IDE_AUTH_HEADER",
    "ConfigIssue",
    "HttpServerConfig",
    "HubConfig",
    "OAuthConfig",
    "ProxyServerConfig",
    "Scope",
    "SdkServerConfig",
    "ServerConfig",
    "ServerEntry",
    "SseIdeServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "WsIdeServerConfig",
    "WsServerConfig",
    "ServerTarget",
    "import_claude_desktop",
    "load_config",
    "parse_servers",
    "validate_target",
]

_RANK: dict[str, int] = {
    "enterprise": 0,
    "local": 0,
    "project": 1,
    "user": 2,
    "dynamic": 3,
    "remote": 4,
}
_MANUAL = ("enterprise", "local", "project", "user")


# --- parsing --------------------------------------------------------------------------------


def _parse_one(
    name: str, raw: Any, scope: Scope, source: str, environ: Mapping[str, str]
) -> tuple[ServerEntry, ConfigIssue | None]:
    entry = ServerEntry(name=name, scope=scope, config=None, source=source)
    problem = src.name_problem(name)
    try:
        if problem is not None:
            raise _Invalid(problem, prefix=False)
        config = _validate(raw, environ)
    except _Invalid as exc:
        entry.error = (
            f"invalid config for server {name!r} in {source}: {exc.message}"
            if exc.prefix
            else exc.message
        )
        return entry, ConfigIssue(source, name, exc.message)
    entry.config = config
    if config.disabled:
        entry.disabled_reason = 'disabled in its config ("disabled": true)'
    return entry, None


def _parse_mapping(
    servers: Mapping[str, Any], scope: Scope, source: str, environ: Mapping[str, str]
) -> tuple[dict[str, ServerEntry], list[ConfigIssue]]:
    entries: dict[str, ServerEntry] = {}
    issues: list[ConfigIssue] = []
    for name, raw in servers.items():
        entry, issue = _parse_one(str(name), raw, scope, source, environ)
        entries[entry.name] = entry
        if issue is not None:
            issues.append(issue)
    return entries, issues


def parse_servers(
    data: Mapping[str, Any], scope: Scope, source: str, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, ServerEntry], list[ConfigIssue]]:
    """Parse one document: ``{"mcpServers": {...}}`` or a bare mapping of servers.

    Every entry is returned, bad ones with ``config=None`` and ``error`` set (and one issue
    each); precedence, trust and reserved names are ``load_config``'s business.

    Args:
        data: the document.
        scope: recorded on every entry.
        source: a file path or description, recorded on entries and issues.
        environ: for ``${VAR}`` expansion (default ``os.environ``).
    """
    environ = os.environ if environ is None else environ
    if not isinstance(data, Mapping):
        return {}, [
            ConfigIssue(
                source, None, f"expected a JSON object with 'mcpServers', got {type(data).__name__}"
            )
        ]
    servers = data.get("mcpServers", data)
    if not isinstance(servers, Mapping):
        return {}, [
            ConfigIssue(
                source, None, f"'mcpServers' must be an object, got {type(servers).__name__}"
            )
        ]
    return _parse_mapping(servers, scope, source, environ)


# --- loading --------------------------------------------------------------------------------


class _Loader:
    """Collects candidate entries (in reading order), issues and sources."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.result = HubConfig()
        self.candidates: list[ServerEntry] = []

    def read(self, path: Path, **how: Any) -> Any:
        """The document of one file (``how``: ``read_json``'s options), or ``None`` with
        the reason recorded as an issue."""
        data, error = src.read_json(path, **how)
        if error is not None:
            self.result.issues.append(ConfigIssue(str(path), None, error))
        elif data is not None:
            self.result.sources.append(str(path))
        return data

    def add(self, data: Any, scope: Scope, source: str, *, section_only: bool) -> None:
        """Add the servers of one document; ``section_only``: a settings-like file whose
        servers live under ``mcpServers`` (anything else in it is not ours)."""
        if data is None:
            return
        if section_only:
            if not isinstance(data, Mapping):
                self.result.issues.append(
                    ConfigIssue(source, None, f"expected a JSON object, got {type(data).__name__}")
                )
                return
            if "mcpServers" not in data:
                return
            data = {"mcpServers": data["mcpServers"]}
        entries, issues = parse_servers(data, scope, source, self.environ)
        self.candidates.extend(entries.values())
        self.result.issues.extend(issues)

    def add_file(self, path: Path, scope: Scope, *, section_only: bool, **how: Any) -> None:
        self.add(self.read(path, **how), scope, str(path), section_only=section_only)


def _dynamic_document(dynamic: Mapping[str, Any]) -> dict[str, Any]:
    from ...server import Server

    out: dict[str, Any] = {}
    for name, value in dynamic.items():
        out[name] = (
            {"type": "sdk", "name": name, "server": value} if isinstance(value, Server) else value
        )
    return out


def _drop(result: HubConfig, entry: ServerEntry, reason: str) -> None:
    entry.disabled_reason = reason
    result.dropped.append(entry)


def _resolve(result: HubConfig, entries: list[ServerEntry]) -> dict[str, ServerEntry]:
    """Winner per name: lowest rank, then latest read; the rest are dropped."""
    best: dict[str, tuple[int, int, ServerEntry]] = {}
    for order, entry in enumerate(entries):
        key = (_RANK[entry.scope], -order)
        held = best.get(entry.name)
        if held is None or key < held[:2]:
            if held is not None:
                _drop(result, held[2], _overridden(entry))
            best[entry.name] = (key[0], key[1], entry)
        else:
            _drop(result, entry, _overridden(held[2]))
    return {name: held[2] for name, held in best.items()}


def _overridden(by: ServerEntry) -> str:
    return f"overridden by the {by.scope} entry of the same name from {by.source}"


PYTHON_TRUST_HINT = "add it to the allow list (trust_project=[{quoted}]) or pass trust_project=True"
"""How an untrusted project server's reason says what to do; ``load_config(trust_hint=)``
replaces it (the CLI speaks of ``--trust-project NAME``)."""


def _apply_trust(
    servers: Mapping[str, ServerEntry],
    approvals: tuple[bool, set[str], set[str]],
    inside: frozenset[str] = frozenset(),
    hint: str = PYTHON_TRUST_HINT,
    above: frozenset[str] = frozenset(),
) -> None:
    """Disable project servers that are not trusted (the reason ends with ``hint``, its
    ``{name}`` filled in). ``inside``: other sources that live in
    the project folder (``.claude/settings.local.json``): the project could ship them, so
    their servers need the same trust as ``.mcp.json`` ones, though their scope is local.
    ``above``: ``.mcp.json`` files above the project root; trusting the whole project does
    not reach them, only trust by name does."""
    everything, enabled, rejected = approvals
    for entry in servers.values():
        from_project = entry.scope == "project" or entry.source in inside
        if not from_project or entry.config is None or entry.disabled_reason:
            continue
        if entry.name in rejected:
            entry.disabled_reason = (
                "project server rejected in your Claude Code settings (disabledMcpjsonServers)"
            )
        elif entry.source in above and entry.name not in enabled:
            entry.disabled_reason = (
                f"project server not trusted: {entry.source} lies above the project root, "
                "which trusting the project does not cover; trust it by name to run it"
            )
        elif not everything and entry.name not in enabled:
            entry.disabled_reason = "project server not trusted: " + hint.format(
                name=entry.name, quoted=repr(entry.name)
            )


def load_config(
    project_dir: str | os.PathLike[str] = ".",
    *,
    trust_project: bool | Iterable[str] = False,
    user_dir: str | os.PathLike[str] | None = None,
    managed_path: str | os.PathLike[str] | None = None,
    config_files: Iterable[str | Path] = (),
    dynamic: Mapping[str, Any] | None = None,
    remote: Callable[[], Mapping[str, Any]] | str | None = None,
    environ: Mapping[str, str] | None = None,
    managed_settings_path: str | os.PathLike[str] | None = None,
    plugins_dir: str | os.PathLike[str] | None = None,
    trust_hint: str = PYTHON_TRUST_HINT,
) -> HubConfig:
    """Read every configuration source and merge them (see the module docstring and
    ``_discovery`` for where files are found).

    Never raises for bad configuration: problems are in ``HubConfig.issues`` and in the
    entries' ``error``.

    Args:
        project_dir: the project whose ``.mcp.json`` and ``.claude/`` are read.
        trust_project: ``True`` to trust every project server, or the names to trust.
        user_dir: the home directory holding ``.claude.json`` and ``.claude/`` (default
            ``~``).
        managed_path: the enterprise file (default: ``default_managed_paths()``, the first
            that exists). A path that does not exist means no enterprise file.
        config_files: explicit files, read as scope ``local`` after the other local
            sources (so they win) and trusted.
        dynamic: servers registered in code: name -> config dict or ``mcp_lite.Server``.
        remote: a callable returning ``{"mcpServers": {...}}``, or a URL to GET it from.
        environ: for ``${VAR}`` expansion and ``CLAUDE_CONFIG_DIR`` (default ``os.environ``).
        managed_settings_path: the managed settings file with the server policy and
            permission rules (default: ``managed-settings.json`` beside the default
            ``managed-mcp.json``).
        plugins_dir: a folder of plugins; each ``<plugin>/.mcp.json`` is read as ``dynamic``.
        trust_hint: what an untrusted project server's reason tells the user to do, with
            ``{name}`` / ``{quoted}`` for its name (default: the ``trust_project=`` argument).
    """
    loader = _Loader(os.environ if environ is None else environ)
    result = loader.result
    places = _discovery.discover(project_dir, user_dir, plugins_dir, loader.environ)
    project = places.project

    if dynamic:
        result.sources.append("dynamic")
        loader.add(_dynamic_document(dynamic), "dynamic", "dynamic", section_only=False)
    for plugin in places.plugins:
        loader.add_file(plugin, "dynamic", section_only=False)
    dynamic_entries, loader.candidates = loader.candidates, []

    managed = [Path(managed_path)] if managed_path is not None else src.default_managed_paths()
    # Present in any form (a broken or refused file included): the enterprise file is in
    # force, and when it cannot be read nothing but in-process servers runs (fail closed).
    managed_file = next((p for p in managed if os.path.lexists(p)), None)
    user_files: list[Any] = []
    if managed_file is not None:
        result.exclusive = True
        loader.add_file(managed_file, "enterprise", section_only=False)
        for entry in dynamic_entries:
            if not isinstance(entry.config, SdkServerConfig):
                _drop(
                    result,
                    entry,
                    f"{managed_file} is in force: only its servers and in-process servers load",
                )
        dynamic_entries = [e for e in dynamic_entries if isinstance(e.config, SdkServerConfig)]
    else:
        claude_json = loader.read(places.claude_json, max_bytes=src.MAX_CLAUDE_JSON_BYTES)
        user_settings = loader.read(places.user_settings)
        claude_source = str(places.claude_json)
        loader.add(user_settings, "user", str(places.user_settings), section_only=True)
        loader.add(claude_json, "user", claude_source, section_only=True)
        key = project
        project_entry = src.project_section(claude_json, project)
        if project_entry is None and places.root != project:
            key, project_entry = places.root, src.project_section(claude_json, places.root)
        loader.add(project_entry, "local", f"{claude_source} projects[{key}]", section_only=True)
        for local in places.local_settings:
            loader.add_file(local, "local", section_only=True, in_project=True)
        for path in config_files:
            path = Path(path)
            data = loader.read(path, explicit=True)
            if data is None and not path.exists():  # a dangling link too
                result.issues.append(ConfigIssue(str(path), None, "file not found"))
            loader.add(data, "local", str(path), section_only=False)
        for mcp_json in places.mcp_json:  # farthest first: the nearest wins
            loader.add_file(mcp_json, "project", section_only=False, in_project=True)
        user_files = [project_entry, user_settings]
        if remote is not None:
            source = src.describe_remote(remote)
            data, error = src.fetch_remote(remote)
            if error is not None:
                result.issues.append(ConfigIssue(source, None, error))
            else:
                result.sources.append(source)
                loader.add(data, "remote", source, section_only=False)

    approvals = src.project_approvals(user_files, trust_project)
    inside = frozenset(str(p) for p in places.local_settings)
    above = frozenset(str(p) for p in places.above_root)
    _merge(result, loader.candidates, dynamic_entries, approvals, inside, trust_hint, above)
    managed_settings = (
        Path(managed_settings_path)
        if managed_settings_path is not None
        else next(
            (p for p in _discovery.default_managed_settings_paths() if os.path.lexists(p)), None
        )
    )
    _discovery.apply_settings(result, places, managed_settings, approvals, result.issues.append)
    result.issues = list(dict.fromkeys(result.issues))  # a file read twice is one issue
    return result


def _merge(
    result: HubConfig,
    candidates: list[ServerEntry],
    dynamic_entries: list[ServerEntry],
    approvals: tuple[bool, set[str], set[str]],
    inside: frozenset[str] = frozenset(),
    hint: str = PYTHON_TRUST_HINT,
    above: frozenset[str] = frozenset(),
) -> None:
    reserved = {e.name: e for e in dynamic_entries if isinstance(e.config, SdkServerConfig)}
    kept: list[ServerEntry] = []
    for entry in candidates:
        holder = reserved.get(entry.name)
        if holder is None:
            kept.append(entry)
            continue
        message = (
            f"server name {entry.name!r} is reserved for an in-process server "
            "registered in code; this entry is ignored"
        )
        result.issues.append(ConfigIssue(entry.source, entry.name, message))
        _drop(result, entry, message)

    manual = _resolve(result, [e for e in kept if e.scope in _MANUAL])
    _apply_trust(manual, approvals, inside, hint, above)
    seen = {sig: e for e in manual.values() if e.usable and (sig := e.signature())}
    survivors = list(manual.values())
    for group in (dynamic_entries, [e for e in kept if e.scope == "remote"]):
        usable: list[ServerEntry] = []
        for entry in group:
            sig = entry.signature()
            twin = seen.get(sig) if sig else None
            if twin is not None:
                _drop(
                    result,
                    entry,
                    f"same content as the {twin.scope} server {twin.name!r} from {twin.source}",
                )
            else:
                usable.append(entry)
        seen.update({sig: e for e in usable if e.usable and (sig := e.signature())})
        survivors.extend(usable)
    winners = _resolve(result, survivors)
    result.servers = dict(sorted(winners.items()))


def import_claude_desktop(path: str | Path | None = None) -> dict[str, Any]:
    """Read Claude Desktop's ``claude_desktop_config.json`` as ``{"mcpServers": {...}}``.

    The entries are returned as written (validate them with ``parse_servers`` or hand the
    result to the Hub); other keys of the file are left out.

    Args:
        path: the file (default: ``_config_sources.claude_desktop_path()`` for this OS).

    Raises:
        ConfigError: the file does not exist, is not JSON, or has no ``mcpServers`` object.
    """
    file = Path(path) if path is not None else src.claude_desktop_path()
    data, error = src.read_json(file, explicit=path is not None)
    if error is not None:
        raise ConfigError(f"{file}: {error}")
    if data is None:
        raise ConfigError(f"Claude Desktop config not found at {file}")
    servers = data.get("mcpServers", {}) if isinstance(data, Mapping) else None
    if not isinstance(servers, Mapping):
        raise ConfigError(f"{file}: 'mcpServers' must be an object")
    return {"mcpServers": {str(name): value for name, value in servers.items()}}
