"""OpenTelemetry: spans and metrics of the MCP semantic conventions, trace context in
``params._meta``, and nothing at all when telemetry is absent or turned off.

The SDK's in-memory span exporter and metric reader are installed as the *global* providers
(what an application does), and the API's globals are put back afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import RpcError

trace = pytest.importorskip("opentelemetry.trace")
metrics = pytest.importorskip("opentelemetry.metrics")
pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TRACE_SERVER = [sys.executable, str(Path(__file__).with_name("trace_server.py"))]


class Telemetry:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self, name: str | None = None) -> list[Any]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        out = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == metric:
                        assert m.unit == "s"
                        out.extend(m.data.data_points)
        return out


def _set_globals(tracer_provider: Any, meter_provider: Any) -> Callable[[], None]:
    from opentelemetry.metrics import _internal as metrics_internal
    from opentelemetry.util._once import Once

    saved = (
        trace._TRACER_PROVIDER,
        trace._TRACER_PROVIDER_SET_ONCE,
        metrics_internal._METER_PROVIDER,
        metrics_internal._METER_PROVIDER_SET_ONCE,
    )
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None
    if tracer_provider is not None:
        trace.set_tracer_provider(tracer_provider)
    if meter_provider is not None:
        metrics.set_meter_provider(meter_provider)

    def restore() -> None:
        (
            trace._TRACER_PROVIDER,
            trace._TRACER_PROVIDER_SET_ONCE,
            metrics_internal._METER_PROVIDER,
            metrics_internal._METER_PROVIDER_SET_ONCE,
        ) = saved

    return restore


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    monkeypatch.delenv("MCP_LITE_OTEL", raising=False)
    telemetry = Telemetry()
    restore = _set_globals(telemetry.tracer_provider, telemetry.meter_provider)
    try:
        yield telemetry
    finally:
        restore()
        telemetry.meter_provider.shutdown()


def _hex(value: int, width: int) -> str:
    return format(value, f"0{width}x")


def test_one_client_span_per_request_and_traceparent_reaches_the_server(otel: Telemetry) -> None:
    tracer = trace.get_tracer("test")
    with mcp_lite.connect(TRACE_SERVER, timeout=30) as client:
        with tracer.start_as_current_span("job") as job:
            result = client.call_tool("meta", {})
        version = client.protocol_version
    received = result.structured_content or json.loads(result.text or "{}")
    [span] = otel.spans("tools/call meta")
    assert span.kind == SpanKind.CLIENT
    assert span.parent is not None and span.parent.span_id == job.get_span_context().span_id
    attrs = dict(span.attributes)
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.name"] == "meta"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["network.transport"] == "pipe"
    assert attrs["mcp.protocol.version"] == version
    assert attrs["jsonrpc.request.id"].isdigit()
    assert "error.type" not in attrs
    # The server got this span's context: same trace, this span as the remote parent.
    ctx = span.get_span_context()
    version_, trace_id, parent_id, flags = received["traceparent"].split("-")
    assert (trace_id, parent_id) == (_hex(ctx.trace_id, 32), _hex(ctx.span_id, 16))
    assert int(flags, 16) & 1  # sampled


def _meta_sent_under_a_remote_context_with_baggage() -> dict[str, Any]:
    """What the server's ``meta`` tool got, called under a caller's context with a tracestate
    and a baggage entry (what a server framework makes current for an incoming request)."""
    from opentelemetry import baggage
    from opentelemetry import context as otel_context
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

    remote = SpanContext(
        trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736,
        span_id=0x00F067AA0BA902B7,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("rojo", "00f067aa0ba902b7")]),
    )
    incoming = baggage.set_baggage("tenant", "acme", trace.set_span_in_context(NonRecordingSpan(remote)))
    token = otel_context.attach(incoming)
    try:
        with (
            mcp_lite.connect(TRACE_SERVER, timeout=30) as client,
            trace.get_tracer("test").start_as_current_span("job"),
        ):
            received: dict[str, Any] = client.call_tool("meta", {}).structured_content or {}
    finally:
        otel_context.detach(token)
    return received


def test_tracestate_reaches_the_server_and_baggage_stays_home_by_default(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Baggage often holds what an application keeps to itself (tenants, user ids); a server
    is a third party, so only the trace context is sent unless baggage is asked for. This
    holds even with the SDK's default global propagators (trace context and baggage)."""
    from opentelemetry import propagate

    monkeypatch.delenv("MCP_LITE_OTEL_BAGGAGE", raising=False)
    assert "baggage" in propagate.get_global_textmap().fields  # what the app would send
    received = _meta_sent_under_a_remote_context_with_baggage()
    assert received["traceparent"].split("-")[1] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert received["tracestate"] == "rojo=00f067aa0ba902b7"
    assert "baggage" not in received


