"""The legacy HTTP+SSE transport (2024-11-05; ``type: "sse"`` and ``"sse-ide"``): a GET opens the
event stream, whose ``endpoint`` event names where to POST messages, and answers come on the stream
(see docs/explanation/inside-http.md)."""

from __future__ import annotations

import logging
import os
import threading
import time
from urllib.parse import urljoin

import requests

from .._accel import SseParser
from .._deadline import Deadline
from .._http import auth as _auth
from .._http import body as _body
from .._http import errors as _errors
from .._http import session as _session
from .._http.retry import retry_delay
from .._http.slots import Slot, Workers
from .._secrets import redact_url
from ..errors import (
    AuthRequired,
    ConnectError,
    ConnectionClosed,
    McpError,
    MessageTooLarge,
    RequestTimeout,
    TransportError,
)
from .base import OnClose, OnMessage, Outgoing, SendFailed, TransportBase

__all__ = ["SseTransport"]

log = logging.getLogger("mcp_lite.sse")

_MAX_ACK_BODY = 64 * 1024  # of a 202: read (so the connection is reused) up to this, else hang up
_GRACE = 0.3  # after a call's deadline, the timer aborts what the session did not
_ORDERED_TIMEOUT = 30.0  # total bound of a POST nobody waits for
_MAX_QUEUED = 1024


