"""``make_transport``: the one place that maps a connect target to a transport, merging and
checking its headers (a ``headersHelper``'s included), warning about headers sent in clear
text, and giving a remote server without credentials the tokens ``mcp-lite auth`` stored.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .. import _fork
from .._deadline import Deadline
from .._secrets import check_headers, plain_text_off_loopback, redact_url
from ..errors import ConfigError
from .base import Transport

__all__ = ["make_transport"]

_REMOTE_TYPES = ("http", "sse", "ws", "sse-ide", "ws-ide", "proxy")

log = logging.getLogger("mcp_lite.transports")
_warned_plain: set[str] = set()
_warned_lock = threading.Lock()


@_fork.on_child
def _reset_after_fork() -> None:
    global _warned_lock
    _warned_lock = threading.Lock()  # a parent thread may have held it at fork time


def make_transport(
    target: Any,
    *,
    name: str = "",
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    max_message_size: int | None = None,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    retry: Any = None,
    deadline: Deadline | None = None,
) -> Transport:
    """The transport for a connect target (see ``mcp_lite.connect``).

    ``deadline``: the connect's, which a config's ``headersHelper`` runs within (default: the
    config's ``connectTimeout``).

    A string is a URL with a scheme (``http``, ``https``, ``ws``, ``wss``), never a command:
    a command is a list (``["python", "srv.py"]``) or a config dict, so that a mistyped
    or untrusted URL can never start a process.

    Raises:
        ConfigError: the target is not something mcp_lite can connect to.
    """
    # A Server object can only exist once its module was imported: don't import it (and
    # its dependencies) just to find out that the target is something else.
    server_module = sys.modules.get("mcp_lite.server")
    Server = server_module.Server if server_module is not None else None
    if Server is not None and isinstance(target, Server):
        from .inprocess import InProcessTransport

        return InProcessTransport(target, name=name)
    if isinstance(target, str):
        kind = _url_kind(target)
        return _remote(
            kind,
            {"url": target},
            name=name,
            headers=headers,
            auth=auth,
            max_message_size=max_message_size,
            retry=retry,
        )
    if isinstance(target, Mapping):
        kind = str(target.get("type") or ("stdio" if "command" in target else ""))
        if kind in ("sdk", "in-process"):
            server = target.get("server")
            if Server is None or not isinstance(server, Server):
                raise ConfigError("an 'sdk' target needs a mcp_lite.Server under 'server'")
            return make_transport(server, name=name)
        if kind in _REMOTE_TYPES:
            return _remote(
                kind,
                target,
                name=name,
                headers=headers,
                auth=auth,
                max_message_size=max_message_size,
                retry=retry,
                deadline=deadline,
            )
        if kind != "stdio":
            raise ConfigError(
                f"unknown server type {kind!r}; expected stdio, {', '.join(_REMOTE_TYPES)} or sdk"
            )
        command = target.get("command")
        if not isinstance(command, str) or not command:
            raise ConfigError("a stdio target needs a non-empty 'command'")
        args = target.get("args") or []
        if not isinstance(args, Sequence) or isinstance(args, str):
            raise ConfigError("'args' must be a list of strings")
        merged_env = {**(target.get("env") or {}), **(env or {})}
        return _stdio(
            [command, *map(str, args)], name, merged_env, target.get("cwd") or cwd, max_message_size
        )
    if isinstance(target, Sequence) and target and all(isinstance(a, str) for a in target):
        return _stdio(list(target), name, env, cwd, max_message_size)
    raise ConfigError(
        f"cannot connect to {target!r}: expected a command list, a config "
        "dict, a URL or a mcp_lite.Server"
    )


def _url_kind(target: str) -> str:
    """``http`` or ``ws`` for a URL string; ``ConfigError`` for anything else."""
    scheme, sep, rest = target.strip().partition("://")
    kind = {"http": "http", "https": "http", "ws": "ws", "wss": "ws"}.get(scheme.lower())
    if sep and kind is not None and rest and not rest.startswith("/"):
        return kind
    if sep and scheme.lower() == "unix" and rest:  # Streamable HTTP over a Unix socket
        return "http"
    if sep:
        raise ConfigError(
            f"unsupported URL {redact_url(target)!r}: expected http://, https://, ws://, "
            "wss:// or unix://"
        )
    raise ConfigError(
        f"{redact_url(target)!r} is not a URL: a string target must be a URL with a scheme "
        "(http://, https://, ws://, wss://); to run a command, pass a list such as "
        '["python", "server.py"] or a config dict {"command": ..., "args": [...]}'
    )


def _stdio(
    command: Any, name: str, env: Mapping[str, str] | None, cwd: Any, max_message_size: int | None
) -> Transport:
    from .stdio import DEFAULT_MAX_MESSAGE_SIZE, StdioTransport

    return StdioTransport(
        command,
        env=env,
        cwd=cwd,
        name=name,
        max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE,
    )


def _remote(
    kind: str,
    config: Mapping[str, Any],
    *,
    name: str = "",
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    max_message_size: int | None = None,
    retry: Any = None,
    deadline: Deadline | None = None,
) -> Transport:
    """A remote transport from a config entry (keys as in Claude Code's ``mcpServers``).

    Keys: ``url`` (required), ``headers``; ``sse-ide``/``ws-ide``: ``authToken`` (sent by
    ``ws-ide`` in ``authHeaderName``, default ``X-Claude-Code-Ide-Authorization``); ``proxy``:
    ``auth``/``token_provider`` (a bearer-token provider). Optional ``connectTimeout``,
    ``readTimeout``, ``idleTimeout``, ``pingInterval`` (WebSocket; seconds); ``retry`` (HTTP:
    ``false``, or ``{"attempts", "backoff", "max_backoff", "max_retry_after"}``).
    ``headersHelper``: a shell command printing a JSON object of headers, run now (within
    ``deadline``) and merged over ``headers``. ``headers``/``auth``/``retry`` arguments (from
    ``connect``) override the config's.
    """
    from .._http.auth import as_auth
    from .._http.retry import as_retry
    from .._http.session import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, HttpOptions

    url = config.get("url")
    if not isinstance(url, str) or "://" not in url:
        shown = redact_url(url) if isinstance(url, str) else url
        raise ConfigError(f"a {kind!r} server needs a 'url' like http://host/path, got {shown!r}")
    scheme = url.split("://", 1)[0].lower()
    want = ("ws", "wss") if kind in ("ws", "ws-ide") else ("http", "https")
    unix = scheme == "unix" and kind == "http"
    if unix:
        _check_unix(url, auth if auth is not None else config.get("auth"), config.get("oauth"))
    elif scheme not in want:
        raise ConfigError(
            f"a {kind!r} server needs a {' or '.join(want)} URL, got {redact_url(url)!r}"
        )
    check_headers(config.get("headers"))
    check_headers(headers)
    merged = {str(k): str(val) for k, val in (config.get("headers") or {}).items()}
    given = {str(k): str(val) for k, val in (headers or {}).items()}
    if auth is None and kind in ("http", "sse", "proxy"):
        auth = config.get("auth") or config.get("token_provider") or config.get("tokenProvider")
    connect_timeout = float(config.get("connectTimeout") or DEFAULT_CONNECT_TIMEOUT)
    helper = config.get("headersHelper")
    # Named in the warning: never what the helper printed, not even its header names.
    named = [*merged, *given, *(["Authorization"] if isinstance(auth, str) else [])]
    if helper:
        from ._headers_helper import run_headers_helper

        named.append("(those its headersHelper prints)")
        made = run_headers_helper(
            str(helper), server=name, url=url, deadline=Deadline.of(deadline, connect_timeout)
        )
        merged.update(made)
    merged.update(given)
    if named:
        _warn_plain_text(url, named)
    if auth is None and kind in ("http", "sse") and not unix and not _has_authorization(merged):
        auth = _stored_oauth(url, config.get("oauth"))
    if kind == "proxy" and auth is None:
        raise ConfigError("a 'proxy' server needs a bearer-token provider under 'auth'")
    if kind in ("ws", "ws-ide"):
        from .websocket import WebSocketTransport

        if kind == "ws-ide" and config.get("authToken"):
            header = str(config.get("authHeaderName") or "X-Claude-Code-Ide-Authorization")
            merged[header] = str(config["authToken"])
            check_headers({header: merged[header]})
        ping = config.get("pingInterval", 20.0)
        return WebSocketTransport(
            url,
            headers=merged,
            auth=as_auth(auth),
            name=name,
            connect_timeout=connect_timeout,
            ping_interval=float(ping) if ping else None,
            max_message_size=max_message_size or 64 * 1024 * 1024,
        )
    idle = config.get("idleTimeout")
    options = HttpOptions(
        url=url,
        headers=merged,
        auth=None if kind == "sse-ide" else as_auth(auth),
        name=name,
        connect_timeout=connect_timeout,
        read_timeout=float(config.get("readTimeout") or DEFAULT_READ_TIMEOUT),
        idle_timeout=float(idle) if idle else None,
        max_message_size=max_message_size or 64 * 1024 * 1024,
        retry=as_retry(retry if retry is not None else config.get("retry")),
        peer_uids=_peer_uids(config) if unix else None,
    )
    if kind in ("sse", "sse-ide"):
        from .sse import SseTransport

        return SseTransport(options)
    from .http import HttpTransport

    # No legacy-SSE fallback over a Unix socket: its endpoint event names a TCP URL.
    return HttpTransport(options, fallback_to_sse=kind == "http" and not unix)


def _check_unix(url: str, auth: Any, oauth: Any) -> None:
    """A ``unix://`` URL: a socket path ``_http.unix`` accepts, and no OAuth (the socket
    file's mode is the access control; a gateway holds the OAuth tokens of its servers)."""
    from .._http.unix import split_url
    from ..auth import OAuth

    split_url(url)
    if isinstance(auth, OAuth) or oauth:
        raise ConfigError(
            f"OAuth is not used over a Unix socket ({redact_url(url)}): the socket file's "
            "permissions decide who may connect, and a gateway keeps the OAuth tokens of "
            "the servers it runs; give static headers if the server wants some"
        )


def _peer_uids(config: Mapping[str, Any]) -> frozenset[int] | None:
    """The uids a Hub allows behind its gateway's socket (``_http.peer.TARGET_KEY``); only a
    frozenset counts, which no JSON config can hold: a config file cannot widen the rule."""
    from .._http.peer import TARGET_KEY

    uids = config.get(TARGET_KEY)
    return uids if isinstance(uids, frozenset) else None


def _has_authorization(headers: Mapping[str, str]) -> bool:
    return any(key.lower() == "authorization" for key in headers)


def _warn_plain_text(url: str, names: Sequence[str]) -> None:
    """One warning per server origin and process: static headers (their names, never their
    values) are about to travel unencrypted to another machine."""
    if not plain_text_off_loopback(url):
        return
    origin = redact_url(url).split("/", 3)[:3]
    key = "/".join(origin)
    with _warned_lock:
        if key in _warned_plain:
            return
        _warned_plain.add(key)
    log.warning(
        "mcp-lite: the header(s) %s configured for %s are sent over plain %s to a host "
        "that is not this machine: anyone on the way can read them (use https/wss)",
        ", ".join(sorted(set(names))),
        key,
        url.split(":", 1)[0].lower(),
    )


def _stored_oauth(url: str, settings: Any) -> Any:
    """OAuth for a remote server configured without credentials: it sends the tokens saved by
    ``mcp-lite auth`` (refreshing them when due) and, with nobody to ask, turns a 401 into
    ``AuthRequired``. None when OAuth cannot apply: over plain http to another machine OAuth
    never runs (a server there that needs no authorization works all the same)."""
    if plain_text_off_loopback(url):
        return None
    from ..auth import OAuth
    from ..errors import AuthRequired

    options = settings if isinstance(settings, Mapping) else {}
    try:
        return OAuth(
            url,
            client_id=options.get("clientId"),
            scope=" ".join(options["scopes"]) if isinstance(options.get("scopes"), list) else None,
            open_browser=False,
        )
    except (ConfigError, AuthRequired):
        return None
