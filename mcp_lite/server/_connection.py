"""``ServerConnection``: the small server's JSON-RPC session with one client in both eras,
messages in through ``receive()`` and out through the ``send`` callable, requests on the
worker pool (see docs/explanation/server.md).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, cast

from ..errors import (
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    McpError,
    MethodNotFound,
    RequestTimeout,
    ResourceNotFound,
    RpcError,
    UnsupportedVersionError,
    rpc_error_from_wire,
)
from ..protocol import versions as pv

__all__ = ["ServerConnection"]

from . import _request_state as _state
from . import _tasks as tk
from ._context import (
    LOG_LEVELS,
    Context,
    RoutedSend,
    Send,
    _id_key,
    _InputRequired,
    _Request,
    _Workers,
    log,
)
from ._registry import Registry


class _Host(Protocol):
    """What a connection needs of its ``Server``; a protocol so this module does not import
    the server module that imports it."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def instructions(self) -> str | None: ...
    @property
    def versions(self) -> tuple[str, ...]: ...
    @property
    def client_request_timeout(self) -> float: ...
    @property
    def _registry(self) -> Registry: ...
    @property
    def _secret(self) -> bytes: ...

    def capabilities(self) -> dict[str, Any]: ...

    def _forget(self, conn: ServerConnection) -> None: ...


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
_MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_COMMON = frozenset(
    {
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "skills/list",
        "skills/get",
    }
)
_LEGACY_ONLY = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
_MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})
_LEGACY_TASKS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
_MODERN_TASKS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})


def _error(request_id: Any, err: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": err.to_wire()}


class _Batch:
    """Collects the responses of one JSON-RPC batch; sends them as a list when all are in."""

    def __init__(self, conn: ServerConnection, expected: int) -> None:
        self._conn = conn
        self._left = expected
        self._responses: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, response: dict[str, Any] | None) -> None:
        with self._lock:
            if response is not None:
                self._responses.append(response)
            self._left -= 1
            done = self._left == 0
        if done and self._responses:
            first = self._responses[0].get("id")
            self._conn._send(self._responses, _id_key(first))


class _Waiter:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.result: dict[str, Any] | None = None
        self.error: McpError | None = None


