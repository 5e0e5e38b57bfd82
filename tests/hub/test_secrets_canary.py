"""Secrets never show: header values, tokens and URL query secrets (canaries below) do not
appear in exceptions, ``repr``, ``Hub.status()``, mcp_lite's log records or CLI output, whatever
the servers do (refuse the connection, answer 401 or 500, never open a WebSocket)."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite import cli
from mcp_lite.auth import MemoryTokenStore, OAuth

CANARIES = {
    "query": "canary-query-9f3a1",
    "header": "canary-header-7b2c4",
    "bearer": "canary-bearer-5d8e6",
    "password": "canary-password-1a9b3",
    "ide": "canary-ide-token-3c7d2",
}


def _leaks(text: str) -> list[str]:
    return [name for name, value in CANARIES.items() if value in text]


class _Refuser(BaseHTTPRequestHandler):
    status = 500

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        # A hostile server echoes the credentials it was sent back in its error body.
        echoed = {
            k: v for k, v in self.headers.items() if k.lower() in ("authorization", "x-api-key")
        }
        body = json.dumps({"error": "no", "you sent": echoed}).encode()
        self.send_response(self.status)
        if self.status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="x"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer


@pytest.fixture
def refusing() -> Iterator[dict[int, str]]:
    """Two local servers: one answers 500 to everything, one 401; -> {status: base URL}."""
    out, servers = {}, []
    for status in (500, 401):
        handler = type("R", (_Refuser,), {"status": status})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        out[status] = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield out
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return int(port)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("MCP_LITE_AUTH_DIR", str(tmp_path / "oauth"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


def _config(refusing: dict[int, str], port: int) -> dict[str, Any]:
    q, h, b, p, i = (CANARIES[k] for k in ("query", "header", "bearer", "password", "ide"))
    return {
        "mcpServers": {
            "five": {
                "type": "http",
                "url": f"{refusing[500]}/mcp?api_key={q}",
                "headers": {"X-Api-Key": h},
            },
            "auth": {
                "type": "http",
                "url": f"{refusing[401]}/mcp?token={q}",
                "headers": {"Authorization": f"Bearer {b}"},
            },
            "gone": {
                "type": "http",
                "url": f"http://user:{p}@127.0.0.1:{port}/mcp?key={q}",
                "headers": {"X-Api-Key": h},
            },
            "legacy": {"type": "sse", "url": f"http://127.0.0.1:{port}/sse?key={q}"},
            "socket": {"type": "ws", "url": f"ws://127.0.0.1:{port}/ws?key={q}"},
            "ide": {"type": "ws-ide", "url": f"ws://127.0.0.1:{port}/ide", "authToken": i},
            "broken": {
                "type": "http",
                "url": f"https://mcp.example.test/mcp?key={q}",
                "headers": {"X-Api-Key": f"{h}\r\nX-Evil: 1"},
            },
        }
    }


def test_the_hub_shows_no_secret(
    refusing: dict[int, str], closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_lite")
    shown: list[str] = []
    with mcp_lite.Hub(_config(refusing, closed_port)) as hub:
        states = hub.connect_all()
        assert states["five"].state == "failed" and states["auth"].state == "needs-auth"
        assert states["gone"].state == "failed" and states["broken"].state == "failed"
        shown += [repr(hub), repr(hub.status()), str(hub.status())]
        for name in states:
            try:
                hub.call_tool(f"mcp__{name}__anything", {})
            except Exception as exc:
                shown += [str(exc), repr(exc)]
        for entry in ("five", "auth", "gone"):
            try:
                hub.reconnect(entry)
            except Exception as exc:
                shown += [str(exc), repr(exc)]
        shown.append(repr(hub.status()))
    records = [r for r in caplog.records if r.name.startswith("mcp_lite")]
    shown += [r.getMessage() for r in records]
    shown += [str(r.exc_info[1]) for r in records if r.exc_info and r.exc_info[1]]
    assert len(shown) > 10
    leaks = [(text, _leaks(text)) for text in shown if _leaks(text)]
    assert not leaks, leaks[0]


def test_clients_show_no_secret(
    refusing: dict[int, str], closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_lite")
    q, h, b = CANARIES["query"], CANARIES["header"], CANARIES["bearer"]
    shown: list[str] = []
    targets: list[tuple[Any, dict[str, Any]]] = [
        (f"{refusing[500]}/mcp?api_key={q}", {"headers": {"X-Api-Key": h}}),
        (f"{refusing[401]}/mcp?api_key={q}", {"auth": b}),
        (f"http://127.0.0.1:{closed_port}/mcp?api_key={q}", {"headers": {"X-Api-Key": h}}),
        ({"type": "sse", "url": f"http://127.0.0.1:{closed_port}/sse?k={q}"}, {}),
        (f"ws://127.0.0.1:{closed_port}/ws?k={q}", {"headers": {"X-Api-Key": h}}),
        (f"{refusing[401]}/mcp?api_key={q}", {}),  # stored-token OAuth, nobody to ask
        (f"https://mcp.example.test/mcp?k={q}", {"headers": {"X-Api-Key": f"{h}\n"}}),
    ]
    for target, options in targets:
        client = mcp_lite.Client(target, timeout=10, **options)
        shown.append(repr(client))
        try:
            client.open()
        except Exception as exc:
            shown += [str(exc), repr(exc)]
        finally:
            client.close()
    auth = OAuth(f"{refusing[401]}/mcp?api_key={q}", store=MemoryTokenStore(), open_browser=False)
    shown.append(repr(auth))
    try:
        auth.refresh(None)
    except Exception as exc:
        shown += [str(exc), repr(exc)]
    records = [r for r in caplog.records if r.name.startswith("mcp_lite")]
    shown += [r.getMessage() for r in records]
    leaks = [(text, _leaks(text)) for text in shown if _leaks(text)]
    assert not leaks, leaks[0]


def test_the_cli_shows_no_secret(
    refusing: dict[int, str],
    closed_port: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    q, h = CANARIES["query"], CANARIES["header"]
    config = tmp_path / "servers.json"
    config.write_text(json.dumps(_config(refusing, closed_port)))
    runs = [
        ["servers", "--config", str(config)],
        ["servers", "--config", str(config), "--json"],
        ["tools", "--config", str(config)],
        ["tools", "--config", str(config), "--json"],
        ["tools", "--url", f"http://127.0.0.1:{closed_port}/mcp?api_key={q}"],
        ["tools", "--url", f"{refusing[500]}/mcp?api_key={q}", "--json"],
        ["tools", "--url", f"{refusing[401]}/mcp?api_key={q}"],
        ["tools", "--url", f"nonsense?api_key={q}"],
        ["auth", f"http://127.0.0.1:{closed_port}/mcp?api_key={q}", "--timeout", "5"],
    ]
    for argv in runs:
        code = cli.main(argv)
        out, err = capsys.readouterr()
        assert code != 0 or argv[0] == "servers", (argv, out, err)
        assert not _leaks(out + err), (argv, out, err)
    assert h  # the header canary was configured on every remote entry above


def test_value_objects_show_no_secret() -> None:
    from mcp_lite._http.session import HttpOptions
    from mcp_lite.auth import ClientInfo, TokenSet
    from mcp_lite.auth.discovery import AuthServerMetadata
    from mcp_lite.auth.flow import AuthorizationRequest
    from mcp_lite.hub.config import parse_servers

    q, h, b, p, i = (CANARIES[k] for k in ("query", "header", "bearer", "password", "ide"))
    entries, issues = parse_servers(
        {
            "s": {"command": "srv", "args": ["--token", b], "env": {"API_KEY": h}},
            "r": {"url": f"https://u:{p}@x.example/mcp?k={q}", "headers": {"X-Api-Key": h}},
            "w": {"type": "ws-ide", "url": "ws://127.0.0.1:9/ide", "authToken": i},
        },
        "user",
        "test",
    )
    assert issues == []
    metadata = AuthServerMetadata.defaults("https://as.example")
    request = AuthorizationRequest.build(
        metadata,
        ClientInfo("cid", client_secret=p),
        redirect_uri="http://127.0.0.1:9/callback",
        resource="https://x.example/mcp",
        scope=None,
    )
    shown = [
        repr(entries),
        repr(HttpOptions(f"https://x.example/mcp?k={q}", {"X-Api-Key": h}, b)),
        repr(TokenSet(b, refresh_token=h)),
        repr(ClientInfo("cid", client_secret=p)),
        repr(request),
    ]
    leaks = [(text, _leaks(text)) for text in shown if _leaks(text)]
    assert not leaks, leaks[0]
    assert request.state not in "".join(shown)
