"""The small server's header parser against the stdlib's (``http.client.parse_headers``):
the same headers, the same refusals, on valid and hostile header blocks."""

from __future__ import annotations

import http.client
import io
import random

import pytest

from mcp_lite.server.http import head as _http_head
from mcp_lite.server.http.head import read_headers


def _stdlib(raw: bytes) -> tuple[str, object]:
    try:
        message = http.client.parse_headers(io.BytesIO(raw))
    except http.client.HTTPException as exc:
        return "error", (type(exc), str(exc))
    return "ok", message


def _ours(raw: bytes, buffered: bool = False) -> tuple[str, object]:
    """Read line by line (a plain file), or from a peekable buffer (as a socket's rfile),
    where a whole block may be parsed at once."""
    fp: io.BytesIO | io.BufferedReader = io.BytesIO(raw)
    if buffered:
        fp = io.BufferedReader(fp, buffer_size=8192)  # type: ignore[arg-type]
    try:
        headers = read_headers(fp)
    except http.client.HTTPException as exc:
        return "error", (type(exc), str(exc))
    # what is left to read is the body: the same either way
    return "ok", (headers, fp.read())


def _same(raw: bytes) -> None:
    for buffered in (False, True):
        _same_as_stdlib(raw, buffered)


def _same_as_stdlib(raw: bytes, buffered: bool) -> None:
    kind, theirs = _stdlib(raw)
    mine_kind, got = _ours(raw, buffered)
    assert mine_kind == kind, raw
    if kind == "error":
        assert got == theirs, raw
        return
    mine, rest = got  # type: ignore[misc]
    fp = io.BytesIO(raw)
    http.client.parse_headers(fp)
    assert rest == fp.read(), raw
    assert isinstance(mine, _http_head.Headers)
    assert isinstance(theirs, http.client.HTTPMessage)
    assert mine.items() == theirs.items(), raw
    names = {k for k, _ in theirs.items()} | {"Content-Length", "X-Absent", "content-type"}
    for name in names:
        for spelled in (name, name.lower(), name.upper()):
            assert mine.get(spelled) == theirs.get(spelled), (raw, spelled)
            assert mine[spelled] == theirs[spelled], (raw, spelled)
            assert (spelled in mine) == (spelled in theirs), (raw, spelled)
            assert mine.get_all(spelled) == theirs.get_all(spelled), (raw, spelled)
            assert mine.get(spelled, "dflt") == theirs.get(spelled, "dflt"), (raw, spelled)


VALID = [
    b"\r\n",
    b"\n",
    b"",
    b"Host: x\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\nBODY",
    b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: abc\r\n\r\n",
    b"A: 1\nB: 2\n\n",
    b"A:1\r\nB:\t 2 \r\nC:\r\nD:    \r\n\r\n",
    b"Dup: one\r\ndup: two\r\nDUP: three\r\n\r\n",
    b"X-Latin: caf\xe9 \xff\r\n\r\n",
    b"X: a: b: c\r\n\r\n",
    b"Weird!#$%&'*+-.^_`|~Name0: v\r\n\r\n",
    b"X: trailing blanks  \t \r\n\r\n",
]

HOSTILE = [
    b"X: folded\r\n continued\r\n\tagain\r\n\r\n",  # obs-fold
    b" leading: continuation first\r\nX: y\r\n\r\n",
    b"X: a\rY: b\r\n\r\n",  # a lone CR splits lines for email
    b"X: a\r\r\n\r\n",
    b"no colon here\r\nX: y\r\n\r\n",  # ends the headers for email
    b": empty name\r\nX: y\r\n\r\n",
    b"From someone\r\nX: y\r\n\r\n",
    b"X: y\r\nFrom someone\r\nZ: z\r\n\r\n",
    b"X: y\r\nFrom last\r\n\r\n",
    b"Sp ace: v\r\n\r\n",
    b"X : space before colon\r\n\r\n",
    b"X\x00: nul\r\n\r\n",
    b"X: nul \x00 inside\r\n\r\n",
    b"X: cut off at the end of input",
    b"X: y\r\nZ: cut",
    b"\xe9: latin name\r\n\r\n",
    b"X: \x0b\x0c vertical\r\n\r\n",
    b"X: y\r\n\r\r\n",
    b"X: y\r\n \r\n\r\n",
    b"H: " + b"a" * 65530 + b"\r\n\r\n",  # just within the line bound
    b"H: " + b"a" * 70000 + b"\r\n\r\n",  # over the line bound
    b"".join(b"H%d: v\r\n" % i for i in range(99)) + b"\r\n",  # the most headers allowed
    b"".join(b"H%d: v\r\n" % i for i in range(100)) + b"\r\n",  # one too many
    b"".join(b"H%d: v\r\n" % i for i in range(500)),
]


