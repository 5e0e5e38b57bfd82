"""OpenTelemetry, following the semantic conventions for MCP (client side).

Loaded only when the application has loaded ``opentelemetry`` itself (``mcp_lite.events``
checks ``sys.modules``), and active only when a real tracer or meter provider is set: the
API's default proxy providers mean "nobody configured telemetry" and cost nothing here.

- one span per request, kind CLIENT, named ``{mcp.method.name} {target}`` (the tool or
  prompt name), with ``mcp.method.name``, ``jsonrpc.request.id``, ``gen_ai.tool.name`` /
  ``gen_ai.prompt.name``, ``gen_ai.operation.name`` (``execute_tool``), ``mcp.resource.uri``,
  ``mcp.session.id``, ``mcp.protocol.version``, ``network.transport``, ``server.address`` /
  ``server.port`` and, on failure, ``error.type`` (the JSON-RPC code, ``timeout``,
  ``tool_error``...) with an ERROR status;
- the request's context (W3C ``traceparent``/``tracestate``, and ``baggage``) is injected
  into ``params._meta`` with the configured propagators, so the server's spans join the trace;
- a ``connect`` span around opening a connection (the ``initialize`` span is its child) and
  ``oauth ...`` spans around token requests (``span()``);
- histograms ``mcp.client.operation.duration`` and ``mcp.client.session.duration`` (s).
"""

from __future__ import annotations

import contextlib
import sys
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import ConnectionClosed, RequestTimeout, RpcError

if TYPE_CHECKING:
    from ._connection import Connection, _Call

__all__ = ["Tracing", "oauth_span", "span"]

_SCOPE = "mcp_lite"
# Bucket boundaries the conventions advise for these histograms (seconds).
_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


def _real(provider: Any) -> bool:
    """False for the API's proxy and no-op providers (telemetry not configured)."""
    name = type(provider).__name__
    return not (name.startswith("_Proxy") or name.startswith("Proxy") or name.startswith("NoOp"))


def _tracer() -> Any:
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    return provider.get_tracer(_SCOPE, __version__) if _real(provider) else None


def _meter() -> Any:
    metrics = sys.modules.get("opentelemetry.metrics")
    if metrics is None:
        return None
    provider = metrics.get_meter_provider()
    return provider.get_meter(_SCOPE, __version__) if _real(provider) else None


def _histogram(meter: Any, name: str, description: str) -> Any:
    try:
        return meter.create_histogram(
            name, unit="s", description=description, explicit_bucket_boundaries_advisory=_BUCKETS
        )
    except TypeError:  # an API older than the bucket advice
        return meter.create_histogram(name, unit="s", description=description)


def _server_attributes(target: Any) -> dict[str, Any]:
    url = target if isinstance(target, str) else None
    if isinstance(target, Mapping):
        url = target.get("url") if isinstance(target.get("url"), str) else None
        if url is None and target.get("command"):
            return {"network.transport": "pipe"}
    elif isinstance(target, (list, tuple)):
        return {"network.transport": "pipe"}
    if not url:
        return {}
    parts = urllib.parse.urlsplit(url)
    attrs: dict[str, Any] = {"network.transport": "tcp"}
    if parts.hostname:
        attrs["server.address"] = parts.hostname
        port = parts.port or {"http": 80, "ws": 80, "https": 443, "wss": 443}.get(parts.scheme)
        if port:
            attrs["server.port"] = port
    if parts.scheme in ("http", "https"):
        attrs["network.protocol.name"] = "http"
    elif parts.scheme in ("ws", "wss"):
        attrs["network.protocol.name"] = "websocket"
    return attrs


def _error_type(error: BaseException) -> str:
    if isinstance(error, RpcError):
        return str(error.code)
    if isinstance(error, RequestTimeout):
        return "timeout"
    if isinstance(error, ConnectionClosed):
        return "connection_closed"
    return type(error).__qualname__


