"""The legacy HTTP+SSE transport (2024-11-05; ``type: "sse"`` and ``"sse-ide"``).

``start`` GETs the SSE URL; a background reader parses the stream. The server's first
event, ``endpoint``, names the URL to POST messages to (relative URLs are resolved against
the SSE URL; another origin is refused). Every later ``message`` event is one JSON-RPC
message for ``on_message``. ``send`` POSTs one message and expects 202 (or 200); the answer
comes on the stream. When the stream ends, the connection is over: ``on_close`` with
``ConnectionClosed``.
"""

from __future__ import annotations

import logging
import os
import threading
from urllib.parse import urljoin

import requests

from .._accel import SseParser
from .._secrets import redact_url
from ..errors import AuthRequired, ConnectError, ConnectionClosed, McpError, MessageTooLarge
from . import _http_common as common
from .base import OnClose, OnMessage, Outgoing

__all__ = ["SseTransport"]

log = logging.getLogger("mcp_lite.sse")


class SseTransport:
    """Legacy HTTP+SSE to ``options.url``; see the module docstring.

    Args:
        options: URL (the SSE endpoint), headers, auth, timeouts (``HttpOptions``).
        endpoint_timeout: how long ``start`` waits for the ``endpoint`` event
            (default: the connect timeout).
    """

    def __init__(
        self, options: common.HttpOptions, *, endpoint_timeout: float | None = None
    ) -> None:
        self.options = options
        self.name = options.name or options.url
        self._endpoint_timeout = endpoint_timeout or options.connect_timeout
        self._session = common.make_session(options)
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

    @property
    def endpoint(self) -> str | None:
        """The POST URL the server announced (None until ``start`` returned)."""
        return self._endpoint

    # --- Transport ----------------------------------------------------------------------------

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Open the stream and wait (bounded) for the ``endpoint`` event.

        Raises:
            AuthRequired: HTTP 401.
            ConnectError: unreachable, not an SSE stream, no endpoint in time, or an endpoint
                on another origin.
        """
        self._on_message = on_message
        self._on_close = on_close
        try:
            # Bearer token; 401 -> refresh (OAuth) + one retry, as for the POSTs.
            response = common.send_authorized(
                self.options.auth,
                self.options.url,
                {"Accept": "text/event-stream"},
                lambda headers: common.request(
                    self._session,
                    "GET",
                    self.options.url,
                    headers=headers,
                    timeout=(self.options.connect_timeout, self.options.idle_timeout),
                ),
                method="GET",
            )
        except McpError:
            self._session.close()
            raise
        except Exception as exc:
            self._session.close()
            raise _as_connect_error(
                common.map_error(exc, f"GET {redact_url(self.options.url)}")
            ) from exc
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code != 200 or ctype != "text/event-stream":
            with response:
                error = common.status_error(
                    response,
                    f"MCP server {self.name!r} did not open an SSE stream at "
                    f"{redact_url(self.options.url)}",
                )
                if response.status_code == 200:
                    error = ConnectError(f"{error} (content type {ctype or 'none'})")
            self._session.close()
            raise error
        self._response = response
        self._reader = threading.Thread(
            target=self._read, daemon=True, name=f"mcp-lite-sse-reader[{self.name}]"
        )
        self._reader.start()
        if not self._endpoint_ready.wait(self._endpoint_timeout):
            self._endpoint_error = ConnectError(
                f"MCP server {self.name!r} sent no 'endpoint' event within "
                f"{self._endpoint_timeout:g} s at {redact_url(self.options.url)}"
            )
        if self._endpoint_error is not None:
            self.close()
            raise self._endpoint_error

    def send(self, message: Outgoing) -> None:
        endpoint = self._endpoint
        if endpoint is None or self._closing or self._reported:
            raise ConnectionClosed(f"the SSE connection to MCP server {self.name!r} is closed")
        headers = {"Content-Type": "application/json"}
        what = message.payload.get("method") or "a response"
        try:
            # Bearer token; 401 -> refresh + one retry; 403 insufficient_scope -> step-up.
            response = common.send_authorized(
                self.options.auth,
                self.options.url,
                headers,
                lambda sent: common.request(
                    self._session,
                    "POST",
                    endpoint,
                    headers=sent,
                    data=message.data,
                    stream=False,
                    timeout=(self.options.connect_timeout, self.options.read_timeout),
                ),
                deadline=message.deadline,
                request_url=endpoint,
                given_up=lambda: self._closing or message.abandoned(),
            )
        except McpError:
            raise
        except Exception as exc:
            raise common.map_error(exc, f"POST {what} to {redact_url(endpoint)}") from exc
        with response:
            if response.status_code >= 300:
                raise common.status_error(
                    response,
                    f"MCP server {self.name!r} refused {what} (POST {redact_url(endpoint)})",
                    response.text,
                )

    def close(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if os.getpid() != self._owner_pid:
            return
        common.abort(self._response)
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(1.0)
        self._session.close()

    # --- internals ----------------------------------------------------------------------------

    def _read(self) -> None:
        response = self._response
        assert response is not None
        parser = SseParser(self.options.max_message_size)
        error: str = "the server ended the SSE stream"
        try:
            for chunk in common.iter_body(response):
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
        self._session.close()

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
        if not value or common.origin(target) != common.origin(self.options.url):
            self._endpoint_error = ConnectError(
                f"MCP server {self.name!r} announced an endpoint on another origin "
                f"({redact_url(target)!r}); refused: messages go only to "
                f"{redact_url(self.options.url)}'s origin"
            )
        else:
            self._endpoint = target
        self._endpoint_ready.set()

    def _deliver(self, frame: bytes | MessageTooLarge) -> None:
        on_message = self._on_message
        if on_message is not None and not self._closing:
            on_message(frame)


def _as_connect_error(error: McpError) -> McpError:
    if isinstance(error, (AuthRequired, ConnectError)):
        return error
    return ConnectError(str(error))
