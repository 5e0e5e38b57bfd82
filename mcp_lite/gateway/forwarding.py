"""How the gateway forwards: one ``_Endpoint`` per Hub server (the HTTP layer's ``Server``
for ``/servers/<name>/mcp``) sends each request of its sessions (``session._Forwarder``) raw to
the Hub's client of that server. How it works: ``docs/explanation/inside-the-hub.md``."""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from .._deadline import Deadline
from ..client import Client
from ..errors import ConnectionClosed, InvalidParams, McpError, RequestCancelled, RpcError
from ..hub._runtime.live_tasks import unknown_task_note
from ..hub._runtime.recycle import Lease
from ..protocol import versions as pv
from ..protocol.types import Progress
from ..transports._headers_helper import helper_refused
from .asks import (
    Answers,
    Calls,
    RoundHolds,
    relay_rounds,
)
from .session import _Failure, _Forwarder, _is_modern
from .start_failures import StartFailures
from .subscriptions import Subscriptions
from .task_owners import TaskOwners

if TYPE_CHECKING:
    from ..hub.hub import Hub

log = logging.getLogger("mcp_lite.gateway")


_MODERN_META = frozenset(
    {
        pv.META_PROTOCOL_VERSION,
        pv.META_CLIENT_CAPABILITIES,
        pv.META_CLIENT_INFO,
        pv.META_LOG_LEVEL,
    }
)


_CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "resources/read",
        "skills/list",
    }
)


class _Host(Protocol):
    """What an endpoint takes from its ``Gateway`` (the shared pool, bounds and ledgers)."""

    hub: Hub
    connect_timeout: float
    request_timeout: float
    _pool: ThreadPoolExecutor
    _slots: threading.BoundedSemaphore
    _answers: Answers
    _task_owners: TaskOwners
    _progress: dict[tuple[str, str], Callable[[dict[str, Any]], None]]

    @property
    def _tokens(self) -> Iterator[int]: ...

    def _hears(self, client: Client) -> bool: ...