class Tracing:
    """The tracer, meter and fixed attributes of one connection."""

    def __init__(self, server: str, tracer: Any, meter: Any, attributes: dict[str, Any]) -> None:
        from opentelemetry import propagate, trace

        self.server = server
        self.tracer = tracer
        self.attributes = attributes
        self._trace = trace
        self._propagate = propagate
        self.operation = self.session = None
        if meter is not None:
            self.operation = _histogram(
                meter, "mcp.client.operation.duration", "Duration of MCP requests (client side)"
            )
            self.session = _histogram(
                meter, "mcp.client.session.duration", "Duration of MCP sessions (client side)"
            )

    @classmethod
    def create(cls, server: str, target: Any) -> Tracing | None:
        """None when neither a tracer nor a meter provider is configured."""
        try:
            tracer, meter = _tracer(), _meter()
            if tracer is None and meter is None:
                return None
            return cls(server, tracer, meter, _server_attributes(target))
        except ImportError:  # a partial install: behave as if absent
            return None

    # --- one request ---------------------------------------------------------------------------------

    def _request_attributes(self, conn: Connection, call: _Call) -> dict[str, Any]:
        attrs = dict(self.attributes)
        attrs["mcp.method.name"] = call.method
        params = call.params or {}
        name = params.get("name")
        if call.method == "tools/call" and isinstance(name, str):
            attrs["gen_ai.tool.name"] = name
            attrs["gen_ai.operation.name"] = "execute_tool"
        elif call.method == "prompts/get" and isinstance(name, str):
            attrs["gen_ai.prompt.name"] = name
        uri = params.get("uri")
        if isinstance(uri, str) and call.method.startswith("resources/"):
            attrs["mcp.resource.uri"] = uri
        info = conn.info
        if info is not None:
            attrs["mcp.protocol.version"] = info.protocol_version
        session_id = getattr(conn.transport, "session_id", None)
        if isinstance(session_id, str) and session_id:
            attrs["mcp.session.id"] = session_id
        return attrs

    def start(self, conn: Connection, call: _Call) -> Any:
        if self.tracer is None and self.operation is None:
            return None
        attrs = self._request_attributes(conn, call)
        target = attrs.get("gen_ai.tool.name") or attrs.get("gen_ai.prompt.name")
        if self.tracer is None:
            return _Request(None, attrs)
        span = self.tracer.start_span(
            f"{call.method} {target}" if target else call.method,
            kind=self._trace.SpanKind.CLIENT,
            attributes={**attrs, "jsonrpc.request.id": str(call.request_id)},
        )
        return _Request(span, attrs)

    def inject(self, request: Any, params: dict[str, Any] | None) -> dict[str, Any] | None:
        span = request.span
        if span is None:
            return params
        carrier: dict[str, str] = {}
        self._propagate.inject(carrier, context=self._trace.set_span_in_context(span))
        if not carrier:
            return params
        out = dict(params or {})
        meta = out.get("_meta")
        out["_meta"] = {**(meta if isinstance(meta, dict) else {}), **carrier}
        return out

    def finish(
        self,
        conn: Connection,
        request: Any,
        method: str,
        duration: float,
        result: dict[str, Any] | None,
        error: BaseException | None,
    ) -> None:
        error_type = None
        if error is not None:
            error_type = _error_type(error)
        elif method == "tools/call" and isinstance(result, dict) and result.get("isError"):
            error_type = "tool_error"
        span = request.span
        if span is not None:
            if isinstance(error, RpcError):
                span.set_attribute("rpc.response.status_code", str(error.code))
            if error_type is not None:
                span.set_attribute("error.type", error_type)
                message = str(error) if error is not None else "the tool returned isError"
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message))
            span.end()
        if self.operation is not None:
            metric = {k: v for k, v in request.attributes.items() if k in _METRIC_KEYS}
            if error_type is not None:
                metric["error.type"] = error_type
            self.operation.record(duration, metric)

    # --- the session ------------------------------------------------------------------------------------

    def session_ended(self, conn: Connection, duration: float, error: BaseException | None) -> None:
        if self.session is None:
            return
        attrs = {k: v for k, v in self.attributes.items() if k in _METRIC_KEYS}
        if conn.info is not None:
            attrs["mcp.protocol.version"] = conn.info.protocol_version
        if error is not None:
            attrs["error.type"] = _error_type(error)
        self.session.record(duration, attrs)

    @contextlib.contextmanager
    def connect_span(self, server: str, target: Any) -> Iterator[None]:
        if self.tracer is None:
            yield
            return
        attrs = {**self.attributes, "mcp.client.server": server}
        with self.tracer.start_as_current_span(
            f"connect {server}", kind=self._trace.SpanKind.CLIENT, attributes=attrs
        ):
            yield


class _Request:
    """One request's span (None when only metrics are configured) and its attributes."""

    __slots__ = ("attributes", "span")

    def __init__(self, span: Any, attributes: dict[str, Any]) -> None:
        self.span = span
        self.attributes = attributes


# Attributes that go on the duration metrics (low cardinality: no ids, no URIs).
_METRIC_KEYS = frozenset(
    {
        "mcp.method.name",
        "gen_ai.tool.name",
        "gen_ai.prompt.name",
        "gen_ai.operation.name",
        "mcp.protocol.version",
        "network.transport",
        "network.protocol.name",
        "server.address",
        "server.port",
        "error.type",
    }
)


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[None]:
    """A child span of the current one (OAuth token requests...), or nothing at all when
    OpenTelemetry is not loaded, not configured, or ``MCP_LITE_OTEL=0``."""
    from .events import tracing_wanted

    tracer = _tracer() if tracing_wanted() else None
    if tracer is None:
        yield
        return
    with tracer.start_as_current_span(name, attributes=attributes or None):
        yield


def oauth_span(grant: str | None, endpoint: str) -> contextlib.AbstractContextManager[None]:
    """The span of one token-endpoint request: ``oauth <grant type>``, with the endpoint's
    host and port (never a code, a token or a secret)."""
    parts = urllib.parse.urlsplit(endpoint)
    attributes: dict[str, Any] = {"oauth.grant_type": grant or "unknown"}
    if parts.hostname:
        attributes["server.address"] = parts.hostname
        if parts.port:
            attributes["server.port"] = parts.port
    return span(f"oauth {grant or 'token'}", **attributes)