@pytest.mark.parametrize("raw", VALID + HOSTILE)
def test_same_headers_as_the_stdlib(raw: bytes) -> None:
    _same(raw)


def test_plain_lines_skip_the_email_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """The common request takes the fast path; an odd one takes the stdlib's."""
    used = []
    real = _http_head._parsed_by_email
    monkeypatch.setattr(_http_head, "_parsed_by_email", lambda lines: used.append(1) or real(lines))
    read_headers(io.BytesIO(VALID[3]))
    read_headers(io.BufferedReader(io.BytesIO(VALID[3])))  # type: ignore[arg-type]
    assert used == []
    read_headers(io.BytesIO(HOSTILE[0]))
    read_headers(io.BufferedReader(io.BytesIO(HOSTILE[0])))  # type: ignore[arg-type]
    assert used == [1, 1]


def test_random_header_blocks_match_the_stdlib() -> None:
    rng = random.Random(2443)
    pieces = [
        b"X",
        b"Content-Length",
        b"a",
        b":",
        b": ",
        b" ",
        b"\t",
        b"\r",
        b"\n",
        b"\r\n",
        b"From ",
        b"\xe9",
        b"\x00",
        b"-",
        b"v",
        b"1",
        b";",
        b"~",
        b"(",
        b"\x7f",
    ]
    for _ in range(4000):
        raw = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 24)))
        _same(raw)
        _same(b"Host: h\r\n" + raw + b"\r\n\r\n")


def test_the_bounds_are_enforced_before_more_is_read() -> None:
    """Reading stops at the first line past the bound: the rest is never pulled in."""
    raw = io.BytesIO(b"H: " + b"a" * 70000 + b"\r\n" + b"Z: z\r\n" * 1000 + b"\r\n")
    with pytest.raises(http.client.LineTooLong):
        read_headers(raw)
    assert raw.tell() == http.client._MAXLINE + 1
    many = b"H: v\r\n" * 200 + b"\r\n"
    raw = io.BytesIO(many)
    with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
        read_headers(raw)
    assert raw.tell() == 101 * len(b"H: v\r\n")
    for count in (99, 100):  # a buffered block: the count bound holds too
        block = b"H: v\r\n" * count + b"\r\nBODY"
        assert (
            _ours(block, buffered=True)[0]
            == _stdlib(block)[0]
            == ("ok" if count == 99 else "error")
        )


class _Fake:
    """A handler on byte buffers: parse_request only (no socket)."""

    def __init__(self, cls: type, raw: bytes) -> None:
        class H(cls):  # type: ignore[misc,valid-type]
            def __init__(self) -> None:
                self.rfile = io.BytesIO(raw)
                self.wfile = io.BytesIO()
                self.client_address = ("test", 0)
                self.request_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

        self.h = H()
        self.h.raw_requestline = self.h.rfile.readline(65537)
        self.ok = self.h.parse_request()

    def seen(self) -> tuple[object, ...]:
        h = self.h
        out = h.wfile.getvalue().split(b"\r\n")
        out = [line for line in out if not line.startswith(b"Date: ")]
        headers = h.headers.items() if self.ok else None
        return (
            self.ok,
            h.command,
            getattr(h, "path", None),
            h.request_version,
            h.close_connection,
            h.requestline,
            headers,
            out,
        )


REQUESTS = [
    b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /mcp HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nConnection: close\r\n\r\n",
    b"GET //servers//x HTTP/1.1\r\n\r\n",
    b"GET /mcp\r\n",
    b"POST /mcp\r\n",
    b"\r\n",
    b"POST /mcp HTTP/2.0\r\n\r\n",
    b"POST /mcp HTTP/1.1.1\r\n\r\n",
    b"POST /mcp HTTP/\xb9.1\r\n\r\n",
    b"POST /mcp HTTP/01234567890.1\r\n\r\n",
    b"POST /mcp FTP/1.1\r\n\r\n",
    b"POST /mcp x HTTP/1.1\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /mcp HTTP/1.1\r\nX: folded\r\n more\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\n" + b"H: v\r\n" * 150 + b"\r\n",
    b"POST /mcp HTTP/1.1\r\nH: " + b"a" * 70000 + b"\r\n\r\n",
]


@pytest.mark.parametrize("raw", REQUESTS)
def test_parse_request_as_the_stdlib(raw: bytes) -> None:
    """The small server's parse_request: the stdlib's outcome (state and bytes written)."""
    import http.server

    from mcp_lite.server.http.handler import Handler as _Handler

    class Stdlib(http.server.BaseHTTPRequestHandler):
        protocol_version = _Handler.protocol_version
        server_version = _Handler.server_version

    assert _Fake(_Handler, raw).seen() == _Fake(Stdlib, raw).seen()
