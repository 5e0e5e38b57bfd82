"""Streamable HTTP and legacy SSE against a misbehaving server: what the user sees.

Every test runs the in-process fault server on 127.0.0.1 (``tests/peers/fault_http_server.py``)
and asserts the outcome a caller gets: a result, or a clear error at once, never a hang.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import wait
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import (
    AuthRequired,
    ConnectError,
    ConnectionClosed,
    McpError,
    RequestTimeout,
    TransportError,
)

HANDSHAKE = "2025-11-25"


@pytest.fixture(params=["tcp", "unix"])
def fault_server(request: pytest.FixtureRequest, fault_server: Any) -> Any:
    """Each test on TCP (``http://127.0.0.1``) and on a Unix socket (``unix://``: the
    client's lean HTTP path): the same faults, the same outcomes."""
    if request.param == "unix":
        return request.getfixturevalue("unix_fault_server")
    return fault_server


def tcp_only(server: Any, why: str) -> None:
    if server.url().startswith("unix://"):
        pytest.skip(f"TCP only: {why}")


def connect(url: str, **options: Any) -> mcp_lite.Client:
    options.setdefault("protocol_version", HANDSHAKE)
    options.setdefault("timeout", 10)
    return mcp_lite.connect(url, **options)


def test_json_and_sse_answers_with_progress(fault_server: Any) -> None:
    seen: list[float] = []
    with connect(fault_server.url()) as client:
        assert client.call_tool("echo").text == "echo"
        assert (
            client.call_tool("stream", on_progress=lambda p: seen.append(p.progress)).text
            == "streamed"
        )
    assert seen == [1]


def test_get_405_means_no_get_stream_and_is_never_retried(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    with connect(fault_server.url()) as client:
        assert wait_until(lambda: fault_server.state.counts["GET /mcp"] >= 1)
        for _ in range(5):
            client.call_tool("echo")
        listener = client.transport._listener  # type: ignore[union-attr]
        assert wait_until(lambda: not listener.is_alive())
    assert fault_server.state.counts["GET /mcp"] == 1


def test_5xx_fails_that_call_with_status_and_body_then_next_call_works(fault_server: Any) -> None:
    with connect(fault_server.url()) as client:
        transport = client.transport
        with pytest.raises(McpError) as info:
            client.call_tool("boom")
        assert "500" in str(info.value) and "kaboom" in str(info.value)
        assert client.call_tool("echo").text == "echo"
        assert client.transport is transport  # the connection stayed


def test_dropped_sse_answer_is_resumed_by_get_with_last_event_id(fault_server: Any) -> None:
    progress: list[float] = []
    with connect(fault_server.url()) as client:
        result = client.call_tool("drop", on_progress=lambda p: progress.append(p.progress))
    assert result.text == "resumed"
    assert progress == [1]
    assert any(last.endswith("-2") for last in fault_server.state.last_event_ids)


def test_expired_session_is_reinitialized_and_the_call_retried(fault_server: Any) -> None:
    with connect(fault_server.url()) as client:
        assert client.call_tool("expire").text == "fresh session"
        assert client.call_tool("echo").text == "echo"
    assert fault_server.state.counts["POST initialize"] == 2


def test_three_connection_resets_close_the_transport_then_reconnect(fault_server: Any) -> None:
    with connect(fault_server.url()) as client:
        first = client.transport
        for _ in range(3):
            with pytest.raises(TransportError):
                client.call_tool("reset")
        assert client.call_tool("reset").text == "no reset"
        assert client.transport is not first
    assert fault_server.state.counts["POST initialize"] == 2


def test_slow_call_times_out_and_the_server_sees_the_cancellation(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    with connect(fault_server.url()) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", timeout=0.5)
        assert wait_until(lambda: fault_server.state.cancelled)
        assert client.call_tool("echo").text == "echo"


def test_2026_cancellation_closes_the_response_stream(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    with connect(fault_server.url("/modern"), protocol_version="auto") as client:
        assert client.protocol_version == "2026-07-28"
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", timeout=0.5)
        assert wait_until(lambda: fault_server.state.disconnected)
        assert fault_server.state.cancelled == []  # no notification on 2026-07-28 HTTP
        assert fault_server.state.counts["GET /modern"] == 0  # no GET stream either


def test_malformed_sse_event_is_skipped(fault_server: Any) -> None:
    with connect(fault_server.url()) as client:
        assert client.call_tool("garbage").text == "after garbage"


def test_stream_ending_without_answer_fails_at_once(fault_server: Any) -> None:
    with connect(fault_server.url(), timeout=60) as client:
        with pytest.raises(ConnectionClosed, match="before the response"):
            client.call_tool("garbage_close")
        assert client.call_tool("echo").text == "echo"


def test_redirect_to_another_origin_is_refused(fault_server: Any) -> None:
    with pytest.raises(ConnectError, match="another origin"):
        connect(fault_server.url("/redirect"), protocol_version="auto")


def test_legacy_endpoint_on_another_origin_is_refused(fault_server: Any) -> None:
    tcp_only(fault_server, "legacy HTTP+SSE takes http(s):// URLs")
    with pytest.raises(ConnectError, match="another origin"):
        connect({"type": "sse", "url": fault_server.url("/sse")})


def test_401_without_a_token_provider_is_auth_required(fault_server: Any) -> None:
    if fault_server.url().startswith("unix://"):  # no OAuth over a Unix socket: no login hint
        with pytest.raises(AuthRequired, match=r"HTTP 401.*authorization required"):
            connect(fault_server.url("/auth"), protocol_version="auto")
        return
    with pytest.raises(AuthRequired, match=r"needs a login.*run `mcp-lite auth"):
        connect(fault_server.url("/auth"), protocol_version="auto")


def test_proxy_refreshes_the_token_once_under_concurrent_401s(fault_server: Any) -> None:
    tokens = iter(["stale", "good", "rotated", "never-used"])
    calls: list[str] = []
    lock = threading.Lock()

    def provider() -> str:
        with lock:
            calls.append(token := next(tokens))
        return token

    kind = "http" if fault_server.url().startswith("unix://") else "proxy"
    config = {"type": kind, "url": fault_server.url("/auth"), "auth": provider}
    with connect(config) as client:  # type: ignore[arg-type]
        assert calls == ["stale", "good"]  # 401 on the first request, one refresh
        fault_server.state.token = "rotated"
        futures = [client.submit("tools/call", {"name": "echo", "arguments": {}}) for _ in range(8)]
        wait(futures, timeout=30)
        assert all(f.result()["content"][0]["text"] == "echo" for f in futures)
    assert calls == ["stale", "good", "rotated"]


def test_polling_get_stream_reconnects_with_last_event_id(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    logs: list[Any] = []
    with connect(fault_server.url("/poll"), log_handler=logs.append):
        assert wait_until(lambda: len(logs) >= 3)
    assert fault_server.state.last_event_ids[:2] == ["p1", "p2"]


def test_failing_get_stream_gives_up_after_a_few_attempts(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    with connect(fault_server.url("/get500")) as client:
        listener = client.transport._listener  # type: ignore[union-attr]
        assert wait_until(lambda: listener is not None and not listener.is_alive(), timeout=30)
        assert client.call_tool("echo").text == "echo"
    assert fault_server.state.counts["GET /get500"] == 5


def test_close_deletes_the_session(fault_server: Any) -> None:
    client = connect(fault_server.url())
    session_id = client.transport.session_id  # type: ignore[union-attr]
    client.close()
    # close() waits at most ~1 s for the answer: a loaded server may record it a bit later.
    end = time.monotonic() + 10
    while not fault_server.state.deleted and time.monotonic() < end:
        time.sleep(0.02)
    assert fault_server.state.deleted == [session_id]


def test_unreachable_server_is_a_connect_error(free_port: int) -> None:
    with pytest.raises(ConnectError):
        connect(f"http://127.0.0.1:{free_port}/mcp", protocol_version="auto")


def test_2026_headers_and_x_mcp_header_mirroring(fault_server: Any) -> None:
    with connect(fault_server.url("/modern"), protocol_version="auto") as client:
        client.list_tools()
        arguments = {
            "region": "eu-west",
            "count": 3,
            "dry": True,
            "note": "x",
            "nested": {"id": "naïve"},
        }
        assert client.call_tool("headered", arguments).text == "headered"
        assert client.call_tool("headered", {"region": None}).text == "headered"
    calls = [h for h in fault_server.state.headers if h.get("mcp-name") == "headered"]
    first, second = calls
    assert first["mcp-protocol-version"] == "2026-07-28"
    assert first["mcp-method"] == "tools/call"
    assert first["mcp-param-region"] == "eu-west"
    assert first["mcp-param-count"] == "3"
    assert first["mcp-param-dry"] == "true"
    assert first["mcp-param-id"] == "=?base64?bmHDr3Zl?="  # not header-safe: base64 sentinel
    assert "mcp-session-id" not in first
    assert not any(k.startswith("mcp-param-") for k in second)  # null and absent: no header


def test_header_values_are_encoded_when_not_header_safe() -> None:
    from mcp_lite._http.param_headers import encode_header_value

    assert encode_header_value("tools/call") == "tools/call"
    assert encode_header_value("=?base64?abc?=").startswith("=?base64?")
    assert encode_header_value(" padded") == "=?base64?IHBhZGRlZA==?="
    assert encode_header_value("line\nbreak").startswith("=?base64?")
