"""The Streamable HTTP transport (``type: "http"``, ``proxy``): one POST per message, JSON or
SSE answers, an optional GET stream, sessions, resumption, the fallback to legacy HTTP+SSE and
the 2026-07-28 headers. Its threads, failures and fallback: ``docs/explanation/inside-http.md``
("The Streamable HTTP transport").
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests
import urllib3

from .._accel import SseParser, encode_message
from .._deadline import Deadline
from .._http import auth as _auth
from .._http import body as _body
from .._http import errors as _errors
from .._http import param_headers as _params
from .._http import retry as _retry
from .._http import session as _session
from .._http.causes import never_connected
from .._http.retry import retry_delay
from .._http.slots import Slot, Workers
from .._http.unix_client import Answer
from .._secrets import redact_url
from ..errors import (
    ConnectError,
    ConnectionClosed,
    McpError,
    MessageTooLarge,
    RemoteProtocolError,
    RequestTimeout,
    SessionExpired,
    TransportError,
)
from ..protocol import versions as v
from .base import OnClose, OnMessage, Outgoing, SendFailed, TransportBase

__all__ = ["HttpTransport"]

log = logging.getLogger("mcp_lite.http")

_NETWORK_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)
_MAX_TERMINAL_FAILURES = 3
_MAX_STREAM_FAILURES = 5  # GET reconnects in a row that brought no event
_MAX_ERROR_BODY = 64 * 1024
_DELETE_TIMEOUT = 1.0  # total: close() never waits longer for the DELETE
_GRACE = 0.3  # after a call's deadline, the timer aborts what the session did not
# Total bound of a POST nobody waits for (a notification, our answer to a server request).
_ORDERED_TIMEOUT = 30.0
_MAX_ORDERED = 1024  # queued notifications/answers; past it send() refuses
_TAIL_WAIT = 0.05  # how long the end of an answer's SSE stream is waited for
_NAMED_METHODS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",  # the tasks extension routes by task id
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_MODERN_ERRORS = (-32022, -32021, -32020)
_SESSION_NOT_FOUND = -32001


@dataclass(eq=False)
class _Exchange:
    """One POSTed request whose answer a worker is reading."""

    request_id: int | str
    method: str
    modern: bool
    slot: Slot
    inline: bool = False  # read on the caller's own thread
    response: requests.Response | None = None
    cancelled: bool = False
    done: bool = False
    barrier: int = 0  # ordered sends queued before this request: they go first


@dataclass
class _Pumped:
    answered: bool = False
    events: int = 0
    error: BaseException | None = field(default=None, repr=False)


class HttpTransport(TransportBase):
    """Streamable HTTP to ``options.url``; see the module docstring.

    Args:
        options: URL, headers, auth, timeouts and limits (``_http._session.HttpOptions``).
        fallback_to_sse: try legacy HTTP+SSE at the same URL when ``initialize`` is refused.
    """

    def __init__(self, options: _session.HttpOptions, *, fallback_to_sse: bool = True) -> None:
        self.options = options
        self.name = options.name or options.url
        self._fallback = fallback_to_sse
        self._session = _session.make_session(options)
        self._owner_pid = os.getpid()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._closing = False
        self._dead = False
        self._on_message: OnMessage | None = None
        self._on_close: OnClose | None = None
        self._session_id: str | None = None
        self._protocol_version: str | None = None
        self._active: dict[int | str, _Exchange] = {}
        self._failures = 0
        # Ordered sends (notifications, our answers) queued and finished: a request waits
        # until those queued before it are out, so the server sees them in order.
        self._ordered_cond = threading.Condition()
        self._ordered_queued = 0
        self._ordered_done = 0
        self._legacy: Any = None  # an SseTransport once we fell back
        # A 404 on the session ends the transport once the requests still in flight have
        # their own answers (a Hub sets it for a gateway: see _expired), not at once.
        self.drain_on_expiry = False
        self._expiry: McpError | None = None
        self._param_maps: dict[Any, dict[tuple[str, ...], str]] = {}  # tool -> x-mcp-header
        self._listener: threading.Thread | None = None
        self._listen_response: requests.Response | None = None
        self._listen_slot = Slot()
        self._ordered_slot = Slot()
        # Daemon workers (never joined at exit): a hung POST cannot delay interpreter exit,
        # and its deadline frees the worker. Blocking callers POST on their own thread.
        self._pool = Workers(f"mcp-lite-http[{self.name}]", options.pool_size * 4)
        self._ordered = Workers(f"mcp-lite-http-send[{self.name}]", 1)

    # --- facts --------------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self._session_id

    @property
    def legacy(self) -> bool:
        """True once this transport fell back to legacy HTTP+SSE."""
        return self._legacy is not None

    # --- Transport ----------------------------------------------------------------------------

    def start(
        self, on_message: OnMessage, on_close: OnClose, *, deadline: Deadline | None = None
    ) -> None:
        """Nothing goes on the wire yet: the first POST is the connection test (each request
        carries its caller's deadline in ``Outgoing.deadline``)."""
        self._on_message = on_message
        self._on_close = on_close

    def send(self, message: Outgoing) -> None:
        legacy = self._legacy
        if legacy is not None:
            legacy.send(message)
            return
        modern = _is_modern(message.payload)
        exch: _Exchange | None = None
        with self._lock:
            if self._closing or self._dead:
                raise ConnectionClosed(f"the connection to MCP server {self.name!r} is closed")
            if self._expiry is not None:  # (never written: a new connection may send it)
                raise ConnectionClosed(f"{self._expiry}; the connection is ending")
            try:
                if message.is_request:
                    exch = _Exchange(
                        message.payload["id"],
                        message.payload["method"],
                        modern,
                        Slot(message.deadline, grace=_GRACE),
                        inline=message.inline,
                        barrier=self._ordered_queued,
                    )
                    self._active[exch.request_id] = exch
                    if not message.inline:
                        # The caller's context (an OpenTelemetry span) follows the POST to its
                        # worker, so a token refresh made there is a span of the caller's trace.
                        self._pool.submit(
                            contextvars.copy_context().run, self._run_request, message, exch
                        )
                else:
                    if self._ordered_queued - self._ordered_done >= _MAX_ORDERED:
                        raise TransportError(
                            f"{_MAX_ORDERED} messages to MCP server {self.name!r} are waiting "
                            f"to be sent; refusing more"
                        )
                    self._ordered_queued += 1
                    self._ordered.submit(self._run_other, message, modern, message.deadline)
            except RuntimeError as exc:  # pools shut down by a concurrent close
                raise ConnectionClosed(f"the connection to {self.name!r} is closed") from exc
        if exch is not None and message.inline:
            self._run_request(message, exch)  # the caller's own thread: no hand-off

    def negotiated(self, protocol_version: str) -> None:
        """The handshake agreed on a version: send it from now on; open the GET stream."""
        if self._legacy is not None:
            return
        self._protocol_version = protocol_version
        if v.is_stateless(protocol_version):
            return  # 2026-07-28: no session, no GET stream
        with self._lock:
            if self._listener is not None or self._closing or self._dead:
                return
            self._listener = threading.Thread(
                target=self._listen_loop, daemon=True, name=f"mcp-lite-http-get[{self.name}]"
            )
            self._listener.start()

    def cancel_request(self, request_id: int | str) -> bool:
        """Stop reading the answer to ``request_id``. True on 2026-07-28, where closing the
        response stream is the cancellation; the handshake era still needs the notification."""
        legacy = self._legacy
        if legacy is not None:
            return bool(legacy.cancel_request(request_id))
        exch = self._active.get(request_id)
        if exch is None:  # already over; on 2026-07-28 its closed stream said it all
            version = self._protocol_version
            return version is not None and v.is_stateless(version)
        exch.cancelled = True
        exch.slot.abort()  # wakes a worker waiting for headers too, not only for the body
        _body.abort(exch.response)
        with self._ordered_cond:  # a request still waiting to be sent: drop it now
            self._ordered_cond.notify_all()
        return exch.modern

    def close(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if os.getpid() != self._owner_pid:
            return  # a forked child: the sockets and the session belong to the parent
        if self._legacy is not None:
            self._legacy.close()
        self._teardown(delete=not self._dead)

    # --- sending ------------------------------------------------------------------------------

    def _run_request(self, message: Outgoing, exch: _Exchange) -> None:
        try:
            self._wait_ordered(exch)
            if exch.cancelled or self._closing or message.abandoned():
                return  # the caller gave up (or we closed) before it was sent: never send it
            left = exch.slot.remaining()
            if exch.slot.aborted or (left is not None and left <= 0):
                raise self._late(exch)
            self._exchange(message, exch)
        except McpError as exc:
            self._fail(exch, exc)
        except Exception as exc:  # a bug: never lose the request silently
            log.exception("HTTP worker for %r crashed", self.name)
            self._fail(exch, ConnectionClosed(f"internal error talking to {self.name!r}: {exc!r}"))
        finally:
            exch.slot.release()
            self._active.pop(exch.request_id, None)
            if self._expiry is not None:
                self._drained()

    def _wait_ordered(self, exch: _Exchange) -> None:
        """Notifications queued before this request go first (bounded by its deadline)."""
        if self._ordered_done >= exch.barrier:
            return  # nothing queued before it (read without the lock: it only grows)
        limit = self.options.connect_timeout + 5.0
        remaining = exch.slot.remaining()
        end = time.monotonic() + (limit if remaining is None else min(limit, remaining))
        with self._ordered_cond:
            while self._ordered_done < exch.barrier and not (exch.cancelled or self._closing):
                left = end - time.monotonic()
                if left <= 0:
                    return
                self._ordered_cond.wait(left)

    def _late(self, exch: _Exchange) -> McpError:
        return RequestTimeout(
            f"{exch.method} to MCP server {self.name!r} ran out of time before it was answered"
        )

    def _run_other(self, message: Outgoing, modern: bool, deadline: Deadline | None) -> None:
        try:
            self._send_other(message, modern, deadline)
        finally:
            with self._ordered_cond:
                self._ordered_done += 1
                self._ordered_cond.notify_all()

    def _send_other(self, message: Outgoing, modern: bool, deadline: Deadline | None) -> None:
        what = message.payload.get("method") or "a response"
        if self._closing:
            return  # after close(): nothing more goes out (no token fetch, no OAuth discovery)
        slot = Slot(Deadline.of(deadline, _ORDERED_TIMEOUT).earlier(_ORDERED_TIMEOUT))
        self._ordered_slot = slot  # one sender: close() aborts the POST in flight
        if self._closing:
            slot.abort()
        try:
            try:
                response = self._post(message, modern, None, slot)
            except McpError as exc:
                log.warning("could not send %s to %r: %s", what, self.name, exc)
                return
            with response:
                if response.status_code < 300:
                    _body.drain(response, _MAX_ERROR_BODY)  # keeps the connection reusable
                    return
                body = _body.read_limited(response, _MAX_ERROR_BODY)
                if self._is_expired(response, body, modern):
                    self._expired(None)
                    return
                error = _errors.status_error(
                    response, f"POST {what}", body.decode("utf-8", "replace")
                )
                log.warning("MCP server %r refused %s: %s", self.name, what, error)
        finally:
            slot.release()

    def _post(
        self,
        message: Outgoing,
        modern: bool,
        exch: _Exchange | None,
        slot: Slot,
        whole: bool = False,
    ) -> Any:
        """The POST's response; with ``whole`` (no auth: no status of its answer needs a
        second look) a small JSON success on the ``unix://`` lean path may come back as a
        ``unix_client.Answer`` instead (``_answer`` reads it)."""
        headers = self._headers(message.payload, modern)
        if whole and self.options.auth is None:
            return self._http("POST", headers, message.data, exch, slot, whole=True)
        # Bearer token; 401 -> refresh + one retry; 403 insufficient_scope -> bounded step-up.
        return _auth.send_authorized(
            self.options.auth,
            self.options.url,
            headers,
            lambda sent: self._http("POST", sent, message.data, exch, slot),
            deadline=slot.deadline,
            given_up=lambda: self._closing or message.abandoned(),
        )

    def _http(
        self,
        method: str,
        headers: dict[str, str],
        data: bytes | None,
        exch: _Exchange | None,
        slot: Slot,
        read_timeout: float | None = None,
        whole: bool = False,
    ) -> Any:
        timeout = slot.socket_timeouts(
            self.options.connect_timeout, read_timeout or self.options.read_timeout
        )
        if self._closing:
            raise ConnectionClosed(f"the connection to MCP server {self.name!r} is closed")
        try:
            with slot.active():
                response = _session.request_whole(
                    self._session,
                    method,
                    self.options.url,
                    headers=headers,
                    data=data,
                    timeout=timeout,
                    whole=whole,
                )
        except McpError:
            raise
        except Exception as exc:
            if slot.aborted and exch is not None and not exch.cancelled:
                raise self._late(exch) from exc
            error = self._network_failure(exc, f"{method} {redact_url(self.options.url)}", exch)
            if never_connected(exc):
                error.unsent = True  # type: ignore[attr-defined]  # nothing was written
            raise error from exc
        if type(response) is Answer:  # read whole, its connection back in the pool already
            if exch is not None and slot.aborted and not exch.cancelled:
                raise self._late(exch)
            return response
        if exch is not None:
            if slot.aborted and not exch.cancelled:
                # Cut at its deadline while the headers dripped in: what arrived is no answer.
                _body.abort(response)
                raise self._late(exch)
            exch.response = response
            if exch.cancelled:
                _body.abort(response)
        return response

    def _headers(self, payload: dict[str, Any], modern: bool) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if modern:
            params = payload.get("params") or {}
            meta = params.get("_meta") or {}
            headers["MCP-Protocol-Version"] = str(meta.get(v.META_PROTOCOL_VERSION))
            method = payload.get("method")
            if isinstance(method, str):
                headers["Mcp-Method"] = _params.encode_header_value(method)
                key = _NAMED_METHODS.get(method)
                value = params.get(key) if key else None
                if isinstance(value, str):
                    headers["Mcp-Name"] = _params.encode_header_value(value)
                mapping = self._param_maps.get(value) if method == "tools/call" else None
                if mapping:
                    headers.update(_params.param_headers(mapping, params.get("arguments")))
            return headers
        return self._session_headers(headers)

    def _session_headers(self, headers: dict[str, str]) -> dict[str, str]:
        if self._session_id:
            headers["Mcp-Session-Id"] = self._session_id
        if self._protocol_version:
            headers["MCP-Protocol-Version"] = self._protocol_version
        return headers

    # --- answers ------------------------------------------------------------------------------

    def _exchange(self, message: Outgoing, exch: _Exchange) -> None:
        response = self._post(message, exch.modern, exch, exch.slot, whole=True)
        if type(response) is Answer:
            self._answer(exch, response)
            return
        attempt = 0
        while response.status_code >= 429:  # transient? try again within the deadline
            delay = retry_delay(
                self.options.retry,
                exch.method,
                response.status_code,
                response.headers,
                attempt,
                exch.slot.remaining(),
            )
            if delay is None:
                break
            attempt += 1
            log.debug(
                "MCP server %r answered %s with HTTP %s; retry %d in %.2f s",
                self.name,
                exch.method,
                response.status_code,
                attempt,
                delay,
            )
            _body.drain(response, _MAX_ERROR_BODY)
            response.close()
            if self._stop.wait(delay) or exch.cancelled:
                return
            response = self._post(message, exch.modern, exch, exch.slot)
        status = response.status_code
        if status >= 300:
            with response:
                self._refused(message, exch, response)
            return
        self._success()
        if exch.method == "initialize" and not exch.modern:
            session_id = response.headers.get("mcp-session-id")
            if session_id:
                self._session_id = session_id
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "text/event-stream":
            self._read_stream(response, exch)
            return
        with response:
            if ctype == "application/json":
                body = _body.read_limited(response, self.options.max_message_size, strict=True)
                if exch.cancelled:
                    return  # aborted mid-body by cancel_request or close
                if len(body) > self.options.max_message_size:
                    self._fail(
                        exch,
                        MessageTooLarge(
                            f"the answer to {exch.method} from {self.name!r} is larger than "
                            f"max_message_size={self.options.max_message_size} bytes",
                            self.options.max_message_size,
                            body[:256],
                        ),
                    )
                    return
                self._answered(exch, body)
                self._deliver(body)
                return
        what = f"HTTP {status} with content type {ctype or 'none'}"
        self._fail(
            exch,
            RemoteProtocolError(
                f"MCP server {self.name!r} answered {exch.method} with {what} instead of a "
                f"JSON-RPC response"
            ),
        )

    def _answer(self, exch: _Exchange, answer: Answer) -> None:
        """A small JSON success read whole (the ``unix://`` lean path): what the general
        path below does with a 2xx ``application/json`` response, without one."""
        self._success()
        if exch.method == "initialize" and not exch.modern:
            session_id = answer.header("mcp-session-id")
            if session_id:
                self._session_id = session_id
        body = answer.body[: self.options.max_message_size + 1]  # as read_limited reads it
        if exch.cancelled:
            return  # cancelled (or closed) while the answer came in
        limit = self.options.max_message_size
        if len(body) > limit:
            self._fail(
                exch,
                MessageTooLarge(
                    f"the answer to {exch.method} from {self.name!r} is larger than "
                    f"max_message_size={limit} bytes",
                    limit,
                    body[:256],
                ),
            )
            return
        self._answered(exch, body)
        self._deliver(body)

    def _answered(self, exch: _Exchange, data: bytes) -> None:
        """``data`` answers ``exch``; a ``tools/list`` page teaches us its x-mcp-headers."""
        exch.done = True
        if exch.method != "tools/list" or not exch.modern:
            return
        _params.learn_param_headers(data, self._param_maps)

    def _refused(self, message: Outgoing, exch: _Exchange, response: requests.Response) -> None:
        status = response.status_code
        body = _body.read_limited(response, _MAX_ERROR_BODY)
        rpc = _body.rpc_error(body)
        if self._is_expired(response, body, exch.modern):
            self._expired(exch)
            return
        if (
            self._fallback
            and exch.method == "initialize"
            and status in (400, 404, 405)
            and not (rpc and rpc.get("code") in _MODERN_ERRORS)
        ):
            self._fall_back(message, exch, status)
            return
        if status != 401 and rpc is not None:
            exch.done = True
            self._deliver(encode_message({"jsonrpc": "2.0", "id": exch.request_id, "error": rpc}))
            return
        self._fail(
            exch,
            _errors.status_error(
                response,
                f"MCP server {self.name!r} refused {exch.method} (POST {redact_url(self.options.url)})",
                body.decode("utf-8", "replace"),
            ),
        )

    def _read_stream(self, response: requests.Response, exch: _Exchange) -> None:
        parser = SseParser(self.options.max_message_size)
        pumped = self._pump(response, parser, exch)
        if pumped.answered or exch.cancelled or self._stop.is_set():
            return
        if exch.slot.aborted:  # its deadline passed mid-stream
            self._fail(exch, self._late(exch))
            return
        if pumped.error is not None and not parser.last_event_id:
            self._network_failure(pumped.error, f"reading the answer to {exch.method}", exch)
        if not exch.modern and parser.last_event_id and self._resume(parser, exch):
            return
        how = f"broke ({pumped.error})" if pumped.error is not None else "ended"
        self._fail(
            exch,
            ConnectionClosed(
                f"the response stream for {exch.method} from MCP server {self.name!r} {how} "
                f"before the response arrived"
            ),
        )

    def _pump(
        self, response: requests.Response, parser: SseParser, exch: _Exchange | None
    ) -> _Pumped:
        """Deliver the events of one SSE response until it ends or carries ``exch``'s answer."""
        pumped = _Pumped()
        try:
            for chunk in _body.iter_body(response):
                for item in parser.feed(chunk):
                    pumped.events += 1
                    if isinstance(item, MessageTooLarge):
                        self._deliver(item)
                        continue
                    if item.event not in ("message", "") or not item.data:
                        continue  # a priming event (id only), or an event type we do not use
                    data = item.data.encode("utf-8")
                    answered = exch is not None and _body.answers(data, exch.request_id)
                    if answered and exch is not None:
                        self._answered(exch, data)
                    self._deliver(data)
                    if answered and exch is not None:
                        # The server ends the stream after the answer: read that end (for a
                        # moment at most) so the connection goes back to the pool.
                        pumped.answered = True
                        exch.slot.settimeout(_TAIL_WAIT)
        except Exception as exc:  # the socket broke, or close()/cancel aborted it under
            if not pumped.answered:  # http.client (which then fails in odd ways: ValueError)
                pumped.error = exc
        finally:
            response.close()
        return pumped

    def _resume(self, parser: SseParser, exch: _Exchange) -> bool:
        """Resume a broken POST stream with GET + ``Last-Event-ID`` (handshake era)."""
        failures = 0
        while failures < _MAX_STREAM_FAILURES and not (exch.cancelled or self._stop.is_set()):
            if self._stop.wait(_retry.reconnect_delay(parser.retry, failures)):
                return False
            before = parser.last_event_id
            try:
                response = self._get(parser.last_event_id, exch)
            except McpError as exc:
                log.info("resuming %s on %r failed: %s", exch.method, self.name, exc)
                failures += 1
                continue
            if response.status_code != 200:
                with response:
                    body = _body.read_limited(response, _MAX_ERROR_BODY)
                    if self._is_expired(response, body, False, get=True):
                        self._expired(exch)
                        return True
                return False
            pumped = self._pump(response, parser, exch)
            if pumped.answered:
                return True
            failures = 0 if parser.last_event_id != before else failures + 1
        return False

    # --- the GET stream -------------------------------------------------------------------------

    def _get(self, last_event_id: str, exch: _Exchange | None) -> requests.Response:
        headers = self._session_headers({"Accept": "text/event-stream"})
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        headers.update(_auth.bearer(self.options.auth, self.options.url))
        read = self.options.idle_timeout if exch is None else self.options.read_timeout
        if exch is not None:
            slot = exch.slot
        else:
            slot = self._listen_slot = Slot()
            if self._stop.is_set():
                slot.abort()
        timeout = slot.socket_timeouts(self.options.connect_timeout, read)
        try:
            with slot.active():
                response = _session.request(
                    self._session, "GET", self.options.url, headers=headers, timeout=timeout
                )
        except McpError:
            raise
        except Exception as exc:
            if slot.aborted and exch is not None and not exch.cancelled:
                raise self._late(exch) from exc
            raise _errors.map_error(exc, f"GET {redact_url(self.options.url)}") from exc
        if exch is not None:
            exch.response = response
        else:
            self._listen_response = response
        if self._stop.is_set():
            _body.abort(response)
        return response

    def _listen_loop(self) -> None:
        """The handshake era's GET stream: server requests and notifications outside any
        request. 405 means "none" (never retried); a clean end is polling (reconnect after
        ``retry``); failures are retried with backoff, at most a few times in a row."""
        parser = SseParser(self.options.max_message_size)
        failures = 0
        while not self._stop.is_set():
            try:
                response = self._get(parser.last_event_id, None)
            except McpError as exc:
                response = None
                log.info("GET stream of %r failed: %s", self.name, exc)
            if response is not None and response.status_code != 200:
                with response:
                    status = response.status_code
                    body = _body.read_limited(response, _MAX_ERROR_BODY)
                    if status == 405:
                        log.debug("MCP server %r offers no GET stream (405)", self.name)
                        return
                    if self._is_expired(response, body, False, get=True):
                        self._expired(None)
                        return
                    log.info("GET stream of %r refused: HTTP %s", self.name, status)
                    response = None
            if response is not None:
                pumped = self._pump(response, parser, None)
                failures = 0 if pumped.events else failures + 1
            else:
                failures += 1
            if failures >= _MAX_STREAM_FAILURES:
                log.warning(
                    "giving up the GET stream of %r after %d failed attempts", self.name, failures
                )
                return
            self._stop.wait(_retry.reconnect_delay(parser.retry, failures))

    # --- failure handling -----------------------------------------------------------------------

    def _is_expired(
        self, response: requests.Response, body: bytes, modern: bool, *, get: bool = False
    ) -> bool:
        """404 on a known session (POST), or a 404 saying -32001. A bare 404 on GET is a
        server without a GET route, not an expiry (the next POST finds out either way)."""
        if response.status_code != 404 or modern:
            return False
        rpc = _body.rpc_error(body)
        if rpc is not None and rpc.get("code") == _SESSION_NOT_FOUND:
            return True
        return bool(self._session_id) and not get

    def _expired(self, exch: _Exchange | None) -> None:
        error = SessionExpired(
            f"MCP server {self.name!r} no longer knows session {self._session_id!r} (HTTP 404)"
        )
        if exch is not None:
            self._fail(exch, error)
        if not self.drain_on_expiry:
            self._report_close(error)
            return
        # The other requests in flight keep their own outcomes: sent to a gateway that
        # restarted, each gets its own 404 (it ran nothing: sent again); one that was
        # running in the gateway that died fails with its own lost answer (never sent
        # again). Nothing new is sent; the transport ends with the last of them.
        with self._lock:
            self._expiry = self._expiry or error
        self._drained()

    def _drained(self) -> None:
        """After a session expiry: report the end once no request is in flight."""
        with self._lock:
            if self._active or self._expiry is None:
                return
            why = self._expiry
        self._report_close(ConnectionClosed(str(why)))

    def _fall_back(self, message: Outgoing, exch: _Exchange, status: int) -> None:
        from .sse import SseTransport

        log.info(
            "MCP server %r refused initialize with HTTP %s; trying legacy HTTP+SSE",
            self.name,
            status,
        )
        legacy = SseTransport(self.options)
        assert self._on_message is not None and self._on_close is not None
        try:
            legacy.start(self._on_message, self._report_close)
        except McpError as exc:
            self._fail(
                exch,
                ConnectError(
                    f"MCP server {self.name!r} refused Streamable HTTP (HTTP {status}) and is not a "
                    f"legacy HTTP+SSE server either: {exc}"
                ),
            )
            return
        self._legacy = legacy
        exch.done = True
        try:
            legacy.send(message)
        except McpError as exc:
            self._fail(exch, exc)

    def _network_failure(self, exc: BaseException, what: str, exch: _Exchange | None) -> McpError:
        error = _errors.map_error(exc, what)
        if (exch is not None and (exch.cancelled or exch.slot.aborted)) or self._closing:
            return error  # we cut it ourselves: says nothing about the server
        if _errors.is_terminal_network_error(exc):
            with self._lock:
                self._failures += 1
                failures = self._failures
            if failures >= _MAX_TERMINAL_FAILURES:
                if exch is not None:
                    self._fail(exch, error)
                self._report_close(
                    ConnectionClosed(
                        f"MCP server {self.name!r} failed {failures} times in a row; last: {error}"
                    )
                )
        return error

    def _success(self) -> None:
        self._failures = 0

    def _fail(self, exch: _Exchange, error: McpError) -> None:
        if exch.cancelled or exch.done:
            return
        if exch.inline and exch.slot.aborted:
            return  # its deadline passed: the caller, back from send(), expires and cancels it
        exch.done = True
        self._deliver(SendFailed(exch.request_id, error))

    def _deliver(self, frame: bytes | MessageTooLarge | SendFailed) -> None:
        on_message = self._on_message
        if on_message is not None and not self._closing:
            on_message(frame)

    def _report_close(self, error: McpError) -> None:
        with self._lock:
            if self._dead or self._closing:
                return
            self._dead = True
        if self._on_close is not None:
            self._on_close(error)
        # The session does not call close() after we reported the end: clean up here.
        with self._lock:
            self._closing = True
        self._teardown(delete=False)

    def _teardown(self, *, delete: bool) -> None:
        self._stop.set()
        for exch in list(self._active.values()):
            exch.cancelled = True
            exch.slot.abort()
            _body.abort(exch.response)
        self._listen_slot.abort()
        self._ordered_slot.abort()
        _body.abort(self._listen_response)
        with self._ordered_cond:
            self._ordered_cond.notify_all()
        if delete and self._session_id and not self._legacy:
            self._delete()
        # A worker still finishing its POST may open a fresh pooled connection after the
        # close below; close the session once more when the last worker is done, so no
        # socket is left for the garbage collector (without making close() wait for it).
        drained = _session.Countdown(2, self._session.close)
        self._pool.shutdown(drained)
        self._ordered.shutdown(drained)
        listener = self._listener
        if listener is not None and listener is not threading.current_thread():
            listener.join(1.0)
        _session.close_session(self._session, self._listen_response)

    def _delete(self) -> None:
        """End the session (DELETE), waiting at most ``_DELETE_TIMEOUT`` in total."""
        slot = Slot(Deadline.after(_DELETE_TIMEOUT))
        headers = self._session_headers({})
        try:
            with slot.active():
                response = _session.request(
                    self._session,
                    "DELETE",
                    self.options.url,
                    headers=headers,
                    timeout=slot.socket_timeouts(_DELETE_TIMEOUT, _DELETE_TIMEOUT),
                )
            with response:
                _body.drain(response, _MAX_ERROR_BODY)
        except Exception as exc:  # 405, a slow or dead server: the session ends anyway
            log.debug("DELETE of session on %r failed: %s", self.name, exc)
        finally:
            slot.release()


# --- helpers -------------------------------------------------------------------------------------


def _is_modern(payload: dict[str, Any]) -> bool:
    params = payload.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and v.is_stateless(str(meta.get(v.META_PROTOCOL_VERSION)))
