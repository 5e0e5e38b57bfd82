"""A 2026-07-28 server that refuses the first request's version while offering one we speak
gets a retry with that version; the retry declares the capabilities the client has."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import UnsupportedProtocolVersion, UnsupportedVersionError
from mcp_lite.protocol import session as s
from mcp_lite.protocol import versions as v
from mcp_lite.protocol.jsonrpc import ErrorResponse

MODERN = "2026-07-28"


class _Refuser:
    """Refuses the first ``refusals`` requests with -32022 (offering 2026-07-28)."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.seen: list[tuple[str, dict[str, Any], str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                meta = body.get("params", {}).get("_meta", {})
                outer.seen.append((body["method"], meta, self.headers.get("MCP-Protocol-Version")))
                if outer.refusals > 0:
                    outer.refusals -= 1
                    err = {
                        "code": -32022,
                        "message": "Unsupported protocol version",
                        "data": {"supported": [MODERN], "requested": MODERN},
                    }
                    self._send(400, {"jsonrpc": "2.0", "id": body.get("id"), "error": err})
                    return
                if body["method"] == "server/discover":
                    result: dict[str, Any] = {
                        "supportedVersions": [MODERN],
                        "capabilities": {"tools": {}},
                        "_meta": {
                            "io.modelcontextprotocol/serverInfo": {"name": "r", "version": "1"}
                        },
                    }
                else:
                    result = {"tools": []}
                result.update(resultType="complete", ttlMs=0, cacheScope="private")
                self._send(200, {"jsonrpc": "2.0", "id": body["id"], "result": result})

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def refuser() -> Iterator[Any]:
    made: list[_Refuser] = []

    def make(refusals: int) -> _Refuser:
        made.append(_Refuser(refusals))
        return made[-1]

    yield make
    for r in made:
        r.close()


def test_a_refusal_offering_our_version_is_retried_with_our_capabilities(refuser: Any) -> None:
    server = refuser(1)
    with mcp_lite.connect(
        server.url,
        timeout=10,
        roots=["file:///tmp"],
        sampling_handler=lambda p: {},
        elicitation_handler=lambda p: {"action": "decline"},
    ) as client:
        assert client.protocol_version == MODERN
        assert client.list_tools() == []
    (first, _, _), (retry, meta, header) = server.seen[:2]
    assert first == retry == "server/discover"
    assert header == meta[v.META_PROTOCOL_VERSION] == MODERN
    caps = meta[v.META_CLIENT_CAPABILITIES]
    assert set(caps) >= {"roots", "sampling", "elicitation"}
    assert all(isinstance(caps[k], dict) for k in ("roots", "sampling", "elicitation"))


def test_refused_again_after_the_retry_is_an_error_not_a_loop(refuser: Any) -> None:
    server = refuser(10)
    with pytest.raises(UnsupportedProtocolVersion):
        mcp_lite.connect(server.url, timeout=10, protocol_version=MODERN)
    assert len(server.seen) == 2


def test_discover_outcome_retries_even_the_version_asked_for() -> None:
    err = UnsupportedVersionError("no", data={"supported": [MODERN], "requested": MODERN})
    outcome = s.discover_outcome(ErrorResponse(1, err), MODERN)
    assert outcome.kind == "retry" and outcome.version == MODERN