class SseTransport(TransportBase):
    """Legacy HTTP+SSE to ``options.url``; see the module docstring.

    Args:
        options: URL (the SSE endpoint), headers, auth, timeouts (``HttpOptions``).
        endpoint_timeout: how long ``start`` waits for the ``endpoint`` event
            (default: the connect timeout).
    """

    def __init__(
        self, options: _session.HttpOptions, *, endpoint_timeout: float | None = None
    ) -> None:
        self.options = options
        self.name = options.name or options.url
        self._endpoint_timeout = endpoint_timeout or options.connect_timeout
        self._session = _session.make_session(options)
        self._owner_pid = os.getpid()
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closing = False
        self._reported = False
        self._endpoint: str | None = None
        self._endpoint_error: McpError | None = None
        self._endpoint_ready = threading.Event()
        self._response: requests.Response | None = None
        self._reader: threading.Thread | None = None
        self._on_message: OnMessage | None = None
        self._on_close: OnClose | None = None
        self._stream_slot = Slot()
        self._stop = threading.Event()
        self._slots: dict[int | str, Slot] = {}  # requests being POSTed
        self._cancelled: set[int | str] = set()
        self._pool = Workers(f"mcp-lite-sse-post[{self.name}]", options.pool_size * 4)
        self._ordered = Workers(f"mcp-lite-sse-send[{self.name}]", 1)
        self._ordered_cond = threading.Condition()
        self._ordered_slot = Slot()
        self._ordered_queued = 0
        self._ordered_done = 0

    @property
    def endpoint(self) -> str | None:
        """The POST URL the server announced (None until ``start`` returned)."""
        return self._endpoint

    # --- Transport ----------------------------------------------------------------------------

    def start(
        self, on_message: OnMessage, on_close: OnClose, *, deadline: Deadline | None = None
    ) -> None:
        """Open the stream and wait for the ``endpoint`` event, both within ``deadline`` (the
        caller's; capped by ``endpoint_timeout``).

        Raises:
            AuthRequired: HTTP 401.
            ConnectError: unreachable, not an SSE stream, no endpoint in time, or an endpoint
                on another origin.
        """
        self._on_message = on_message
        self._on_close = on_close
        limit = Deadline.of(deadline, self._endpoint_timeout).earlier(self._endpoint_timeout)
        # Opening the stream and getting the endpoint share one deadline: a server that
        # never sends the stream's headers cannot hold start() (idle_timeout may be None).
        self._stream_slot = Slot(limit)
        try:
            # Bearer token; 401 -> refresh (OAuth) + one retry, as for the POSTs.
            response = _auth.send_authorized(
                self.options.auth,
                self.options.url,
                {"Accept": "text/event-stream"},
                lambda headers: self._open_stream(headers),
                deadline=limit,
                method="GET",
            )
        except McpError as exc:
            self._not_started()
            if isinstance(exc, RequestTimeout) and limit.expired():
                # no time was left to send the GET: say which phase it was
                raise self._too_slow(limit, "did not open its SSE stream") from exc
            raise
        except Exception as exc:
            self._not_started()
            if self._stream_slot.aborted or limit.expired():
                raise self._too_slow(limit, "did not open its SSE stream") from exc
            raise _as_connect_error(
                _errors.map_error(exc, f"GET {redact_url(self.options.url)}")
            ) from exc
        if self._stream_slot.aborted:  # cut while its headers dripped in: no answer
            _body.abort(response)
            self._not_started()
            raise self._too_slow(limit, "did not open its SSE stream")
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code != 200 or ctype != "text/event-stream":
            with response:
                error = _errors.status_error(
                    response,
                    f"connecting: MCP server {self.name!r} did not open an SSE stream at "
                    f"{redact_url(self.options.url)}",
                )
                if response.status_code == 200:
                    error = ConnectError(f"{error} (content type {ctype or 'none'})")
            self._not_started()
            raise error
        # From here the stream lasts as long as the connection: its silences are bounded
        # by idle_timeout only (the read timeout of the opening was the deadline's).
        self._stream_slot.settimeout(self.options.idle_timeout)
        self._response = response
        self._reader = threading.Thread(
            target=self._read, daemon=True, name=f"mcp-lite-sse-reader[{self.name}]"
        )
        self._reader.start()
        if not self._endpoint_ready.wait(limit.remaining()):
            self._endpoint_error = self._too_slow(limit, "sent no 'endpoint' event")
        self._stream_slot.disarm()  # the stream now lasts as long as the connection
        if self._endpoint_error is not None:
            self.close()
            raise self._endpoint_error

    def _too_slow(self, limit: Deadline, what: str) -> ConnectError:
        return ConnectError(
            f"connecting: MCP server {self.name!r} {what} at {redact_url(self.options.url)} "
            f"within the {limit.describe()}"
        )

    def send(self, message: Outgoing) -> None:
        endpoint = self._endpoint
        if endpoint is None or self._closing or self._reported:
            raise ConnectionClosed(f"the SSE connection to MCP server {self.name!r} is closed")
        request_id = message.payload.get("id") if message.is_request else None
        with self._lock:
            try:
                if request_id is not None:
                    # backstop: the session aborts it first
                    slot = Slot(message.deadline, grace=_GRACE)
                    self._slots[request_id] = slot
                    if not message.inline:
                        self._pool.submit(
                            self._post_request, endpoint, message, slot, self._ordered_queued
                        )
                else:
                    if self._ordered_queued - self._ordered_done >= _MAX_QUEUED:
                        raise TransportError(
                            f"{_MAX_QUEUED} messages to MCP server {self.name!r} are waiting "
                            f"to be sent; refusing more"
                        )
                    self._ordered_queued += 1
                    self._ordered.submit(self._post_other, endpoint, message)
            except RuntimeError as exc:  # shut down by a concurrent close
                raise ConnectionClosed(f"the SSE connection to {self.name!r} is closed") from exc
            barrier = self._ordered_queued
        if request_id is not None and message.inline:
            self._post_request(endpoint, message, slot, barrier)

    def cancel_request(self, request_id: int | str) -> bool:
        """Stop POSTing ``request_id`` (never sent, or its socket shut down); the server
        still needs ``notifications/cancelled`` (False)."""
        with self._lock:
            slot = self._slots.get(request_id)
            if slot is None:
                return False
            self._cancelled.add(request_id)
        slot.abort()
        with self._ordered_cond:
            self._ordered_cond.notify_all()
        return False

    # --- POSTs --------------------------------------------------------------------------------

    def _post_request(self, endpoint: str, message: Outgoing, slot: Slot, barrier: int) -> None:
        request_id = message.payload["id"]
        try:
            self._wait_ordered(slot, barrier, request_id)
            if request_id in self._cancelled or self._closing or message.abandoned():
                return  # the caller gave up before it was sent: never send it
            left = slot.remaining()
            if left is not None and left <= 0:
                raise RequestTimeout(
                    f"{message.payload.get('method')} to MCP server {self.name!r} was not "
                    "sent before its deadline: the messages queued before it were still "
                    "being sent"
                )
            self._post(endpoint, message, slot)
        except McpError as exc:
            if request_id not in self._cancelled:
                self._deliver(SendFailed(request_id, exc))
        except Exception as exc:  # a bug: never lose the request silently
            log.exception("SSE POST worker for %r crashed", self.name)
            self._deliver(SendFailed(request_id, ConnectionClosed(f"internal error: {exc!r}")))
        finally:
            slot.release()
            with self._lock:
                self._slots.pop(request_id, None)
                self._cancelled.discard(request_id)

    def _wait_ordered(self, slot: Slot, barrier: int, request_id: int | str) -> None:
        """Notifications queued before this request go first (bounded by its deadline)."""
        remaining = slot.remaining()
        limit = self.options.connect_timeout + 5.0
        end = time.monotonic() + (limit if remaining is None else min(limit, remaining))
        with self._ordered_cond:
            while self._ordered_done < barrier and not (
                request_id in self._cancelled or self._closing
            ):
                left = end - time.monotonic()
                if left <= 0:
                    return
                self._ordered_cond.wait(left)

    def _post_other(self, endpoint: str, message: Outgoing) -> None:
        what = message.payload.get("method") or "a response"
        slot = Slot(Deadline.after(_ORDERED_TIMEOUT))
        self._ordered_slot = slot  # one sender: close() aborts the POST in flight
        if self._closing:
            slot.abort()
        try:
            if not self._closing:  # nothing goes out after close(): no token fetch either
                self._post(endpoint, message, slot)
        except McpError as exc:
            log.warning("could not send %s to %r: %s", what, self.name, exc)
        finally:
            slot.release()
            with self._ordered_cond:
                self._ordered_done += 1
                self._ordered_cond.notify_all()

    def _post(self, endpoint: str, message: Outgoing, slot: Slot) -> None:
        """POST ``message`` and check the acknowledgement; retry transient refusals
        within the deadline. Raises the error for the message."""
        what = message.payload.get("method") or "a response"
        attempt = 0
        while True:
            response = self._post_once(endpoint, message, slot, what)
            with response:
                status = response.status_code
                if status < 300:
                    _body.drain(response, _MAX_ACK_BODY)
                    return
                delay = retry_delay(
                    self.options.retry,
                    str(message.payload.get("method") or ""),
                    status,
                    response.headers,
                    attempt,
                    slot.remaining(),
                )
                if delay is None or not message.is_request:
                    raise _errors.status_error(
                        response,
                        f"MCP server {self.name!r} refused {what} (POST {redact_url(endpoint)})",
                        _body.read_limited(response, _MAX_ACK_BODY).decode("utf-8", "replace"),
                    )
                _body.drain(response, _MAX_ACK_BODY)
            attempt += 1
            log.debug(
                "MCP server %r answered %s with HTTP %s; retry %d in %.2f s",
                self.name,
                what,
                status,
                attempt,
                delay,
            )
            if self._stop.wait(delay) or slot.aborted:
                raise ConnectionClosed(f"the SSE connection to {self.name!r} is closed")

    def _post_once(
        self, endpoint: str, message: Outgoing, slot: Slot, what: str
    ) -> requests.Response:
        headers = {"Content-Type": "application/json"}
        try:
            timeout = slot.socket_timeouts(self.options.connect_timeout, self.options.read_timeout)
            with slot.active():
                # Bearer token; 401 -> refresh + one retry; 403 insufficient_scope -> step-up.
                response = _auth.send_authorized(
                    self.options.auth,
                    self.options.url,
                    headers,
                    lambda sent: _session.request(
                        self._session,
                        "POST",
                        endpoint,
                        headers=sent,
                        data=message.data,
                        timeout=timeout,
                    ),
                    deadline=slot.deadline,
                    request_url=endpoint,
                    given_up=lambda: self._closing or message.abandoned(),
                )
        except McpError:
            raise
        except Exception as exc:
            if slot.aborted:
                raise self._unacknowledged(what) from exc
            raise _errors.map_error(exc, f"POST {what} to {redact_url(endpoint)}") from exc
        if slot.aborted:  # cut while its headers dripped in: what arrived is no answer
            _body.abort(response)
            raise self._unacknowledged(what)
        return response

    def _unacknowledged(self, what: str) -> RequestTimeout:
        return RequestTimeout(
            f"POST {what} to MCP server {self.name!r} was not acknowledged in time"
        )

    def close(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if os.getpid() != self._owner_pid:
            return
        self._stop.set()
        with self._lock:
            slots = list(self._slots.values())
        for slot in [*slots, self._ordered_slot]:
            slot.abort()
        self._stream_slot.abort()
        _body.abort(self._response)
        with self._ordered_cond:
            self._ordered_cond.notify_all()
        drained = _session.Countdown(2, self._close_session)  # no socket left to the collector
        self._pool.shutdown(drained)
        self._ordered.shutdown(drained)
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(1.0)
        self._close_session()
        self._stream_slot.release()

    def _not_started(self) -> None:
        """start() failed before the reader: free the sockets and the stream's slot."""
        self._close_session()
        self._stream_slot.release()

    def _close_session(self) -> None:
        _session.close_session(self._session, self._response)

    def _open_stream(self, headers: dict[str, str]) -> requests.Response:
        slot = self._stream_slot
        with slot.active():
            return _session.request(
                self._session,
                "GET",
                self.options.url,
                headers=headers,
                timeout=slot.socket_timeouts(self.options.connect_timeout, None),
            )

    # --- internals ----------------------------------------------------------------------------

    def _read(self) -> None:
        response = self._response
        assert response is not None
        parser = SseParser(self.options.max_message_size)
        error: str = "the server ended the SSE stream"
        try:
            for chunk in _body.iter_body(response):
                for item in parser.feed(chunk):
                    self._dispatch(item)
        except Exception as exc:  # a broken socket, or close() aborting it under http.client
            error = f"the SSE stream broke: {exc!r}"
        finally:
            response.close()
        if not self._endpoint_ready.is_set():
            self._endpoint_error = ConnectError(
                f"MCP server {self.name!r} closed the SSE stream before sending its endpoint "
                f"({error})"
            )
            self._endpoint_ready.set()
            return
        with self._lock:
            if self._closing or self._reported:
                return
            self._reported = True
        if self._on_close is not None:
            self._on_close(ConnectionClosed(f"MCP server {self.name!r}: {error}"))
        self._close_session()

    def _dispatch(self, item: object) -> None:
        if isinstance(item, MessageTooLarge):
            self._deliver(item)
            return
        event = getattr(item, "event", "message")
        data: str = getattr(item, "data", "")
        if event == "endpoint":
            if not self._endpoint_ready.is_set():
                self._set_endpoint(data.strip())
            return
        if event in ("message", "") and data and self._endpoint_ready.is_set():
            self._deliver(data.encode("utf-8"))

    def _set_endpoint(self, value: str) -> None:
        target = urljoin(self.options.url, value)
        if not value or _session.origin(target) != _session.origin(self.options.url):
            self._endpoint_error = ConnectError(
                f"MCP server {self.name!r} announced an endpoint on another origin "
                f"({redact_url(target)!r}); refused: messages go only to "
                f"{redact_url(self.options.url)}'s origin"
            )
        else:
            self._endpoint = target
        self._endpoint_ready.set()

    def _deliver(self, frame: bytes | MessageTooLarge | SendFailed) -> None:
        on_message = self._on_message
        if on_message is not None and not self._closing:
            on_message(frame)


def _as_connect_error(error: McpError) -> McpError:
    if isinstance(error, (AuthRequired, ConnectError)):
        return error
    return ConnectError(str(error))