def test_mcp_lite_otel_baggage_1_sends_the_callers_baggage_too(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_LITE_OTEL_BAGGAGE", "1")
    received = _meta_sent_under_a_remote_context_with_baggage()
    assert received["traceparent"].split("-")[1] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert received["tracestate"] == "rojo=00f067aa0ba902b7"
    assert received["baggage"] == "tenant=acme"


def test_connect_span_is_the_parent_of_the_handshake(otel: Telemetry) -> None:
    with mcp_lite.connect(TRACE_SERVER, timeout=30, protocol_version="2025-11-25") as client:
        client.list_tools()
    [connect] = [s for s in otel.spans() if s.name.startswith("connect ")]
    [initialize] = otel.spans("initialize")
    assert initialize.parent is not None
    assert initialize.parent.span_id == connect.get_span_context().span_id
    [listing] = otel.spans("tools/list")
    assert listing.parent is None  # called outside any span: a root
    assert dict(listing.attributes)["mcp.protocol.version"] == "2025-11-25"


def test_errors_set_error_type_and_status(otel: Telemetry) -> None:
    with mcp_lite.connect(TRACE_SERVER, timeout=30) as client:
        with pytest.raises(RpcError) as caught:
            client.call_tool("missing", {})
        assert client.call_tool("broken", {}).is_error
        assert client.get_prompt("greet", {"name": "Ada"}).messages
    [missing] = otel.spans("tools/call missing")
    assert dict(missing.attributes)["error.type"] == str(caught.value.code)
    assert dict(missing.attributes)["rpc.response.status_code"] == str(caught.value.code)
    assert missing.status.status_code == StatusCode.ERROR
    [broken] = otel.spans("tools/call broken")
    assert dict(broken.attributes)["error.type"] == "tool_error"
    assert broken.status.status_code == StatusCode.ERROR
    [prompt] = otel.spans("prompts/get greet")
    assert dict(prompt.attributes)["gen_ai.prompt.name"] == "greet"
    assert prompt.status.status_code == StatusCode.UNSET


def test_operation_and_session_duration_metrics(otel: Telemetry) -> None:
    with mcp_lite.connect(TRACE_SERVER, timeout=30) as client:
        client.call_tool("meta", {})
        client.call_tool("meta", {})
        with pytest.raises(RpcError):
            client.call_tool("missing", {})
    ops = otel.points("mcp.client.operation.duration")
    calls = [p for p in ops if p.attributes.get("gen_ai.tool.name") == "meta"]
    assert len(calls) == 1 and calls[0].count == 2 and calls[0].sum > 0
    assert calls[0].attributes["mcp.method.name"] == "tools/call"
    failed = [p for p in ops if p.attributes.get("gen_ai.tool.name") == "missing"]
    assert failed and failed[0].attributes["error.type"].lstrip("-").isdigit()
    assert all("jsonrpc.request.id" not in p.attributes for p in ops)  # low cardinality
    [session] = otel.points("mcp.client.session.duration")
    assert session.count == 1 and session.attributes["network.transport"] == "pipe"


def test_http_spans_carry_server_address_and_session(
    otel: Telemetry, official_server_cmd: Callable[..., list[str]], start_http_peer: Any,
    free_port: int,
) -> None:
    peer = start_http_peer(official_server_cmd("http", "--port", str(free_port)), free_port)
    url = peer.url + "/mcp"
    with mcp_lite.connect(url, timeout=30, protocol_version="2025-11-25") as client:
        assert client.call_tool("echo", {"text": "hi"}).text
    [span] = otel.spans("tools/call echo")
    attrs = dict(span.attributes)
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == free_port
    assert attrs["network.transport"] == "tcp" and attrs["network.protocol.name"] == "http"
    assert attrs.get("mcp.session.id")


def test_mcp_lite_otel_0_turns_it_off(otel: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_LITE_OTEL", "0")
    tracer = trace.get_tracer("test")
    with mcp_lite.connect(TRACE_SERVER, timeout=30) as client:
        with tracer.start_as_current_span("job"):
            result = client.call_tool("meta", {})
        assert client._conn is not None and client._conn.events is None
    assert "traceparent" not in (result.structured_content or {})
    assert [s.name for s in otel.spans()] == ["job"]


def test_no_provider_configured_no_cost() -> None:
    restore = _set_globals(None, None)  # the API loaded, nothing configured
    try:
        with mcp_lite.connect(TRACE_SERVER, timeout=30) as client:
            result = client.call_tool("meta", {})
            assert client._conn is not None and client._conn.events is None
        assert "traceparent" not in (result.structured_content or {})
    finally:
        restore()


def test_opentelemetry_is_never_imported_by_mcp_lite() -> None:
    code = textwrap.dedent(
        f"""
        import sys, mcp_lite
        with mcp_lite.connect({TRACE_SERVER!r}, timeout=30) as c:
            c.call_tool("meta", {{}})
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
        assert not loaded, loaded
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_oauth_token_requests_are_spans(otel: Telemetry) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "auth"))
    from authserver import AuthServer, Behaviour

    from mcp_lite.auth import MemoryTokenStore, OAuth, fetch_redirect

    server = AuthServer(Behaviour()).start()
    try:
        auth = OAuth(server.url, store=MemoryTokenStore(), authorization_handler=fetch_redirect)
        with mcp_lite.connect(server.url, auth=auth, timeout=20,
                              protocol_version="2025-11-25") as client:
            client.list_tools()
    finally:
        server.stop()
    [token] = otel.spans("oauth authorization_code")
    attrs = dict(token.attributes)
    assert attrs["oauth.grant_type"] == "authorization_code"
    assert attrs["server.address"] == "127.0.0.1"
    assert not any("secret" in str(v) for v in attrs.values())
    [connect] = [s for s in otel.spans() if s.name.startswith("connect ")]
    # The 401 came while connecting: the token request is a child of the connect span,
    # although the POST ran on one of the transport's threads.
    assert token.parent is not None and token.parent.span_id == connect.context.span_id


def test_a_telemetry_failure_never_breaks_a_call(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_lite import _otel

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("exporter bug")

    monkeypatch.setattr(_otel.Tracing, "start", broken)
    monkeypatch.setattr(_otel.Tracing, "session_ended", broken)
    with mcp_lite.connect(TRACE_SERVER, timeout=30) as client:
        assert "traceparent" not in (client.call_tool("meta", {}).structured_content or {})


def test_traceparent_reaches_an_http_server(
    otel: Telemetry, start_http_peer: Any, free_port: int
) -> None:
    peer = start_http_peer([*TRACE_SERVER, "http", str(free_port)], free_port)
    with (
        mcp_lite.connect(peer.url + "/mcp", timeout=30) as client,
        trace.get_tracer("test").start_as_current_span("job"),
    ):
        received = client.call_tool("meta", {}).structured_content or {}
    [span] = otel.spans("tools/call meta")
    ctx = span.get_span_context()
    assert received["traceparent"].split("-")[1:3] == [_hex(ctx.trace_id, 32), _hex(ctx.span_id, 16)]
    attrs = dict(span.attributes)
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", free_port)
