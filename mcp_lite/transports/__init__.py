"""Transports: blocking I/O that moves framed JSON-RPC messages (see ``base``).

``make_transport`` is the one place that maps a connect target to a transport.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError, McpError
from .base import Outgoing, Transport

__all__ = ["Outgoing", "Transport", "make_transport"]

_REMOTE_TYPES = ("http", "sse", "ws", "sse-ide", "ws-ide", "proxy")


def make_transport(
    target: Any,
    *,
    name: str = "",
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    max_message_size: int | None = None,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
) -> Transport:
    """The transport for a connect target (see ``mcp_lite.connect``).

    Raises:
        ConfigError: the target is not something mcp_lite can connect to.
        McpError: the target needs a transport that is not supported yet.
    """
    from ..server import Server

    if isinstance(target, Server):
        from .inprocess import InProcessTransport

        return InProcessTransport(target, name=name)
    if isinstance(target, str) and "://" in target:
        scheme = target.split("://", 1)[0].lower()
        kind = {"http": "http", "https": "http", "ws": "ws", "wss": "ws"}.get(scheme)
        if kind is None:
            raise ConfigError(f"unsupported URL scheme {scheme!r} in {target!r}")
        return _remote(kind, {"url": target})
    if isinstance(target, Mapping):
        kind = str(target.get("type") or ("stdio" if "command" in target else ""))
        if kind in ("sdk", "in-process"):
            server = target.get("server")
            if not isinstance(server, Server):
                raise ConfigError("an 'sdk' target needs a mcp_lite.Server under 'server'")
            return make_transport(server, name=name)
        if kind in _REMOTE_TYPES:
            return _remote(kind, target)
        if kind != "stdio":
            raise ConfigError(f"unknown server type {kind!r}; expected stdio, "
                              f"{', '.join(_REMOTE_TYPES)} or sdk")
        command = target.get("command")
        if not isinstance(command, str) or not command:
            raise ConfigError("a stdio target needs a non-empty 'command'")
        args = target.get("args") or []
        if not isinstance(args, Sequence) or isinstance(args, str):
            raise ConfigError("'args' must be a list of strings")
        merged_env = {**(target.get("env") or {}), **(env or {})}
        return _stdio([command, *map(str, args)], name, merged_env, target.get("cwd") or cwd,
                      max_message_size)
    if isinstance(target, str) or (isinstance(target, Sequence) and target
                                   and all(isinstance(a, str) for a in target)):
        return _stdio(target, name, env, cwd, max_message_size)
    raise ConfigError(f"cannot connect to {target!r}: expected a command list, a config "
                      "dict, a URL or a mcp_lite.Server")


def _stdio(command: Any, name: str, env: Mapping[str, str] | None,
           cwd: Any, max_message_size: int | None) -> Transport:
    from .stdio import DEFAULT_MAX_MESSAGE_SIZE, StdioTransport

    return StdioTransport(command, env=env, cwd=cwd, name=name,
                          max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE)


def _remote(kind: str, config: Mapping[str, Any]) -> Transport:
    raise McpError(f"the {kind!r} transport is not supported yet in this version of mcp_lite "
                   f"(target {config.get('url')!r}); use a stdio command or an in-process Server")