class _Endpoint:
    """One Hub server as the HTTP layer's ``Server``: each session a ``_Forwarder``."""

    def __init__(self, gateway: _Host, name: str) -> None:
        self.name = name
        self._gateway = gateway
        self.pool = gateway._pool
        self.slots = gateway._slots
        self.sessions: weakref.WeakSet[_Forwarder] = weakref.WeakSet()
        self.calls = Calls()  # forwarded calls in flight: whom a server request asks
        self.answers = gateway._answers
        self.ask_timeout = gateway.request_timeout
        self.subs = Subscriptions()  # watchers: a session, or (session, listen key)
        self.rounds = RoundHolds()
        # a start that failed while the era was asked, for the connection that asked
        self._start_failures: StartFailures[_Failure] = StartFailures()

    @property
    def versions(self) -> tuple[str, ...]:
        """The upstream's era: a 2026-07-28 server is offered in both eras, any other in
        the handshake era only (so results keep the shape a direct client sees). A worker
        asks before its first request, so a server not connected yet is started here
        (within ``connect_timeout``): answered from a guess, the first worker after a
        gateway start would get the handshake era of a 2026-07-28 server, and its tasks
        (passed through in the upstream's era only) would fail. A server that cannot start
        is offered in the handshake era; the worker's request then meets the failure."""
        conns = self._gateway.hub._conns
        if self._start_failures.get() is not None:
            return pv.HANDSHAKE_VERSIONS  # this request's start failed: not tried again
        try:
            client = conns._slot(self.name).client
            if client is None or not client.connected:
                with self.lease() as client:
                    pass
            stateless = client.connected and client.session.era == "stateless"
        except _Failure as exc:  # the request that asked gets this very failure (its class)
            self._start_failures.put(exc)
            stateless = False
        except McpError:
            stateless = False
        return pv.SUPPORTED_VERSIONS if stateless else pv.HANDSHAKE_VERSIONS

    def open_connection(self, send: Any, *, routed: bool = False) -> _Forwarder:
        return _Forwarder(self, send)

    def take_start_failure(self) -> _Failure | None:
        """The failed start of this downstream connection's request, once."""
        return self._start_failures.pop()

    def _tool_schema(self, name: str) -> Any:
        return None  # the stateless era's header checks are not served here

    def lease(self) -> Lease[Client]:
        """The server's client, held for one forwarded request (a recycle waits for it:
        a worker's tasks/result may block for the whole task)."""
        gw = self._gateway
        try:
            held = gw.hub._conns.lease_connected(self.name)  # connected: no deadline to make
            if held is not None:
                return held
            return gw.hub._conns.lease(self.name, Deadline.after(gw.connect_timeout))
        except McpError as exc:
            raise _Failure(self.name, "connecting", exc) from None

    def forward(
        self,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        session: _Forwarder,
        key: str,
        owner: int | None = None,
    ) -> dict[str, Any]:
        # a worker sees only its own tasks (their owner: the peer's user id)
        owners = self._gateway._task_owners
        foreign = owners.foreign(self.name, owner, method, params)
        if foreign is not None:
            raise self._unknown_task(foreign)
        n = self.calls.enter(session, key, cancel, method, params)
        try:
            result = self._forward_leased(method, params, cancel, session, key)
        finally:
            self.calls.leave(n)
        return owners.answered(self.name, owner, method, params, result)

    def _forward_leased(
        self,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        session: _Forwarder,
        key: str,
    ) -> dict[str, Any]:
        """``_forward`` on a leased client; once more on a new connection when the server
        refused its headersHelper's headers (nothing ran: the helper runs again there)."""
        with self.lease() as client:
            # a 2026-07-28 worker's next input round: its server no longer held for it
            self.rounds.release(params.get("requestState"))
            self._resubscribe(client)
            try:
                return self._forward(client, method, params, cancel, session, key)
            except _Failure as failure:
                if not isinstance(failure.cause, McpError) or not helper_refused(
                    client.target, failure.cause
                ):
                    raise
                self._gateway.hub._conns.connection_lost(self.name, client)
        with self.lease() as client:
            self._resubscribe(client)
            return self._forward(client, method, params, cancel, session, key)

    def _unknown_task(self, task_id: str) -> RpcError:
        """Another user's task: the answer an id gets that the server does not know."""
        conns = self._gateway.hub._conns
        slot = conns._slot(self.name)
        life = slot.life
        note = unknown_task_note(
            self.name,
            task_id,
            lost=False,
            stdio=slot.spec.type == "stdio",
            started_wall=life.started_wall,
            recycles=life.recycles,
        )
        return InvalidParams(f"Unknown task: {task_id!r} ({note})")

    def _forward(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        session: _Forwarder,
        key: str,
    ) -> dict[str, Any]:
        if _is_modern(params):
            result = self._forward_modern(client, method, params, cancel, session, key)
            result.setdefault("resultType", "complete")
            if method in _CACHEABLE:
                result.setdefault("ttlMs", 0)
                result.setdefault("cacheScope", "private")
            return result
        if method == "initialize":
            return self._initialize(client, params, session)
        if method in ("resources/subscribe", "resources/unsubscribe"):
            return self._subscription(client, method, params, session)
        return self._request(client, method, params, cancel, session, key)

    # --- resource subscriptions (see _gateway_subs) ------------------------------------

    def _subscription(
        self, client: Client, method: str, params: dict[str, Any], watcher: Any
    ) -> dict[str, Any]:
        """A worker's resources/subscribe or /unsubscribe, made (or undone) upstream only
        for the first (or last) watcher of the URI."""
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParams(f"{method}: uri must be a string")
        timeout = self._gateway.request_timeout
        try:
            if method == "resources/unsubscribe":
                for left in self.subs.unwatch(watcher, uri):
                    client.unsubscribe_resource(left, timeout=timeout)
            elif self.subs.watch(watcher, uri, client):
                try:
                    client.subscribe_resource(uri, timeout=timeout)
                except BaseException:
                    self.subs.unwatch(watcher, uri)
                    raise
        except RpcError:
            raise
        except McpError as exc:
            raise _Failure(self.name, f"forwarding {method}", exc) from None
        return {}

    def watch_listen(self, session: _Forwarder, key: str, uris: list[str]) -> None:
        """A 2026-07-28 listen stream's resource subscriptions (failures are logged)."""
        try:
            with self.lease() as client:
                self._resubscribe(client)
                for uri in uris:
                    self._subscription(client, "resources/subscribe", {"uri": uri}, (session, key))
        except (McpError, _Failure) as exc:
            log.warning(
                "gateway: MCP server %r: subscribing for a listen stream: %s", self.name, exc
            )

    def unwatch_listen(self, session: _Forwarder, key: str) -> None:
        self._unsubscribe(self.subs.unwatch((session, key)))

    def unwatch_session(self, session: _Forwarder) -> None:
        """A session ended: its subscriptions and those of its listen streams."""
        left = self.subs.unwatch(session)
        for key in list(session._listens):
            left += self.subs.unwatch((session, key))
        self._unsubscribe(left)

    def _unsubscribe(self, uris: list[str]) -> None:
        """Undo upstream the subscriptions nobody watches any more (on the pool: a closing
        session does not wait for the server; a server not running has none to undo)."""
        if not uris:
            return
        client = self._gateway.hub._conns._slot(self.name).client
        if client is None or not client.connected:
            return

        def undo() -> None:
            for uri in uris:
                try:
                    client.unsubscribe_resource(uri, timeout=self._gateway.connect_timeout)
                except McpError as exc:
                    log.debug("gateway: MCP server %r: unsubscribing %s: %s", self.name, uri, exc)

        with contextlib.suppress(RuntimeError):  # the gateway is closing: nothing to undo
            self.pool.submit(undo)

    def _resubscribe(self, client: Client) -> None:
        """The server runs on a new process (recycled, restarted): the subscriptions made
        on the last one are made again on it, and their watchers told to read again."""
        uris = self.subs.lost(client)
        for uri in uris:
            try:
                client.subscribe_resource(uri, timeout=self._gateway.connect_timeout)
            except McpError as exc:
                log.warning("gateway: MCP server %r: re-subscribing %s: %s", self.name, uri, exc)
        for uri in uris:
            self.updated(uri)

    def updated(self, uri: str) -> None:
        """The server says ``uri`` changed: its watchers only are told."""
        for watcher in self.subs.watchers(uri):
            session, key = watcher if isinstance(watcher, tuple) else (watcher, None)
            session.updated(uri, key)

    def _forward_modern(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        session: _Forwarder,
        key: str,
    ) -> dict[str, Any]:
        info = client.session
        if method == "server/discover":
            result: dict[str, Any] = {
                "supportedVersions": list(pv.SUPPORTED_VERSIONS),
                "capabilities": dict(info.capabilities),
                "_meta": {pv.META_SERVER_INFO: dict(info.server_info)},
            }
            if info.instructions is not None:
                result["instructions"] = info.instructions
            return result
        # (the worker's capabilities are kept: a relayed request declares them upstream)
        meta = {
            k: v
            for k, v in params["_meta"].items()
            if k not in _MODERN_META or k == pv.META_CLIENT_CAPABILITIES
        }
        params = {k: v for k, v in params.items() if k != "_meta"}
        if meta:
            params["_meta"] = meta
        return self._request(client, method, params, cancel, session, key)

    def _request(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        session: _Forwarder,
        key: str,
    ) -> dict[str, Any]:
        if method == "ping" and client.session.era == "stateless":
            return {}  # 2026-07-28 has no ping: the gateway answers for a live connection
        gw = self._gateway
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        on_progress = None
        mine = None
        if token is not None and gw._hears(client):
            # The upstream's progress is heard raw on its reader (the gateway's event hook)
            # under a token of the gateway's own, and relayed as it comes: no Progress
            # model, no hop through the client's notifier thread.
            mine = f"mcp-lite-gateway-{next(gw._tokens)}"
            params = {**params, "_meta": {**meta, "progressToken": mine}}  # type: ignore[dict-item]

            def relay(raw: dict[str, Any]) -> None:
                session.progress_params(key, {**raw, "progressToken": token})

            gw._progress[(self.name, mine)] = relay
        elif token is not None:

            def on_progress(p: Progress) -> None:
                session.progress(key, token, p)

        conns = self._gateway.hub._conns
        try:
            if client.session.era == "stateless" and method not in _CACHEABLE:
                result = self._relayed(client, method, params, cancel, session, key, on_progress)
            else:
                result = client.request(
                    method,
                    params,
                    timeout=gw.request_timeout,
                    on_progress=on_progress,
                    cancel_event=cancel,
                )
        except RpcError as exc:  # an unknown task id gets its likely cause (see task_error)
            raise conns.task_error(self.name, client, method, params, exc) from None
        except RequestCancelled:
            raise
        except ConnectionClosed as exc:
            self._gateway.hub._conns.connection_lost(self.name, client)
            raise _Failure(self.name, f"forwarding {method}", exc) from None
        except McpError as exc:
            raise _Failure(self.name, f"forwarding {method}", exc) from None
        finally:
            if mine is not None:
                gw._progress.pop((self.name, mine), None)
        conns.task_answer(self.name, client, method, params, result)  # live tasks: no recycle
        return result

    def _relayed(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        session: _Forwarder,
        key: str,
        on_progress: Callable[[Progress], Any] | None,
    ) -> dict[str, Any]:
        """A request to a 2026-07-28 upstream, which asks its client with input_required
        results: a 2026-07-28 worker gets them as they are (and answers them itself), a
        handshake-era worker is asked each input request on this request's stream (and the
        gateway retries for it). The server sees the worker's capabilities either way."""
        meta = params.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        modern = pv.META_CLIENT_CAPABILITIES in meta
        if not modern:
            caps = session.client_caps
            meta[pv.META_CLIENT_CAPABILITIES] = dict(caps) if isinstance(caps, dict) else {}
            params = {**params, "_meta": meta}

        def send(params: dict[str, Any]) -> dict[str, Any]:
            return client._relay(
                method,
                params,
                timeout=self._gateway.request_timeout,
                on_progress=on_progress,
                cancel_event=cancel,
            )

        if modern:
            result = send(params)
            state = result.get("requestState")
            if result.get("resultType") == "input_required" and isinstance(state, str):
                held = self._gateway.hub._conns.lease_connected(self.name)
                if held is not None:  # until the worker's next round (see RoundHolds)
                    self.rounds.hold(state, held)
            return result

        def ask(asked: str, asked_params: dict[str, Any]) -> dict[str, Any]:
            return session.ask(key, asked, asked_params, cancel)

        return relay_rounds(method, params, send, ask)

    def _initialize(
        self, client: Client, params: dict[str, Any], session: _Forwarder
    ) -> dict[str, Any]:
        info = client.session
        version = info.protocol_version
        if version not in pv.HANDSHAKE_VERSIONS:  # a 2026-07-28 upstream: speak handshake down
            asked = params.get("protocolVersion")
            version = asked if asked in pv.HANDSHAKE_VERSIONS else pv.LATEST_HANDSHAKE_VERSION
        session.protocol_version = version
        session.client_caps = params.get("capabilities")
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": dict(info.capabilities),
            "serverInfo": dict(info.server_info),
        }
        if info.instructions is not None:
            result["instructions"] = info.instructions
        return result


class _NoServer:
    """The HTTP server's own (unused) endpoint: every path is routed to a server's."""

    versions = pv.HANDSHAKE_VERSIONS

    def open_connection(self, send: Any, *, routed: bool = False) -> _Forwarder:
        raise AssertionError("the gateway routes every request to a server")

    def _tool_schema(self, name: str) -> Any:
        return None
