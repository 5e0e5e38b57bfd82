"""How a configuration becomes what the Hub runs: a ``Spec`` per server (with the server
policy applied), the issues, and the servers' ``alwaysLoad`` settings. Kept apart from
``hub`` so that the Hub stays a thin front."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ...errors import ConfigError, McpError
from .._runtime.spec import Spec, make_spec
from .policy import ServerPolicy

__all__ = ["HUB_OPTIONS", "always_load_of", "env_seconds", "police", "specs_of"]

# Options of Hub.from_config that belong to the Hub rather than to load_config.
HUB_OPTIONS = frozenset(
    {
        "default_permission",
        "elicitation_hooks",
        "elicitation_handler",
        "sampling_handler",
        "output_dir",
        "media",
        "max_output_tokens",
        "client_options",
        "backoff",
        "auth_cache_path",
        "auth_cache",
        "elicitation_timeout",
        "event_hooks",
        "always_load",
        "allowed_servers",
        "denied_servers",
        "max_output_file_bytes",
        "idle_timeout",
        "max_lifetime",
        "gateway",
        "gateway_user",
        "extensions",
    }
)


def police(specs: Iterable[Spec], policies: Iterable[ServerPolicy]) -> list[Spec]:
    """``specs`` with every server a policy blocks disabled, the reason naming the policy."""
    policies = [p for p in policies if not p.empty]
    out: list[Spec] = []
    for spec in specs:
        for policy in policies:
            reason = policy.blocked_target(spec.name, spec.type, spec.target)
            if reason is not None:
                spec = dataclasses.replace(spec, disabled_reason=reason)
                break
        out.append(spec)
    return out


def specs_of(config: Any) -> tuple[list[Spec], list[Any]]:
    """The servers of a ``HubConfig`` or of a mapping, and the config issues."""
    if hasattr(config, "servers") and hasattr(config, "issues"):
        specs = [_spec_from_entry(e) for e in config.servers.values()]
        return specs, list(config.issues)
    if not isinstance(config, Mapping):
        raise ConfigError(
            "Hub wants a HubConfig or a mapping like {'mcpServers': {...}}, "
            f"not {type(config).__name__}"
        )
    from ...server import Server
    from . import parse_servers

    servers = config.get("mcpServers", config) if "mcpServers" in config else config
    if not isinstance(servers, Mapping):
        raise ConfigError("'mcpServers' must be a mapping of server names to entries")
    document = {
        str(name): {"type": "sdk", "name": str(name), "server": value}
        if isinstance(value, Server)
        else value
        for name, value in servers.items()
    }
    entries, issues = parse_servers({"mcpServers": document}, "dynamic", "<code>")
    return [_spec_from_entry(e) for e in entries.values()], list(issues)


def always_load_of(config: Any) -> dict[str, bool | frozenset[str]]:
    """``{server: True | tool names}`` from entries carrying ``"alwaysLoad"``."""
    if hasattr(config, "servers"):
        raw = {
            name: (getattr(e.config, "model_extra", None) or {}).get("alwaysLoad")
            for name, e in config.servers.items()
        }
    elif isinstance(config, Mapping):
        servers = config.get("mcpServers", config)
        raw = {
            str(n): v.get("alwaysLoad") if isinstance(v, Mapping) else None
            for n, v in (servers.items() if isinstance(servers, Mapping) else ())
        }
    else:
        return {}
    out: dict[str, bool | frozenset[str]] = {}
    for name, value in raw.items():
        if value is True:
            out[name] = True
        elif isinstance(value, list):
            out[name] = frozenset(str(v) for v in value)
    return out


def _spec_from_entry(entry: Any) -> Spec:
    error: str | None = entry.error
    target: Any = None
    if error is None:
        try:
            target = entry.target()
        except (McpError, ValueError, TypeError) as exc:
            error = str(exc)
    config = getattr(entry, "config", None)
    kind = getattr(config, "type", None)
    return make_spec(
        entry.name,
        entry.scope,
        target,
        type=str(kind) if kind else None,
        source=str(entry.source),
        disabled_reason=entry.disabled_reason,
        error=error,
        timeout=getattr(config, "timeout", None),
        idle_timeout=getattr(config, "idleShutdown", None),
        max_lifetime=getattr(config, "maxLifetime", None),
        extensions=getattr(config, "extensions", None),
    )


def env_seconds(name: str, environ: Mapping[str, str]) -> float | None:
    """``environ[name]`` read as milliseconds (as Claude Code reads ``MCP_TIMEOUT`` and
    ``MCP_TOOL_TIMEOUT``) and returned in seconds; None when unset or not a positive number."""
    raw = environ.get(name, "").strip()
    try:
        ms = float(raw)
    except ValueError:
        return None
    return ms / 1000 if ms > 0 else None
