"""The ``unix://`` fast path (``lean.Answer``): a small JSON success read whole is handed to
the HTTP transport without a ``requests.Response``. Every answer is sent both ways, to a raw
``AF_UNIX`` listener giving that exact answer: the fast path takes only the answers it may
take (2xx, ``application/json``, a whole ``Content-Length`` body, no ``Set-Cookie``, no
content coding), and what it gives is what the general path gives (status, every header,
body); any other answer comes back as the same ``requests.Response`` as before.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from unix_raw_listener import RawUnixListener

import mcp_lite
from mcp_lite._http import body as _body
from mcp_lite._http import session as _session
from mcp_lite._http import unix_client as lean
from mcp_lite._http.slots import Slot
from mcp_lite.errors import MessageTooLarge
from mcp_lite.transports import http as http_transport

JSON = b'{"jsonrpc":"2.0","id":1,"result":{}}'
BIG = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"x": "y" * 70000}}).encode()
ZIPPED = gzip.compress(JSON)


def _answer(status: str, headers: list[str], body: bytes, length: bool = True) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers]
    if length:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


CT = "Content-Type: application/json"
# (answer, whether the fast path takes it)
CASES = {
    "json": (_answer("200 OK", [CT], JSON), True),
    "json-charset": (
        _answer("200 OK", ["Content-Type: Application/JSON; charset=utf-8"], JSON),
        True,
    ),
    "json-201": (_answer("201 Created", [CT], JSON), True),
    "session-id": (_answer("200 OK", [CT, "Mcp-Session-Id: s-123"], JSON), True),
    "repeated-header": (_answer("200 OK", [CT, "X-A: 1", "X-A: 2"], JSON), True),
    "set-cookie": (_answer("200 OK", [CT, "Set-Cookie: lb=n7; Path=/"], JSON), False),
    "sse": (
        _answer("200 OK", ["Content-Type: text/event-stream"], b"data: " + JSON + b"\n\n"),
        False,
    ),
    "accepted": (_answer("202 Accepted", [], b""), False),
    "bad-request": (_answer("400 Bad Request", [CT], JSON), False),
    "not-found": (_answer("404 Not Found", [CT], JSON), False),
    "busy": (_answer("429 Too Many Requests", [CT, "Retry-After: 1"], JSON), False),
    "server-error": (_answer("500 Internal Server Error", [CT], JSON), False),
    "redirect": (_answer("307 Temporary Redirect", ["Location: /elsewhere"], b""), False),
    "gzip": (_answer("200 OK", [CT, "Content-Encoding: gzip"], ZIPPED), False),
    "chunked": (
        _answer("200 OK", [CT, "Transfer-Encoding: chunked"], _chunked(JSON), length=False),
        False,
    ),
    "large": (_answer("200 OK", [CT], BIG), False),
    "text": (_answer("200 OK", ["Content-Type: text/plain"], b"hello"), False),
}


def _post(url: str, whole: bool) -> tuple[Any, Any]:
    """(what ``request_whole`` returned, or the error it raised; the session's cookies)."""
    session = _session.make_session(_session.HttpOptions(url=url, headers={}))
    slot = Slot()
    try:
        try:
            with slot.active():
                got = _session.request_whole(
                    session,
                    "POST",
                    url,
                    headers={"Accept": "application/json", "Content-Type": "application/json"},
                    data=b"{}",
                    timeout=(5.0, 5.0),
                    whole=whole,
                )
        except Exception as exc:  # the same failure both ways (a redirect to elsewhere)
            return (None, (type(exc), str(exc))), dict(session.cookies)
        if type(got) is lean.Answer:
            seen: Any = (got.status, {k: v for k, v in got.fields.values()}, got.body)
        else:
            with got:
                body = _body.read_limited(got, 1 << 20, strict=True)
            seen = (got.status_code, dict(got.headers), body)
        return (type(got), seen), dict(session.cookies)
    finally:
        slot.release()
        _session.close_session(session)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fast_path_gives_what_the_general_path_gives(sock_dir: Path, case: str) -> None:
    answer, fast = CASES[case]
    path = str(sock_dir / "s.sock")
    raw = RawUnixListener(path, answer)
    try:
        url = f"unix://{path}/mcp"
        (kind, seen), cookies = _post(url, whole=True)
        (general_kind, general), general_cookies = _post(url, whole=False)
    finally:
        raw.close()
    assert general_kind is not lean.Answer
    assert kind is (lean.Answer if fast else general_kind)
    assert (case == "redirect") == (kind is None)  # the only failure: the same both ways
    assert seen == general  # status, every header (names as sent), the body
    assert cookies == general_cookies


@pytest.fixture
def fast_answers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the answers the transport took from the fast path."""
    taken: list[int] = []
    original = http_transport.HttpTransport._answer

    def spy(self: Any, exch: Any, answer: Any) -> None:
        taken.append(answer.status)
        original(self, exch, answer)

    monkeypatch.setattr(http_transport.HttpTransport, "_answer", spy)
    return taken


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_calls_through_the_fast_path_answer_as_before(
    unix_fault_server: Any, fast_answers: list[int], version: str
) -> None:
    url = unix_fault_server.url("/modern" if version == "2026-07-28" else "/mcp")
    with mcp_lite.connect(url, protocol_version=version, timeout=10) as client:
        for _ in range(5):
            assert client.call_tool("echo").text == "echo"
        if version == "2025-11-25":
            assert client.transport.session_id  # type: ignore[union-attr]  # the initialize answer's Mcp-Session-Id was kept
    assert len(fast_answers) >= 5  # the calls took the fast path


def test_an_answer_over_max_message_size_fails_its_call_on_the_fast_path(
    unix_fault_server: Any, fast_answers: list[int]
) -> None:
    url = unix_fault_server.url("/modern")
    with mcp_lite.connect(url, protocol_version="2026-07-28", timeout=10) as client:
        transport: Any = client.transport
        # smaller than any answer from now on
        transport.options = dataclasses.replace(transport.options, max_message_size=20)
        taken = len(fast_answers)
        with pytest.raises(MessageTooLarge):
            client.call_tool("echo")
        assert len(fast_answers) == taken + 1
