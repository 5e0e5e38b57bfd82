"""``Gateway``: one Hub's servers, served to every process of the machine on a Unix
socket (``/servers/<name>/mcp`` per server, ``GET /servers`` for the list with each
server's fingerprint). The socket is 0600 (``group=``: 0660) in a folder nobody else can
write, and each connection's peer is checked with ``SO_PEERCRED``. How it works:
``docs/explanation/inside-the-hub.md``."""

from __future__ import annotations

import contextlib
import errno
import grp
import itertools
import logging
import os
import socket
import struct
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote, urlsplit

from ..client import Client
from ..events import Event
from ..hub._runtime.gateway_route import fingerprint
from ..hub.hub import Hub
from ..server.http.endpoint import App
from ..server.http.handler import Handler
from ..server.http.server import HttpServer
from ..transports.stdio import DEFAULT_MAX_MESSAGE_SIZE
from .asks import (
    Answers,
    Unroutable,
    declares,
    needed_capability,
)
from .forwarding import _Endpoint, _NoServer
from .session import _Forwarder
from .socket_folder import check_folder, holder
from .task_owners import TaskOwners, enter_peer

__all__ = ["Gateway"]

log = logging.getLogger("mcp_lite.gateway")

MAX_INFLIGHT = 1024  # forwarded requests at once, every session together
# A request body may be as large as a worker's client takes a message by default (stdio or
# HTTP), so a call that works on a server run by the worker works through the gateway.
MAX_BODY = DEFAULT_MAX_MESSAGE_SIZE
_WORKERS = 64
_SO_PEERCRED = getattr(socket, "SO_PEERCRED", None)
_BROADCAST = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/updated",
        "notifications/message",
    }
)