class ServerConnection:
    """One client's connection to a ``Server``: JSON-RPC in through ``receive()``, out
    through ``send``. Create it with ``Server.open_connection(send)``."""

    def __init__(self, server: _Host, send: Send | RoutedSend, *, routed: bool = False) -> None:
        self.server = server
        self._send_fn = send
        # routed: ``send(message, related)`` also gets the key (``_id_key``) of the request
        # the message belongs to, or None (the HTTP transport picks the stream with it).
        self._routed = routed
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._workers = _Workers(f"mcp-server-{server.name}", 16)
        self._inflight: dict[str, _Request] = {}
        self._idle = threading.Condition(self._lock)
        self._replying = 0
        self._outgoing: dict[int, _Waiter] = {}
        self._next_id = 0
        self._listens: dict[str, tuple[Any, dict[str, Any]]] = {}
        self._subscribed: set[str] = set()
        self._closing = False
        self._closed = False
        # Handshake-era session state.
        self.protocol_version: str | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        self._log_level: str | None = None

    # --- input -----------------------------------------------------------------------

    def receive(self, message: Any) -> None:
        """Handle one incoming message: a dict, a list (a batch), or undecoded JSON text.

        Returns quickly: requests run on worker threads and answer through ``send``.
        """
        if isinstance(message, (str, bytes, bytearray)):
            try:
                message = json.loads(message)
            except (ValueError, RecursionError) as exc:  # (nested too deep: a parse error)
                self._send(_error(None, RpcError(f"Parse error: {exc}", -32700)))
                return
        if isinstance(message, list):
            if not message:
                self._send(_error(None, InvalidRequest("Invalid Request: empty batch")))
                return
            batch = _Batch(self, len(message))
            for item in message:
                self._receive_one(item, batch)
            return
        self._receive_one(message, None)

    def _receive_one(self, msg: Any, batch: _Batch | None) -> None:
        reply: Callable[[dict[str, Any] | None], None] = batch.add if batch else self._reply
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            reply(_error(None, InvalidRequest("Invalid Request: not a JSON-RPC 2.0 message")))
            return
        method = msg.get("method")
        if method is None:
            if "id" in msg and ("result" in msg or "error" in msg):
                self._on_response(msg)
            else:
                reply(_error(msg.get("id"), InvalidRequest("Invalid Request: no method")))
                return
            if batch:
                batch.add(None)
            return
        params = msg.get("params", {})
        if "id" not in msg:
            if isinstance(method, str) and isinstance(params, dict):
                self._on_notification(method, params)
            if batch:
                batch.add(None)
            return
        rid = msg["id"]
        if not isinstance(rid, (str, int)) or isinstance(rid, bool) or not isinstance(method, str):
            reply(
                _error(
                    None if not isinstance(rid, (str, int)) else rid,
                    InvalidRequest("Invalid Request: bad id or method"),
                )
            )
            return
        if not isinstance(params, dict):
            reply(_error(rid, InvalidParams("params must be an object")))
            return
        req = _Request(rid, method, params)
        with self._lock:
            if self._closing:
                err: RpcError | None = InternalError("the server is shutting down")
            elif req.key in self._inflight:
                err = InvalidRequest(f"request id {rid!r} is already in use")
            else:
                err = None
                self._inflight[req.key] = req
        if err is not None:
            reply(_error(rid, err))
            return
        if method == "subscriptions/listen" and self._is_modern(req):
            self._finish(req, self._listen(req), reply)
            return
        self._workers.submit(lambda: self._finish(req, self._execute(req), reply))

    def _finish(
        self,
        req: _Request,
        response: dict[str, Any] | None,
        reply: Callable[[dict[str, Any] | None], None],
    ) -> None:
        """Deliver a request's response; ``None`` means an open listen (no response yet)."""
        if response is None:
            reply(None)
            return
        req.finished = True
        if req.cancelled.is_set():
            response = None  # no response to a cancelled request
        with self._lock:
            self._inflight.pop(req.key, None)
            self._replying += 1  # close() waits for this reply too
        try:
            reply(response)
        finally:
            with self._lock:
                self._replying -= 1
                self._idle.notify_all()

    def _reply(self, response: dict[str, Any] | None) -> None:
        if response is not None:
            self._send(response, _id_key(response.get("id")))

    def _on_response(self, msg: dict[str, Any]) -> None:
        rid = msg.get("id")
        with self._lock:
            waiter = self._outgoing.pop(rid, None) if isinstance(rid, int) else None
        if waiter is None:
            log.debug("ignoring a response to unknown request %r", rid)
            return
        if "error" in msg:
            waiter.error = rpc_error_from_wire(msg["error"])
        elif isinstance(msg["result"], dict):
            waiter.result = msg["result"]
        else:
            waiter.error = InvalidParams("the client's result is not an object")
        waiter.event.set()

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            key = _id_key(params.get("requestId"))
            with self._lock:
                req = self._inflight.get(key)
                listen = self._listens.pop(key, None)
                if listen is not None:
                    self._inflight.pop(key, None)
                    self._idle.notify_all()
            if req is not None:
                log.debug("request %s cancelled: %s", key, params.get("reason"))
                req.cancelled.set()
        elif method == "notifications/initialized":
            log.debug("client initialized")
        # Anything else (roots/list_changed, progress …) needs no action here.

    # --- dispatch --------------------------------------------------------------------

    def _is_modern(self, req: _Request) -> bool:
        v = req.meta.get(pv.META_PROTOCOL_VERSION)
        has_modern = any(pv.is_stateless(x) for x in self.server.versions)
        if v is None or not has_modern:
            return False
        return not (isinstance(v, str) and v in pv.HANDSHAKE_VERSIONS and v in self.server.versions)

    def _execute(self, req: _Request) -> dict[str, Any] | None:
        try:
            result = self._modern(req) if self._is_modern(req) else self._legacy(req)
            return {"jsonrpc": "2.0", "id": req.id, "result": result}
        except RpcError as exc:
            return _error(req.id, exc)
        except _InputRequired:
            return _error(req.id, InternalError("client input requested outside of MRTR"))
        except Exception as exc:
            log.exception("error while serving %s", req.method)
            return _error(req.id, InternalError(f"Internal error: {exc}"))

    def _legacy(self, req: _Request) -> dict[str, Any]:
        m = req.method
        if not any(v in pv.HANDSHAKE_VERSIONS for v in self.server.versions):
            if m in _COMMON or m in _MODERN_ONLY:  # a stateless-only server
                raise InvalidParams(f"_meta[{pv.META_PROTOCOL_VERSION!r}] is required")
            if m != "initialize":
                raise MethodNotFound(f"Method not found: {m}")
        if m not in _COMMON and m not in _LEGACY_ONLY and m not in _LEGACY_TASKS:
            raise MethodNotFound(f"Method not found: {m}")
        if m == "initialize":
            return self._initialize(req)
        if m == "ping":
            return {}
        if self.protocol_version is None:
            raise InvalidRequest(f"{m} before initialize")
        req.version = self.protocol_version
        req.client_caps = self.client_capabilities
        if m == "logging/setLevel":
            level = req.params.get("level")
            if level not in LOG_LEVELS:
                raise InvalidParams(f"invalid log level {level!r}")
            self._log_level = level
            return {}
        if m in ("resources/subscribe", "resources/unsubscribe"):
            uri = req.params.get("uri")
            if not isinstance(uri, str):
                raise InvalidParams("uri must be a string")
            with self._lock:
                (self._subscribed.add if m.endswith("/subscribe") else self._subscribed.discard)(
                    uri
                )
            return {}
        if m in _LEGACY_TASKS:
            return tk.serve_legacy(self, self.server._registry, req)
        return self._common(req)

    def _initialize(self, req: _Request) -> dict[str, Any]:
        requested = req.params.get("protocolVersion")
        if not isinstance(requested, str):
            raise InvalidParams("initialize: protocolVersion must be a string")
        handshake = [v for v in self.server.versions if v in pv.HANDSHAKE_VERSIONS]
        if not handshake:
            raise UnsupportedVersionError(
                "Unsupported protocol version: this server speaks only "
                + ", ".join(self.server.versions)
                + " (no initialize handshake)",
                data={"supported": list(self.server.versions), "requested": requested},
            )
        caps = req.params.get("capabilities")
        info = req.params.get("clientInfo")
        self.protocol_version = requested if requested in handshake else handshake[0]
        self.client_capabilities = caps if isinstance(caps, dict) else {}
        self.client_info = info if isinstance(info, dict) else {}
        result: dict[str, Any] = {
            "protocolVersion": self.protocol_version,
            "capabilities": self.server.capabilities(),
            "serverInfo": {"name": self.server.name, "version": self.server.version},
        }
        if self.server.instructions is not None:
            result["instructions"] = self.server.instructions
        return result

    def _prelude(self, req: _Request) -> None:
        """Validate a stateless-era request's ``_meta`` and copy it onto ``req``."""
        v = req.meta[pv.META_PROTOCOL_VERSION]
        if v not in self.server.versions:
            raise UnsupportedVersionError(
                "Unsupported protocol version",
                data={"supported": list(self.server.versions), "requested": v},
            )
        caps = req.meta.get(pv.META_CLIENT_CAPABILITIES)
        if not isinstance(caps, dict):
            raise InvalidParams(f"_meta[{pv.META_CLIENT_CAPABILITIES!r}] is required")
        level = req.meta.get(pv.META_LOG_LEVEL)
        if level is not None and level not in LOG_LEVELS:
            raise InvalidParams(f"invalid log level {level!r}")
        req.modern, req.version, req.client_caps, req.log_level = True, v, caps, level

    def _modern(self, req: _Request) -> dict[str, Any]:
        self._prelude(req)
        m = req.method
        if m == "server/discover":
            result = self._discover()
        elif m in _COMMON:
            if m in _MRTR_METHODS:
                _state.load_inputs(self.server._secret, req)
            try:
                result = self._common(req)
            except _InputRequired as need:
                return {
                    "resultType": "input_required",
                    "inputRequests": {need.key: need.request},
                    "requestState": _state.encode_state(self.server._secret, req),
                }
        elif m in _MODERN_TASKS:
            result = tk.serve_modern(self.server._registry, req)
        else:
            raise MethodNotFound(f"Method not found: {m}")
        result.setdefault("resultType", "complete")  # "task" for a CreateTaskResult
        if m in _CACHEABLE:
            result.setdefault("ttlMs", 0)
            result.setdefault("cacheScope", "private")
        return result

    def _discover(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(self.server.versions),
            "capabilities": self.server.capabilities(),
            "_meta": {
                pv.META_SERVER_INFO: {"name": self.server.name, "version": self.server.version}
            },
        }
        if self.server.instructions is not None:
            result["instructions"] = self.server.instructions
        return result

    def _common(self, req: _Request) -> dict[str, Any]:
        reg, p, m = self.server._registry, req.params, req.method
        ctx = Context(self, req)
        if m == "tools/list":
            return reg.list_tools(p)
        if m == "tools/call":
            return tk.call_tool(self, reg, req, ctx)
        if m == "resources/list":
            return reg.list_resources(p)
        if m == "resources/templates/list":
            return reg.list_templates(p)
        if m == "skills/list":
            return reg.skills.list(p, reg.page_size)
        if m == "skills/get":
            return reg.skills.get(p)
        if m == "resources/read":
            skill_file = reg.skills.read(p.get("uri"))
            if skill_file is not None:
                return skill_file
            try:
                return reg.read_resource(p, ctx, ResourceNotFound)
            except ResourceNotFound as exc:  # 2026-07-28 says -32602 for an unknown resource
                if req.modern:
                    raise InvalidParams(exc.message, data=exc.data) from None
                raise
        if m == "prompts/list":
            return reg.list_prompts(p)
        if m == "prompts/get":
            return reg.get_prompt(p, ctx)
        return reg.complete(p)

    # --- subscriptions/listen (stateless era) -----------------------------------------

    def _listen(self, req: _Request) -> dict[str, Any] | None:
        """Open a subscription: ``None`` when open, else the error response."""
        try:
            self._prelude(req)
            wanted = req.params.get("notifications")
            if not isinstance(wanted, dict):
                raise InvalidParams("subscriptions/listen: notifications must be an object")
        except RpcError as exc:
            return _error(req.id, exc)
        caps = self.server.capabilities()
        agreed: dict[str, Any] = {}
        for flag, kind in (
            ("toolsListChanged", "tools"),
            ("promptsListChanged", "prompts"),
            ("resourcesListChanged", "resources"),
        ):
            if wanted.get(flag) is True and kind in caps:
                agreed[flag] = True
        uris = wanted.get("resourceSubscriptions")
        if isinstance(uris, list) and "resources" in caps:
            agreed["resourceSubscriptions"] = [u for u in uris if isinstance(u, str)]
        ack = {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {pv.META_SUBSCRIPTION_ID: req.id}, "notifications": agreed},
        }
        with self._write_lock:  # the ack goes out before any notification of this stream
            with self._lock:
                self._listens[req.key] = (req.id, agreed)
            self._send_locked(ack, req.key)
        return None

    def _list_changed(self, method: str, flag: str) -> None:
        with self._lock:
            legacy = self.protocol_version is not None
            listens = [rid for rid, agreed in self._listens.values() if agreed.get(flag)]
        if legacy:
            self._notify(method, {})
        for rid in listens:
            self._notify(method, {"_meta": {pv.META_SUBSCRIPTION_ID: rid}}, _id_key(rid))

    def _resource_updated(self, uri: str) -> None:
        with self._lock:
            legacy = self.protocol_version is not None and uri in self._subscribed
            listens = [
                rid
                for rid, agreed in self._listens.values()
                if uri in agreed.get("resourceSubscriptions", ())
            ]
        if legacy:
            self._notify("notifications/resources/updated", {"uri": uri})
        for rid in listens:
            self._notify(
                "notifications/resources/updated",
                {"_meta": {pv.META_SUBSCRIPTION_ID: rid}, "uri": uri},
                _id_key(rid),
            )

    # --- server → client requests (handshake era) --------------------------------------

    def _request_client(
        self, method: str, params: dict[str, Any], req: _Request, related: str | None = None
    ) -> dict[str, Any]:
        waiter = _Waiter()
        with self._lock:
            if self._closing:
                raise ConnectionClosed("the connection is closed")
            self._next_id += 1
            rid = self._next_id
            self._outgoing[rid] = waiter
        request = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self._send(request, related or req.key)
        timeout = self.server.client_request_timeout
        deadline = time.monotonic() + timeout
        while not waiter.event.wait(min(0.05, max(deadline - time.monotonic(), 0.0))):
            if req.cancelled.is_set() or time.monotonic() >= deadline:
                with self._lock:
                    self._outgoing.pop(rid, None)
                reason = "cancelled" if req.cancelled.is_set() else "timed out"
                self._notify(
                    "notifications/cancelled", {"requestId": rid, "reason": reason}, req.key
                )
                if reason == "cancelled":
                    raise McpError(f"{method}: the request was cancelled")
                raise RequestTimeout(f"{method}: no answer from the client in {timeout} s", timeout)
        if isinstance(waiter.error, RpcError):  # not re-sent as a JSON-RPC error of ours
            raise McpError(
                f"the client answered {method} with an error: {waiter.error}"
            ) from waiter.error
        if waiter.error is not None:
            raise waiter.error
        assert waiter.result is not None
        return waiter.result

    # --- output ----------------------------------------------------------------------

    def _notify(self, method: str, params: dict[str, Any], related: str | None = None) -> None:
        """Send a notification; ``related`` is the key of the request it belongs to."""
        self._send({"jsonrpc": "2.0", "method": method, "params": params}, related)

    def _send(
        self, message: dict[str, Any] | list[dict[str, Any]], related: str | None = None
    ) -> None:
        with self._write_lock:
            self._send_locked(message, related)

    def _send_locked(self, message: Any, related: str | None = None) -> None:
        if self._closed:
            return
        try:
            if self._routed:
                cast(RoutedSend, self._send_fn)(message, related)
            else:
                cast(Send, self._send_fn)(message)
        except Exception:
            log.warning("could not send a message to the client", exc_info=True)

    # --- shutdown --------------------------------------------------------------------

    def close(self, timeout: float = 1.0) -> None:
        """Stop serving: refuse new requests, fail pending server → client requests, end
        open subscriptions (a final ``subscriptions/listen`` result), give in-flight requests
        up to ``timeout`` seconds to answer, then drop whatever comes later. Idempotent."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            waiters = list(self._outgoing.values())
            self._outgoing.clear()
            listens = [rid for rid, _ in self._listens.values()]
            for key in list(self._listens):
                self._inflight.pop(key, None)
            self._listens.clear()
        for w in waiters:
            w.error = ConnectionClosed("the server connection closed")
            w.event.set()
        for rid in listens:
            meta = {pv.META_SUBSCRIPTION_ID: rid}
            self._send(
                {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", "_meta": meta}},
                _id_key(rid),
            )
            self._notify(
                "notifications/cancelled",
                {"requestId": rid, "reason": "server shutting down"},
                _id_key(rid),
            )
        deadline = time.monotonic() + timeout
        with self._lock:
            while (self._inflight or self._replying) and time.monotonic() < deadline:
                self._idle.wait(max(deadline - time.monotonic(), 0.0))
            for req in self._inflight.values():
                req.cancelled.set()
        with self._write_lock:
            self._closed = True
        self._workers.shutdown()
        self.server._registry.tasks.forget_owner(self)
        self.server._forget(self)

    @property
    def closed(self) -> bool:
        """True once ``close()`` has begun."""
        return self._closing
