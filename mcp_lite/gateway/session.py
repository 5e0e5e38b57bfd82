"""One downstream session of the gateway: a ``_Forwarder`` answers ``initialize`` in the
upstream's era, sends every other request raw to its ``_Endpoint`` and brings the answer,
progress and notifications back; ``_Failure`` is a failure of the gateway's own side."""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ..errors import RequestCancelled, RpcError
from ..protocol import versions as pv
from ..protocol.types import Progress
from ..server.http.relay import Relay
from .asks import Answers, Unroutable
from .task_owners import current_peer

log = logging.getLogger("mcp_lite.gateway")


_LISTEN_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


class _Endpoint(Protocol):
    """What a session needs of its server's endpoint (``forwarding._Endpoint``)."""

    name: str
    pool: ThreadPoolExecutor
    slots: threading.BoundedSemaphore
    sessions: weakref.WeakSet[_Forwarder]
    answers: Answers
    ask_timeout: float

    def forward(
        self,
        method: str,
        params: dict[str, Any],
        cancel: threading.Event,
        session: _Forwarder,
        key: str,
        owner: int | None = None,
    ) -> dict[str, Any]: ...

    def take_start_failure(self) -> _Failure | None: ...
    def watch_listen(self, session: _Forwarder, key: str, uris: list[str]) -> None: ...
    def unwatch_listen(self, session: _Forwarder, key: str) -> None: ...
    def unwatch_session(self, session: _Forwarder) -> None: ...


class _Forwarder:
    """One downstream session of one server: requests in, forwarded, answers out."""

    def __init__(self, endpoint: _Endpoint, send: Callable[[Any, str | None], None]) -> None:
        self._endpoint = endpoint
        self._send_fn = send
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Event] = {}
        self._relays: dict[str, Relay] = {}  # requests answered on their handler's thread
        self._listens: dict[str, tuple[Any, dict[str, Any] | None]] = {}  # 2026-07-28 streams
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
        # Known (so a closing session undoes its upstream subscriptions) but silent until
        # acknowledged, and acknowledged only once subscribed upstream: the worker's
        # subscribe returns on the ack, and a change after it must reach the worker.
        with self._lock:
            self._listens[key] = (rid, None)
        if agreed.get("resourceSubscriptions"):
            self._endpoint.watch_listen(self, key, agreed["resourceSubscriptions"])
        ack = {"_meta": {pv.META_SUBSCRIPTION_ID: rid}, "notifications": agreed}
        self._send(
            {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack},
            key,
        )
        with self._lock:
            if key in self._listens:  # (not cancelled meanwhile)
                self._listens[key] = (rid, agreed)

    def updated(self, uri: str, key: str | None) -> None:
        """A resource this session (``key``: its listen stream) watches has changed."""
        params: dict[str, Any] = {"uri": uri}
        if key is not None:
            with self._lock:
                listen = self._listens.get(key)
            if listen is None or listen[1] is None:
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
            listens = [
                (k, rid)
                for k, (rid, agreed) in self._listens.items()
                if agreed and agreed.get(flag)
            ]
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