class _GatewayHandler(Handler):
    """The small server's HTTP handler, routed by path, with a peer check."""

    gateway: Gateway

    def handle(self) -> None:
        enter_peer(_peer_uid(self.connection))  # whose tasks this connection sees
        if not self.gateway._peer_allowed(self.connection):
            with contextlib.suppress(OSError):
                self.connection.sendall(
                    b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            return
        super().handle()

    _route: tuple[str, str, App] | None = None  # this connection's last path, name, app

    def _path_ok(self) -> bool:
        # No Origin check: a browser cannot reach a Unix socket, and the peer is checked.
        route = self._route
        # the path of this connection's last request: its app, while still the gateway's
        # (a closing gateway drops its apps: then the general way below)
        if (
            route is not None
            and route[0] == self.path
            and self.gateway._apps.get(route[1]) is route[2]
        ):
            self.app = route[2]
            return True
        parts = urlsplit(self.path).path.rstrip("/").split("/")
        if len(parts) == 4 and parts[1] == "servers" and parts[3] == "mcp":
            name = unquote(parts[2])
            app = self.gateway._app(name)
            if app is not None:
                self.app = app
                self._route = (self.path, name, app)
                return True
            message = f"Not Found: the gateway has no MCP server {unquote(parts[2])!r}"
        else:
            message = "Not Found: the gateway serves /servers and /servers/<name>/mcp"
        self._plain(
            404, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
        )
        return False

    def do_GET(self) -> None:
        if urlsplit(self.path).path.rstrip("/") == "/servers":
            self._plain(200, {"servers": self.gateway.servers()})
            return
        super().do_GET()


class Gateway:
    """Serve every server of ``hub`` on a Unix socket, for every process of the machine.

    ``serve(socket=PATH)`` blocks until ``close()`` (or Ctrl-C); ``start(socket=PATH)``
    returns once listening (a background thread); both take ``mode`` (default 0600) and
    ``group`` (a group name or id: the socket is chgrp'ed and 0660, and that group's
    members may connect). ``close()`` stops listening, removes the socket file and closes
    the Hub (every server it started); it is bounded and idempotent.

    Args:
        hub: the servers to share; its config's OAuth tokens are the ones used.
        connect_timeout: seconds for starting a server on its first use.
        request_timeout: the cap of one forwarded request (a worker that gives up sooner
            closes its stream, which withdraws the request upstream).
    """

    def __init__(
        self, hub: Hub, *, connect_timeout: float = 30.0, request_timeout: float = 3600.0
    ) -> None:
        self.hub = hub
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.socket_path: str | None = None
        self._lock = threading.Lock()
        self._apps: dict[str, App] = {}
        self._pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="mcp-lite-gateway")
        self._slots = threading.BoundedSemaphore(MAX_INFLIGHT)
        self._http: HttpServer | None = None
        self._uid = os.getuid()
        self._gid: int | None = None
        self._closed = threading.Event()
        # The gateway's Hub runs its servers itself, even with MCP_LITE_GATEWAY set (it
        # would otherwise forward to itself).
        hub._conns.route = None
        # Hear every upstream notification with the server that sent it: an event hook on
        # the Clients the Hub makes from now on (the Hub's own hooks are kept).
        options = hub._conns._client_options
        hooks = dict(options.get("event_hooks") or {})
        hooks["notification"] = (*hooks.get("notification", ()), self._upstream_notification)
        options["event_hooks"] = hooks
        # forwarded requests' progress, by (server, the gateway's own token)
        self._progress: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {}
        self._tokens = itertools.count(1)
        self._task_owners = TaskOwners()
        # a server's requests to its client go to the worker whose call made them
        self._answers = Answers()
        hub._conns.server_requests = self._asking_handlers

    @property
    def url(self) -> str:
        """``unix://<socket>``: what ``Hub(gateway=...)`` and ``MCP_LITE_GATEWAY`` take."""
        if self.socket_path is None:
            raise RuntimeError("the gateway is not started")
        return f"unix://{self.socket_path}"

    def start(
        self,
        socket: str | os.PathLike[str],
        *,
        mode: int = 0o600,
        group: str | int | None = None,
    ) -> Gateway:
        """Listen on ``socket`` and serve on a background thread; returns self.

        Raises:
            ConfigError: the socket's folder is not one only this user (and root) can
                write (``_gateway_socket.check_folder``).
            FileExistsError: the path is held (a process listens there, or it is not a
                socket); the message names who holds it. A stale socket file is replaced.
            KeyError: an unknown ``group``.
        """
        if self._http is not None or self._closed.is_set():
            raise RuntimeError("a Gateway starts once (make a new one after close())")
        path = os.fspath(socket)
        gid = None if group is None else _gid_of(group)
        check_folder(path)
        handler = type("GatewayHandler", (_GatewayHandler,), {"gateway": self})
        try:
            http = HttpServer(
                _NoServer(), "", 0, False, MAX_BODY,
                socket_path=path, socket_mode=mode, handler=handler,
            )  # fmt: skip
        except (FileExistsError, PermissionError):
            who = holder(path)  # a live socket (ours or not), or another kind of file
            if who is None:
                raise
            raise FileExistsError(
                errno.EADDRINUSE, f"{path} is held by {who}; not replaced", path
            ) from None
        if gid is not None:
            os.chown(path, -1, gid)
            os.chmod(path, 0o660)
        self._gid, self._http, self.socket_path = gid, http, path
        return self

    def serve(
        self,
        socket: str | os.PathLike[str],
        *,
        mode: int = 0o600,
        group: str | int | None = None,
    ) -> None:
        """``start`` and block until ``close()`` or KeyboardInterrupt, then close."""
        self.start(socket, mode=mode, group=group)
        try:
            self.serve_forever()
        finally:
            self.close()

    def serve_forever(self) -> None:
        """Block until ``close()`` (from another thread) or KeyboardInterrupt."""
        while not self._closed.wait(0.5):
            pass

    def servers(self) -> list[dict[str, Any]]:
        """The listing of ``GET /servers`` (servers that can be served: valid, enabled)."""
        conns = self.hub._conns
        out = []
        for name, status in self.hub.status().items():
            spec = conns.spec(name)
            mark = fingerprint(spec.type, spec.target)
            if mark is None or spec.error or spec.disabled_reason:
                continue
            out.append({"name": name, "fingerprint": mark, "state": status.state})
        return out

    def _app(self, name: str) -> App | None:
        with self._lock:
            app = self._apps.get(name)
            if app is None and not self._closed.is_set():
                if not any(s["name"] == name for s in self.servers()):
                    return None
                app = self._apps[name] = App(_Endpoint(self, name), False, MAX_BODY)
            return app

    def _upstream_notification(self, event: Event) -> None:
        """Runs on the upstream reader: only hands the message to the sessions' queues,
        or a forwarded request's progress to its relay."""
        if event.method == "notifications/progress":
            params = event.params or {}
            token = params.get("progressToken")
            relay = self._progress.get((event.server, token)) if isinstance(token, str) else None
            if relay is not None:
                relay(dict(params))
            return
        if event.method not in _BROADCAST:
            return
        with self._lock:
            app = self._apps.get(event.server)
        endpoint = app.server if app is not None else None
        if isinstance(endpoint, _Endpoint) and event.method == "notifications/resources/updated":
            uri = (event.params or {}).get("uri")
            if isinstance(uri, str):  # to the workers that subscribed to it only
                endpoint.updated(uri)
        elif isinstance(endpoint, _Endpoint):
            for session in list(endpoint.sessions):
                session.notify(event.method, dict(event.params or {}))

    def _asking_handlers(self, server: str) -> dict[str, Any]:
        """The upstream client's handlers for ``server``'s requests: each asks the worker.
        No roots: a handshake-era server keeps the roots of its connection, which every
        worker shares (one worker's roots would apply to all); a 2026-07-28 server gets the
        worker's own with each request (see ``_relayed``)."""
        from ..protocol.types import dump  # (the handlers' params are wire models)

        def elicit(params: Any) -> dict[str, Any]:
            return self._ask_worker(server, "elicitation/create", dump(params))

        def sample(params: Any) -> dict[str, Any]:
            return self._ask_worker(server, "sampling/createMessage", dump(params))

        return {"elicitation_handler": elicit, "sampling_handler": sample}

    def _ask_worker(self, server: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask ``server``'s request of the worker whose forwarded call is in flight."""
        with self._lock:
            app = self._apps.get(server)
        endpoint = app.server if app is not None else None
        if not isinstance(endpoint, _Endpoint):
            raise Unroutable(f"the mcp-lite gateway serves no MCP server {server!r}")
        session: _Forwarder
        session, key, cancel = endpoint.calls.caller(server, method, params)
        if session.protocol_version is None:
            raise Unroutable(
                f"the mcp-lite gateway cannot forward {method} of MCP server {server!r} to a "
                "2026-07-28 worker other than in the answer to its request (input_required)"
            )
        if not declares(session.client_caps, method, params):
            cap, _ = needed_capability(method, params)
            raise Unroutable(
                f"the worker calling MCP server {server!r} through the mcp-lite gateway did "
                f"not declare the {cap!r} capability"
            )
        return session.ask(key, method, params, cancel)

    def _hears(self, client: Client) -> bool:
        """``client`` carries the gateway's notification hook (made after the gateway)."""
        hooks = getattr(client, "_event_hooks", None) or {}
        return self._upstream_notification in hooks.get("notification", ())

    def _peer_allowed(self, conn: socket.socket) -> bool:
        """The peer's uid is ours, or it belongs to ``group`` (``SO_PEERCRED``, Linux)."""
        if _SO_PEERCRED is None:  # no peer credentials here: the file mode is the guard
            return True
        try:
            raw = conn.getsockopt(socket.SOL_SOCKET, _SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return False
        pid, uid, gid = struct.unpack("3i", raw)
        if uid == self._uid or uid == 0:
            return True
        if self._gid is None:
            return False
        return gid == self._gid or self._gid in _groups_of(pid)

    def close(self) -> None:
        """Stop serving, remove the socket file, stop every server of the Hub; bounded."""
        self._closed.set()
        with self._lock:
            http, self._http = self._http, None
            apps = list(self._apps.values())
            self._apps.clear()
        if http is not None:
            http.close()
        for app in apps:
            app.close()
            if isinstance(app.server, _Endpoint):
                app.server.rounds.close()  # (their timers too)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.hub.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<mcp_lite.Gateway on {self.socket_path or '(not started)'}>"


def _peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end of ``conn`` (None: unknown)."""
    if _SO_PEERCRED is None:
        return None
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, _SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    return int(struct.unpack("3i", raw)[1])


def _gid_of(group: str | int) -> int:
    if isinstance(group, int):
        return group
    return grp.getgrnam(group).gr_gid


def _groups_of(pid: int) -> set[int]:
    """The supplementary groups of process ``pid`` (from ``/proc``; empty when unknown)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Groups:"):
                    return {int(g) for g in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()
