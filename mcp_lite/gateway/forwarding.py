"""How the gateway forwards: one ``_Endpoint`` per Hub server (the HTTP layer's
``Server`` for ``/servers/<name>/mcp``) and one ``_Forwarder`` per downstream
session, which answers ``initialize`` in the upstream's era, sends every other
request raw to the Hub's client of that server and brings its answer, progress
and notifications back. How it works: ``docs/explanation/inside-the-hub.md``."""

from __future__ import annotations

import contextlib
import json
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
from ..server.http.relay import Relay
from ..transports._headers_helper import helper_refused
from .asks import (
    Answers,
    Calls,
    RoundHolds,
    Unroutable,
    relay_rounds,
)
from .start_failures import StartFailures
from .subscriptions import Subscriptions
from .task_owners import TaskOwners, current_peer

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


_LISTEN_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


class _Forwarder:
    """One downstream session of one server: requests in, forwarded, answers out."""

    def __init__(self, endpoint: _Endpoint, send: Callable[[Any, str | None], None]) -> None:
        self._endpoint = endpoint
        self._send_fn = send
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Event] = {}
        self._relays: dict[str, Relay] = {}  # requests answered on their handler's thread
        self._listens: dict[str, tuple[Any, dict[str, Any]]] = {}  # 2026-07-28 streams
        self._closed = False
        self.protocol_version: str | None = None
        self.client_caps: Any = None  # what the worker declared in its initialize
        endpoint.sessions.add(self)

    def receive(self, message: Any) -> None:
        failure = self._endpoint.take_start_failure()  # this HTTP request's failed start
        if isinstance(message, (str, bytes, bytearray)):
            try:
                message = json.loads(message)
            except ValueError:
                self._send(_error(None, -32700, "Parse error"), None)
                return
        for item in message if isinstance(message, list) else [message]:
            self._receive_one(item, failure)

    def _receive_one(self, msg: Any, failure: _Failure | None = None) -> None:
        if not isinstance(msg, dict):
            self._send(_error(None, -32600, "Invalid Request"), None)
            return
        method, params = msg.get("method"), msg.get("params") or {}
        if not isinstance(method, str):  # a response: to a server request asked of it
            self._endpoint.answers.answer(msg, self)
            return
        if "id" not in msg:
            if method == "notifications/cancelled" and isinstance(params, dict):
                with self._lock:
                    event = self._inflight.get(_key(params.get("requestId")))
                    self._listens.pop(_key(params.get("requestId")), None)
                if event is not None:
                    event.set()
                self._endpoint.unwatch_listen(self, _key(params.get("requestId")))
            return  # initialized, roots/list_changed...: nothing to do upstream
        rid, key = msg["id"], _key(msg["id"])
        owner = current_peer()  # (this is the HTTP connection's thread)
        cancel = threading.Event()
        with self._lock:
            busy = self._closed or key in self._inflight
            if not busy:
                self._inflight[key] = cancel
        if busy or not isinstance(params, dict):
            why = "closed" if self._closed else "bad params or id already in use"
            self._send(_error(rid, -32600, f"Invalid Request: {why}"), key)
            return
        if method == "subscriptions/listen" and _is_modern(params):
            self._listen(rid, key, params)
            return
        if not self._endpoint.slots.acquire(blocking=False):
            self._done(key)
            self._send(_error(rid, -32603, "the gateway is busy (too many requests)"), key)
            return
        try:
            self._endpoint.pool.submit(
                self._forward, rid, key, method, params, cancel, failure, owner
            )
        except RuntimeError:  # the pool is shut down: the gateway is closing
            self._endpoint.slots.release()
            self._done(key)
            self._send(_error(rid, -32603, "the gateway is shutting down"), key)

    def can_inline(self, msg: dict[str, Any]) -> bool:
        """A request the HTTP layer may answer on its own thread (``answer``): all but a
        2026-07-28 listen stream (open until the client leaves) and malformed ones."""
        method, params = msg.get("method"), msg.get("params") or {}
        if not isinstance(method, str) or "id" not in msg or not isinstance(params, dict):
            return False  # (receive answers those)
        return method != "subscriptions/listen"

    def answer(
        self, msg: dict[str, Any], key: str, cancel: threading.Event, relay: Relay
    ) -> dict[str, Any] | None:
        """Forward one request (``key``: its id's key) on this thread; its response, or
        None when cancelled (``cancel`` is set by the HTTP layer when the client hangs up,
        and by a notifications/cancelled or the session's end, as for a forwarded one).
        Its progress goes to ``relay`` as it comes."""
        failure = self._endpoint.take_start_failure()  # this HTTP request's failed start
        rid = msg["id"]
        with self._lock:
            busy = self._closed or key in self._inflight
            if not busy:
                self._inflight[key] = cancel
                self._relays[key] = relay
        if busy:
            why = "closed" if self._closed else "bad params or id already in use"
            return _error(rid, -32600, f"Invalid Request: {why}")
        if not self._endpoint.slots.acquire(blocking=False):
            self._done(key)
            return _error(rid, -32603, "the gateway is busy (too many requests)")
        params = msg.get("params") or {}
        return self._answer(rid, key, msg["method"], params, cancel, failure, current_peer())

    def _forward(
        self,
        rid: Any,
        key: str,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        failure: _Failure | None = None,
        owner: int | None = None,
    ) -> None:
        response = self._answer(rid, key, method, params, cancel, failure, owner)
        if response is not None:
            self._send(response, key)

    def _answer(
        self,
        rid: Any,
        key: str,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        failure: _Failure | None = None,
        owner: int | None = None,
    ) -> dict[str, Any] | None:
        """The response to a request (an acquired slot, released here), None if cancelled;
        ``owner``: the peer's user id (see ``_gateway_tasks``)."""
        try:
            if failure is not None:  # the start this request made failed: its answer
                raise failure
            response: dict[str, Any] | None = {
                "jsonrpc": "2.0",
                "id": rid,
                "result": self._endpoint.forward(method, params, cancel, self, key, owner),
            }
        except RequestCancelled:
            response = None  # no answer to a cancelled request
        except RpcError as exc:  # the upstream's own error, unchanged
            response = {"jsonrpc": "2.0", "id": rid, "error": exc.to_wire()}
        except _Failure as exc:
            response = {"jsonrpc": "2.0", "id": rid, "error": exc.wire}
        except Exception as exc:  # never leave a request without its answer
            log.exception("gateway: forwarding %s failed", method)
            response = _error(rid, -32603, f"gateway: {type(exc).__name__}: {exc}")
        finally:
            self._endpoint.slots.release()
        self._done(key)
        return response

    def _done(self, key: str) -> None:
        with self._lock:
            self._inflight.pop(key, None)
            self._relays.pop(key, None)

    def _send(self, message: dict[str, Any], key: str | None) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self._send_fn(message, key)
            except Exception:
                log.warning("gateway: could not send a message downstream", exc_info=True)

    def _listen(self, rid: Any, key: str, params: dict[str, Any]) -> None:
        """A 2026-07-28 ``subscriptions/listen``: acknowledged, then open (no response)
        until the client goes away; the upstream's list_changed go on it, and the updates
        of the resources it subscribes to."""
        wanted = params.get("notifications")
        agreed: dict[str, Any] = {
            flag: True
            for flag in _LISTEN_FLAGS.values()
            if isinstance(wanted, dict) and wanted.get(flag) is True
        }
        uris = wanted.get("resourceSubscriptions") if isinstance(wanted, dict) else None
        if isinstance(uris, list):
            agreed["resourceSubscriptions"] = [u for u in uris if isinstance(u, str)]
        with self._lock:
            self._listens[key] = (rid, agreed)
        ack = {"_meta": {pv.META_SUBSCRIPTION_ID: rid}, "notifications": agreed}
        self._send(
            {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack},
            key,
        )
        if agreed.get("resourceSubscriptions"):
            self._endpoint.watch_listen(self, key, agreed["resourceSubscriptions"])

    def updated(self, uri: str, key: str | None) -> None:
        """A resource this session (``key``: its listen stream) watches has changed."""
        params: dict[str, Any] = {"uri": uri}
        if key is not None:
            with self._lock:
                listen = self._listens.get(key)
            if listen is None:
                return
            params["_meta"] = {pv.META_SUBSCRIPTION_ID: listen[0]}
        elif self.protocol_version is None:
            return
        self._send(
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params}, key
        )

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """A notification of the upstream that belongs to no request: on the GET stream of
        a handshake session, on the listen streams that asked for it."""
        if self.protocol_version is not None:
            self._send({"jsonrpc": "2.0", "method": method, "params": params}, None)
        flag = _LISTEN_FLAGS.get(method, "")
        with self._lock:
            listens = [(k, rid) for k, (rid, agreed) in self._listens.items() if agreed.get(flag)]
        for key, rid in listens:
            tagged = {**params, "_meta": {pv.META_SUBSCRIPTION_ID: rid}}
            self._send({"jsonrpc": "2.0", "method": method, "params": tagged}, key)

    def ask(
        self, key: str, method: str, params: dict[str, Any], cancel: threading.Event
    ) -> dict[str, Any]:
        """Send a server's request to this worker on the stream of its request ``key`` and
        wait for its answer (see ``_gateway_asks``)."""
        relay = self._relays.get(key)
        if relay is not None and (relay.broken or getattr(relay, "_done", False)):
            raise Unroutable(  # a JSON-only request: no stream to ask on
                f"the mcp-lite gateway cannot forward {method}: the worker's request "
                "takes no event stream (it accepts application/json only)"
            )
        answers = self._endpoint.answers
        rid = answers.new(self)
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        if relay is not None:
            relay(message)
        else:
            self._send(message, key)
        return answers.wait(rid, method, cancel, self._endpoint.ask_timeout)

    def progress(self, key: str, token: Any, p: Progress) -> None:
        params: dict[str, Any] = {"progressToken": token, "progress": p.progress}
        if p.total is not None:
            params["total"] = p.total
        if p.message is not None:
            params["message"] = p.message
        self.progress_params(key, params)

    def progress_params(self, key: str, params: dict[str, Any]) -> None:
        """A progress notification for request ``key`` (its downstream token in it)."""
        message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
        relay = self._relays.get(key)
        if relay is not None:
            relay(message)
        else:
            self._send(message, key)

    def close(self, timeout: float = 1.0) -> None:
        """Withdraw the requests still upstream (the session ended); idempotent."""
        with self._lock:
            self._closed = True
            events = list(self._inflight.values())
        self._endpoint.sessions.discard(self)
        for event in events:
            event.set()
        self._endpoint.unwatch_session(self)


class _Failure(Exception):
    """A failure of the gateway's side (not the server's answer), as a JSON-RPC error."""

    def __init__(self, server: str, phase: str, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.cause = exc
        self.wire = {
            "code": -32603,
            "message": f"gateway: MCP server {server!r} ({phase}): {exc}",
            "data": {"server": server, "phase": phase, "error": type(exc).__name__},
        }


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


def _key(request_id: Any) -> str:
    if type(request_id) is int:  # its JSON text (not a bool: true is not 1)
        return str(request_id)
    return json.dumps(request_id)


def _is_modern(params: Any) -> bool:
    """A 2026-07-28 request (its version in ``params._meta``)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(pv.META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return isinstance(version, str) and pv.is_stateless(version)


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
