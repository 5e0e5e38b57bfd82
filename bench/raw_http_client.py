"""The smallest sync Streamable HTTP MCP client that still does the job: the physical limit.

One keep-alive ``http.client.HTTPConnection``, stdlib ``json``, the handshake-era
``initialize`` (keeping ``Mcp-Session-Id``), then one POST per call read on the caller's
thread. A JSON answer is parsed as is; an SSE answer (the official SDK's server streams
by default) is scanned for the ``data:`` line carrying the response. No threads, no
timeouts beyond the socket's, no retries, no error handling: whatever mcp_lite spends above
this is the price of its features.

    with RawHttpClient("http://127.0.0.1:8000/mcp") as c:
        c.call_tool("echo", {"text": "hi"})  # -> the result dict
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

_encode = json.JSONEncoder(separators=(",", ":")).encode


class RawHttpClient:
    def __init__(self, url: str, protocol_version: str = "2025-11-25") -> None:
        parts = urlsplit(url)
        self._path = parts.path or "/"
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        self._next_id = 0
        init = self._post(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": {},
                "clientInfo": {"name": "raw-http", "version": "0"},
            },
        )
        self._headers["MCP-Protocol-Version"] = init["result"]["protocolVersion"]
        self._notify("notifications/initialized")

    def _send(self, message: dict[str, Any]) -> http.client.HTTPResponse:
        self._conn.request("POST", self._path, _encode(message).encode(), self._headers)
        response = self._conn.getresponse()
        session = response.getheader("mcp-session-id")
        if session:
            self._headers["Mcp-Session-Id"] = session
        return response

    def _post(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        request_id = self._next_id
        response = self._send({"jsonrpc": "2.0", "id": request_id, "method": method,
                               "params": params})
        if response.getheader("content-type", "").startswith("text/event-stream"):
            answer = None
            while answer is None:
                line = response.readline()
                if not line:
                    raise ConnectionError("the stream ended before the answer")
                if line.startswith(b"data:"):
                    message = json.loads(line[5:])
                    if message.get("id") == request_id:
                        answer = message
            response.read()  # the server ends the stream after the answer
            return answer
        return json.loads(response.read())  # type: ignore[no-any-return]

    def _notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method}).read()

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._post("tools/call", {"name": name, "arguments": arguments})["result"]

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RawHttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
