"""The ``MCP_LITE`` settings mapping of the Django and Flask integrations: either the servers
themselves (trusted like code) or a project's ``.mcp.json`` read with the Hub's rules, plus
the ``Hub`` options; checked and turned into a Hub here (see docs/guides/web-apps.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError, McpError

if TYPE_CHECKING:
    from ..hub import Hub

__all__ = ["Problem", "check_settings", "hub_from_settings"]

_SOURCES = ("servers", "mcp_json", "project_dir", "config_files")
_LOADING = frozenset({"trust_project", "user_dir", *_SOURCES})
_HUB = frozenset(
    {
        "allow",
        "deny",
        "default_permission",
        "client_options",
        "output_dir",
        "max_output_tokens",
        "backoff",
        "auth_cache_path",
        "auth_cache",
        "event_hooks",
        "elicitation_timeout",
        "always_load",
    }
)
KEYS = _LOADING | _HUB


@dataclass(frozen=True)
class Problem:
    """One finding of ``check_settings``: an ``error`` stops the Hub from being built."""

    level: Literal["error", "warning"]
    message: str
    hint: str | None = None
    server: str | None = None


def _shape_problems(settings: Any) -> list[Problem]:
    if not isinstance(settings, Mapping):
        return [Problem("error", f"MCP_LITE must be a dict, not {type(settings).__name__}")]
    problems = []
    for key in settings:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), sorted(KEYS), n=1)
            problems.append(
                Problem(
                    "error",
                    f"MCP_LITE: unknown key {key!r}",
                    f"did you mean {close[0]!r}?"
                    if close
                    else f"known keys: {', '.join(sorted(KEYS))}",
                )
            )
    given = [k for k in _SOURCES if settings.get(k)]
    if not given:
        problems.append(
            Problem(
                "error",
                "MCP_LITE names no servers",
                'add "servers": {name: {...}} or "mcp_json": "<path to .mcp.json>"',
            )
        )
    if "servers" in given and len(given) > 1:
        problems.append(
            Problem("error", f"MCP_LITE: 'servers' cannot be combined with {given[1]!r}")
        )
    servers = settings.get("servers")
    if servers is not None and not isinstance(servers, Mapping):
        problems.append(Problem("error", "MCP_LITE['servers'] must be a dict {name: entry}"))
    mcp_json = settings.get("mcp_json")
    if mcp_json:
        path = Path(mcp_json).expanduser()
        if path.name != ".mcp.json":
            problems.append(
                Problem(
                    "error",
                    f"MCP_LITE['mcp_json'] must name a project's .mcp.json, not {path.name!r}",
                    "an explicit config file goes in 'config_files' (it is trusted as is)",
                )
            )
        elif not path.is_file():
            problems.append(Problem("error", f"MCP_LITE['mcp_json']: {path} does not exist"))
    return problems


def _build(settings: Mapping[str, Any]) -> Hub:
    from ..hub import Hub

    options = {k: settings[k] for k in _HUB if k in settings}
    if settings.get("servers"):
        return Hub({"mcpServers": dict(settings["servers"])}, **options)
    mcp_json = settings.get("mcp_json")
    project_dir = Path(mcp_json).expanduser().parent if mcp_json else settings.get("project_dir")
    loading: dict[str, Any] = {
        "trust_project": settings.get("trust_project", False),
        "config_files": [Path(p) for p in settings.get("config_files") or ()],
    }
    if settings.get("user_dir"):
        loading["user_dir"] = settings["user_dir"]
    return Hub.from_config(project_dir=project_dir or ".", **loading, **options)


def check_settings(settings: Any) -> list[Problem]:
    """Validate ``MCP_LITE`` without connecting to anything: unknown keys, missing or
    conflicting sources, invalid entries, untrusted project servers."""
    problems = _shape_problems(settings)
    if any(p.level == "error" for p in problems):
        return problems
    try:
        hub = _build(settings)
    except (McpError, TypeError, ValueError, OSError) as exc:
        return [*problems, Problem("error", f"MCP_LITE: {exc}")]
    try:
        named: set[str] = set()
        for issue in hub.issues:
            server = getattr(issue, "server", None)
            source = getattr(issue, "source", "MCP_LITE")
            where = f"server {server!r} ({source})" if server else str(source)
            problems.append(
                Problem("error", f"{where}: {getattr(issue, 'message', issue)}", server=server)
            )
            if server:
                named.add(server)
        for name, status in hub.status().items():
            if status.state == "failed" and status.error:
                if name not in named:
                    problems.append(
                        Problem("error", f"server {name!r}: {status.error}", server=name)
                    )
            elif status.state == "disabled" and status.error:
                hint = None
                if "not trusted" in status.error:
                    hint = (
                        f'trust it in settings: "trust_project": [{name!r}] '
                        "(only for a .mcp.json you have read)"
                    )
                problems.append(
                    Problem("warning", f"server {name!r} will not run: {status.error}", hint, name)
                )
    finally:
        hub.close()
    return problems


def hub_from_settings(settings: Any) -> Hub:
    """A Hub (not connected yet) for ``MCP_LITE``.

    Raises:
        ConfigError: the settings have errors (``check_settings`` lists them all).
    """
    errors = [p for p in _shape_problems(settings) if p.level == "error"]
    if errors:
        raise ConfigError("; ".join(p.message + (f" ({p.hint})" if p.hint else "") for p in errors))
    return _build(settings)
