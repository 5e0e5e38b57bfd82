"""OpenTelemetry for the client side, following the semantic conventions for MCP: spans, trace
context in ``params._meta`` and duration histograms, used only when the application loaded
``opentelemetry`` and set a real provider, and told facts rather than handed a connection (see
docs/guides/observability.md and docs/explanation/architecture.md, "Observing a connection").
"""

from __future__ import annotations

import contextlib
import os
import sys
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import ConnectionClosed, RequestTimeout, RpcError

if TYPE_CHECKING:
    from .protocol.session import SessionInfo

__all__ = ["Tracing", "baggage_wanted", "oauth_span", "span", "tracing_wanted"]

_SCOPE = "mcp_lite"
# Bucket boundaries the conventions advise for these histograms (seconds).
_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


def tracing_wanted() -> bool:
    """True when OpenTelemetry is loaded in this process and not turned off. Costs a dict
    look-up: ``opentelemetry`` is never imported here, only found when the app loaded it."""
    if "opentelemetry.trace" not in sys.modules and "opentelemetry.metrics" not in sys.modules:
        return False
    return os.environ.get("MCP_LITE_OTEL", "1").strip().lower() not in ("0", "false", "no", "off")


def baggage_wanted() -> bool:
    """True when ``MCP_LITE_OTEL_BAGGAGE`` asks for OpenTelemetry baggage to reach servers."""
    value = os.environ.get("MCP_LITE_OTEL_BAGGAGE", "")
    return value.strip().lower() in ("1", "true", "yes", "on")


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

    def __init__(
        self,
        server: str,
        tracer: Any,
        meter: Any,
        attributes: dict[str, Any],
        *,
        baggage: bool = False,
    ) -> None:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.server = server
        self.tracer = tracer
        self.attributes = attributes
        self._trace = trace
        # Our own propagators, not the configured global ones: what reaches a server is the
        # trace context, and baggage only when asked for (see the module docstring).
        self._propagators: list[Any] = [TraceContextTextMapPropagator()]
        if baggage:
            from opentelemetry.baggage.propagation import W3CBaggagePropagator

            self._propagators.append(W3CBaggagePropagator())
        self.operation = self.session = None
        if meter is not None:
            self.operation = _histogram(
                meter, "mcp.client.operation.duration", "Duration of MCP requests (client side)"
            )
            self.session = _histogram(
                meter, "mcp.client.session.duration", "Duration of MCP sessions (client side)"
            )

    @classmethod
    def create(cls, server: str, target: Any, *, baggage: bool | None = None) -> Tracing | None:
        """None when neither a tracer nor a meter provider is configured. ``baggage``: send
        OpenTelemetry baggage to the server too (default: ``MCP_LITE_OTEL_BAGGAGE``)."""
        try:
            tracer, meter = _tracer(), _meter()
            if tracer is None and meter is None:
                return None
            wanted = baggage_wanted() if baggage is None else baggage
            return cls(server, tracer, meter, _server_attributes(target), baggage=wanted)
        except ImportError:  # a partial install: behave as if absent
            return None

    # --- one request ---------------------------------------------------------------------------------

    def _request_attributes(
        self,
        method: str,
        params: dict[str, Any] | None,
        info: SessionInfo | None,
        session_id: str | None,
    ) -> dict[str, Any]:
        attrs = dict(self.attributes)
        attrs["mcp.method.name"] = method
        params = params or {}
        name = params.get("name")
        if method == "tools/call" and isinstance(name, str):
            attrs["gen_ai.tool.name"] = name
            attrs["gen_ai.operation.name"] = "execute_tool"
        elif method == "prompts/get" and isinstance(name, str):
            attrs["gen_ai.prompt.name"] = name
        uri = params.get("uri")
        if isinstance(uri, str) and method.startswith("resources/"):
            attrs["mcp.resource.uri"] = uri
        if info is not None:
            attrs["mcp.protocol.version"] = info.protocol_version
        if session_id:
            attrs["mcp.session.id"] = session_id
        return attrs

    def start(
        self,
        method: str,
        params: dict[str, Any] | None,
        request_id: int | str,
        info: SessionInfo | None,
        session_id: str | None,
    ) -> Any:
        """The span (and metric attributes) of one request; ``info`` and ``session_id``
        describe the session it is sent on (either may be unknown yet: None)."""
        if self.tracer is None and self.operation is None:
            return None
        attrs = self._request_attributes(method, params, info, session_id)
        target = attrs.get("gen_ai.tool.name") or attrs.get("gen_ai.prompt.name")
        if self.tracer is None:
            return _Request(None, attrs)
        span = self.tracer.start_span(
            f"{method} {target}" if target else method,
            kind=self._trace.SpanKind.CLIENT,
            attributes={**attrs, "jsonrpc.request.id": str(request_id)},
        )
        return _Request(span, attrs)

    def inject(self, request: Any, params: dict[str, Any] | None) -> dict[str, Any] | None:
        span = request.span
        if span is None:
            return params
        carrier: dict[str, str] = {}
        context = self._trace.set_span_in_context(span)
        for propagator in self._propagators:
            propagator.inject(carrier, context=context)
        if not carrier:
            return params
        out = dict(params or {})
        meta = out.get("_meta")
        out["_meta"] = {**(meta if isinstance(meta, dict) else {}), **carrier}
        return out

    def finish(
        self,
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

    def session_ended(
        self, info: SessionInfo | None, duration: float, error: BaseException | None
    ) -> None:
        if self.session is None:
            return
        attrs = {k: v for k, v in self.attributes.items() if k in _METRIC_KEYS}
        if info is not None:
            attrs["mcp.protocol.version"] = info.protocol_version
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
