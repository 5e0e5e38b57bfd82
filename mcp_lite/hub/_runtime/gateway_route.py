"""The worker side of a gateway: which configured servers a Hub reaches through it (same name, same
``fingerprint``) and which run locally, and how a worker rides out a gateway restart (see
docs/explanation/inside-the-hub.md)."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ... import errors
from ..._deadline import Deadline
from ..._http import peer as _peer
from ..._http.unix import is_unix_url, split_url
from ..._server_config import ServerTarget, normalize_url
from ...errors import (
    ConfigError,
    ConnectError,
    InvalidRequest,
    McpError,
    RequestTimeout,
    RpcError,
    SessionExpired,
    TransportError,
)
from .spec import Spec

__all__ = ["GatewayRoute", "fingerprint", "gateway_of"]

ENV = "MCP_LITE_GATEWAY"
_MAX_LISTING = 1024 * 1024
_STEP_S = 5.0  # the listing fetch's own cap inside the caller's deadline
_PROBE_S = 0.2  # how often a worker looks for a gateway that is down (a refused connect)
_BUSY_RETRIES = 100  # the most; each waits the gateway's Retry-After, within the deadline


# Settings of an entry that change how long a worker waits or how its Hub shows the server,
# not what the server does.
_NEUTRAL = frozenset(
    {
        "type",
        "name",
        "alwaysLoad",
        "disabled",
        "timeout",
        "connectTimeout",
        "readTimeout",
        "idleTimeout",
        "pingInterval",
        "retry",
    }
)


def fingerprint(kind: str, target: Any) -> str | None:
    """The sha256 hex of a server's identity; None for in-process servers.

    What changes what the server does is in it: the transport type; the command and args,
    and the working directory (absolute), of a stdio server; the URL of a remote one; and
    every other setting of the entry (env, headers, authToken, oauth...) by the sha256 of
    its value, so that a worker whose entry differs in any of them (another tenant's key)
    runs it locally. Only timeouts, retry settings and the Hub's own (``alwaysLoad``) are
    left out.
    """
    if kind == "sdk" or not isinstance(target, (Mapping, str, list, tuple)):
        return None
    settings: dict[str, str] = {}
    if isinstance(target, str):
        identity: dict[str, Any] = {"type": kind, "url": normalize_url(target)}
    elif isinstance(target, (list, tuple)):
        identity = {"type": kind, "command": [str(x) for x in target]}
    elif "command" in target or isinstance(target.get("url"), str):
        if "command" in target:
            command = [str(target["command"]), *[str(a) for a in target.get("args") or ()]]
            identity = {"type": kind, "command": command}
            if target.get("cwd"):
                identity["cwd"] = os.path.abspath(os.fspath(target["cwd"]))
            skip = {"command", "args", "cwd"}
        else:
            identity = {"type": kind, "url": normalize_url(target["url"])}
            skip = {"url"}
        for key, value in target.items():
            if key in _NEUTRAL or key in skip or key == _peer.TARGET_KEY:
                continue
            if value is None or (isinstance(value, (Mapping, list, str)) and not value):
                continue  # an empty env or headers is no env or headers
            settings[str(key)] = _digest(value)
    else:
        return None
    if settings:
        identity["settings"] = settings
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(value: Any) -> str:
    """The sha256 of a setting's value (its JSON text), never the value itself."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return hashlib.sha256(b"mcp-lite gateway setting\0" + text.encode()).hexdigest()


def gateway_of(gateway: str | bool | None) -> str | None:
    """The gateway URL a Hub uses: the argument, else ``MCP_LITE_GATEWAY``; False: none."""
    if gateway is False:
        return None
    if gateway is None or gateway is True:
        gateway = os.environ.get(ENV) or None
        if gateway is None:
            return None
    if not is_unix_url(gateway):
        raise ConfigError(f"gateway= takes a unix:// URL (unix:///path.sock), got {gateway!r}")
    split_url(gateway)  # a malformed one fails here, at construction
    return gateway


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float, peers: frozenset[int] | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self._socket_path = path
        self._peers = peers

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
            _peer.check(sock, self._socket_path, self._peers)  # before the GET goes out
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def fetch_listing(
    socket_path: str, deadline: Deadline, peers: frozenset[int] | None = None
) -> dict[str, dict[str, Any]]:
    """``{name: {"name", "fingerprint", "state"}}`` from the gateway's ``GET /servers``
    (``peers``: the uids the process behind the socket may run as, see ``_http.peer``).

    Raises:
        ConnectError: the gateway cannot be reached, runs as another user or answered
            nonsense.
        RequestTimeout: ``deadline`` passed first.
    """
    phase = "fetching the gateway's server list"
    deadline.check(phase, f"the gateway on {socket_path} was not asked")
    conn = _UnixHTTP(socket_path, max(deadline.bound(_STEP_S), 0.001), peers)
    try:
        conn.request("GET", "/servers", headers={"Accept": "application/json"})
        response = conn.getresponse()
        body = response.read(_MAX_LISTING + 1)
    except TimeoutError:
        raise deadline.error(phase, f"the gateway on {socket_path} did not answer") from None
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        error = ConnectError(f"the gateway on {socket_path} is unreachable ({phase}): {why}")
        error.unreachable = True  # type: ignore[attr-defined]  # nothing listens: wait, retry
        raise error from None
    except http.client.HTTPException as exc:
        raise ConnectError(
            f"the gateway on {socket_path} broke the answer ({phase}): {exc}"
        ) from None
    finally:
        conn.close()
    if response.status != 200 or len(body) > _MAX_LISTING:
        error = ConnectError(
            f"the gateway on {socket_path} answered HTTP {response.status} ({phase})"
        )
        if response.status == 503 and response.getheader("Retry-After", "").isdigit():
            # busy: it read nothing; asked again after the wait it names (see _fetch)
            error.retry_after = float(response.getheader("Retry-After", "1"))  # type: ignore[attr-defined]
        raise error
    try:
        servers = json.loads(body)["servers"]
        return {s["name"]: s for s in servers if isinstance(s, dict) and "name" in s}
    except (ValueError, KeyError, TypeError):
        raise ConnectError(f"the gateway on {socket_path} sent no server list ({phase})") from None


class GatewayRoute:
    """Decides, per server, the gateway or a local start; caches the gateway's listing."""

    def __init__(self, url: str, user: str | int | None = None) -> None:
        self.url = url.rstrip("/")
        self.socket_path, _ = split_url(self.url)
        self.peers = _peer.allowed_uids(user)  # who the gateway's process may run as
        # each spec's fingerprint, asked on every call (``via``): by the spec object itself
        self._marks: dict[int, tuple[Spec, str | None]] = {}
        self._lock = threading.Lock()
        self._listing: dict[str, dict[str, Any]] | None = None
        self._known: dict[str, dict[str, Any]] | None = None  # the last listing, for ``via``
        self._down_at = float("-inf")  # when the gateway was last found unreachable

    def route(self, spec: Spec, deadline: Deadline) -> Spec:
        """``spec`` itself (local), or a copy whose target is the gateway's endpoint.

        Raises:
            ConnectError: the gateway stayed unreachable until ``deadline``, or answered
                nonsense.
        """
        mine = self._mark(spec)
        if mine is None:
            return spec
        listing = self.listing(deadline)
        theirs = listing.get(spec.name)
        if theirs is None or theirs.get("fingerprint") != mine:
            return spec
        url = f"unix://{self.socket_path}/servers/{spec.name}/mcp"
        # Built here, not read from a config: taken as is (``ServerTarget``), its peer rule
        # included (a frozenset, which no config file can hold). A busy gateway (503 with
        # Retry-After: the request was not read) is waited out for as long as the caller's
        # deadline allows, not a fixed number of times.
        target = ServerTarget(
            type="http",
            url=url,
            retry={"attempts": _BUSY_RETRIES},
            **{_peer.TARGET_KEY: self.peers},
        )
        return replace(spec, type="http", target=target)

    def listing(self, deadline: Deadline) -> dict[str, dict[str, Any]]:
        """The gateway's listing: the one kept, else fetched now (waiting for a gateway
        that is down within ``deadline``) and kept.

        Raises:
            ConnectError: as ``route``.
        """
        listing = self._listing
        if listing is None:
            listing = self._fetch(deadline)
            with self._lock:
                self._listing = self._known = listing
        return listing

    def needs_listing(self, spec: Spec) -> bool:
        """True when routing ``spec`` would fetch the listing first (none is kept)."""
        return self._listing is None and self._mark(spec) is not None

    def _mark(self, spec: Spec) -> str | None:
        """``fingerprint`` of ``spec``, computed once per spec object."""
        known = self._marks.get(id(spec))
        if known is not None and known[0] is spec:
            return known[1]
        mark = fingerprint(spec.type, spec.target)
        if len(self._marks) >= 1024:  # bounded: specs replaced by update() are dropped
            self._marks.clear()
        self._marks[id(spec)] = (spec, mark)
        return mark

    def _fetch(self, deadline: Deadline) -> dict[str, dict[str, Any]]:
        """The listing; a gateway nobody listens for (restarting) is asked again every
        ``_PROBE_S``, a busy one (503) after its ``Retry-After``, while ``deadline`` leaves
        time, then the last error stands."""
        while True:
            try:
                return fetch_listing(self.socket_path, deadline, self.peers)
            except ConnectError as exc:
                down = getattr(exc, "unreachable", False)
                if down:
                    self._down_at = time.monotonic()
                wait = _PROBE_S if down else None
                wait = getattr(exc, "retry_after", wait)  # busy: its Retry-After
                if wait is None or deadline.remaining() <= wait:
                    raise
            time.sleep(wait)

    def via(self, spec: Spec) -> str | None:
        """``"gateway"`` or ``"local"``; None before the gateway's listing was first fetched.
        While it is fetched again (the gateway failed, may have restarted) the last known
        listing answers: the path a server took until then, and most likely takes again."""
        listing = self._known
        mine = self._mark(spec)
        if mine is None:
            return "local"
        if listing is None:
            return None
        theirs = listing.get(spec.name)
        return "gateway" if theirs is not None and theirs.get("fingerprint") == mine else "local"

    def resendable(self, exc: McpError) -> bool:
        """True when a request through the gateway failed before the gateway ran it, so a
        new connection may send it again: the gateway did not know the session (it
        restarted), refused the request as malformed for its state (-32600: a fresh
        gateway serves a 2026-07-28 connection only once its upstream is up), or the
        request was never written (``unsent``)."""
        if isinstance(exc, SessionExpired) or getattr(exc, "unsent", False):
            return True
        return isinstance(exc, InvalidRequest) and exc.data is None

    def adopt(self, client: Any) -> None:
        """``client`` (connected through the gateway) keeps each request's own outcome,
        which ``resendable`` reads: a 404 on its session lets the other requests in flight
        end with their own answers (``drain_on_expiry``), and a 2026-07-28 request whose
        answer stream broke is not re-issued (the gateway may have run it)."""
        client._reissue_broken = False
        transport = client.transport
        if transport is not None and hasattr(transport, "drain_on_expiry"):
            transport.drain_on_expiry = True

    def listening(self) -> bool:
        """True when something accepts connections on the gateway's socket (no I/O beyond
        a local connect, which a Unix socket answers at once)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(0.5)
            sock.connect(self.socket_path)
            return True
        except OSError:
            return False
        finally:
            sock.close()

    def unreachable(self, exc: McpError, phase: str) -> McpError:
        """``exc`` (a transport failure through the gateway) as the same class, its message
        saying the gateway on its socket could not be reached in ``phase``."""
        if not isinstance(exc, TransportError) or "the gateway on " in str(exc):
            return exc
        if getattr(exc, "refused_peer", False):  # it is reachable: another user's process
            return exc
        try:
            error = type(exc)(
                f"the gateway on {self.socket_path} is unreachable ({phase}): {exc}",
                *exc.args[1:],
            )
        except TypeError:  # a class with another constructor: keep the original
            return exc
        return error

    def timed_out(self, exc: McpError, phase: str) -> McpError:
        """``exc`` itself; a ``RequestTimeout`` of a call that spent part of its time
        waiting for the gateway (found down within the call's timeout) says so, naming
        the gateway's socket: the wait, not the server, took its time."""
        if not isinstance(exc, RequestTimeout) or "the gateway on " in str(exc):
            return exc
        span = exc.timeout if isinstance(exc.timeout, (int, float)) else 0.0
        if time.monotonic() - self._down_at > span:
            return exc
        return RequestTimeout(
            f"the gateway on {self.socket_path} was unreachable for part of the call "
            f"({phase}): {exc}",
            exc.timeout,
        )

    def local_error(self, exc: McpError) -> McpError:
        """The gateway's failure (its JSON-RPC error with ``data.error``, the mcp_lite class
        the gateway met) as that class, so a caller sees what a local server would give."""
        data = getattr(exc, "data", None)
        if (
            not isinstance(exc, RpcError)
            or exc.code != -32603
            or not isinstance(data, dict)
            or not {"server", "phase", "error"} <= data.keys()
        ):
            return exc
        name = data.get("error")
        cls = getattr(errors, name, None) if name in errors.__all__ else None
        if not isinstance(cls, type) or not issubclass(cls, McpError) or issubclass(cls, RpcError):
            return exc
        return cls(exc.message)

    def forget(self) -> None:
        """Fetch the listing again on the next connect (the gateway may have restarted with
        another config); ``via`` keeps answering from the last one meanwhile."""
        with self._lock:
            self._listing = None
