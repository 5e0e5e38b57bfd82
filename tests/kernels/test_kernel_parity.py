"""Property-based tests: both implementations agree with each other and with simple oracles.

Parity tests take ``compiled`` and ``pure`` and compare outputs and errors exactly (type,
message, ``MessageTooLarge`` arguments). Oracle tests run per implementation (``speedups``)
and check that cutting a stream into chunks anywhere changes nothing.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_lite.errors import MessageTooLarge


def _examples(n: int) -> int:
    """``n`` examples, scaled by ``MCP_LITE_EXAMPLES_SCALE`` (``make check`` runs a quarter)."""
    return max(10, int(n * float(os.environ.get("MCP_LITE_EXAMPLES_SCALE", "1"))))


SETTINGS = settings(
    max_examples=_examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """("ok", result) or ("raise", (type name, message)) for comparing implementations."""
    try:
        return "ok", fn(*args)
    except Exception as exc:  # compared, not swallowed
        return "raise", (type(exc).__name__, str(exc))


def plain(items: list[Any]) -> list[Any]:
    """SseEvent objects as tuples, so events of both modules compare."""
    return [
        item if isinstance(item, (bytes, MessageTooLarge)) else (item.event, item.data, item.id)
        for item in items
    ]


@st.composite
def chunked(draw: st.DrawFn, stream: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


# --- names -----------------------------------------------------------------------------

names = st.text(
    alphabet=st.one_of(
        st.sampled_from("abzAZ09_-"),
        st.sampled_from(" .!/:é日😀\x00\x7f\x80\uffff"),
        st.characters(),
    ),
    max_size=40,
)


@SETTINGS
@given(server=names, tool=names, other=names)
def test_names_parity(
    compiled: ModuleType, pure: ModuleType, server: str, tool: str, other: str
) -> None:
    for mod_fn in ("normalize_name", "parse_tool_name"):
        for value in (server, "mcp__" + server, "mcp__" + server + "__" + tool):
            assert outcome(getattr(compiled, mod_fn), value) == outcome(
                getattr(pure, mod_fn), value
            )
    assert compiled.build_tool_name(server, tool) == pure.build_tool_name(server, tool)
    assert compiled.normalize_names([server, tool, other]) == pure.normalize_names(
        [server, tool, other]
    )
    assert compiled.build_tool_names(server, [tool, other]) == pure.build_tool_names(
        server, [tool, other]
    )


@SETTINGS
@given(name=names)
def test_normalize_name_oracle(speedups: ModuleType, name: str) -> None:
    expected = "".join(c if re.fullmatch(r"[a-zA-Z0-9_-]", c) else "_" for c in name)
    assert speedups.normalize_name(name) == expected


@SETTINGS
@given(
    server=st.from_regex(
        r"[a-zA-Z0-9-]([a-zA-Z0-9-]|_(?!_))*[a-zA-Z0-9-]|[a-zA-Z0-9-]", fullmatch=True
    ),
    tool=names,
)
def test_parse_inverts_build(speedups: ModuleType, server: str, tool: str) -> None:
    assert speedups.parse_tool_name(speedups.build_tool_name(server, tool)) == (
        server,
        speedups.normalize_name(tool),
    )


@SETTINGS
@given(
    value=st.one_of(
        st.none(), st.integers(), st.binary(max_size=3), st.lists(st.text(), max_size=2)
    )
)
def test_name_errors_parity(compiled: ModuleType, pure: ModuleType, value: object) -> None:
    for fn in ("normalize_name", "parse_tool_name"):
        assert outcome(getattr(compiled, fn), value) == outcome(getattr(pure, fn), value)
    assert outcome(compiled.build_tool_name, "s", value) == outcome(
        pure.build_tool_name, "s", value
    )


# --- NDJSON ----------------------------------------------------------------------------

ndjson_tokens = st.lists(
    st.sampled_from(
        [
            b"\n",
            b"\r",
            b"\r\n",
            b" ",
            b"\t",
            b"{}",
            b'{"a":1}',
            b"x" * 7,
            b"y" * 30,
            b"\xc3\xa9",
            b"\x00",
        ]
    ),
    max_size=40,
).map(b"".join)


def run_ndjson(mod: ModuleType, max_size: int, chunks: list[bytes]) -> list[Any]:
    s = mod.NdjsonSplitter(max_size)
    out: list[Any] = []
    for chunk in chunks:
        out += s.feed(chunk)
        out.append(("buffered", s.buffered))
    out.append(("flush", s.flush()))
    return out


@SETTINGS
@given(data=st.data(), stream=ndjson_tokens, max_size=st.integers(1, 40))
def test_ndjson_parity(
    compiled: ModuleType, pure: ModuleType, data: st.DataObject, stream: bytes, max_size: int
) -> None:
    chunks = data.draw(chunked(stream))
    assert run_ndjson(compiled, max_size, chunks) == run_ndjson(pure, max_size, chunks)


lines = st.lists(
    st.tuples(
        st.one_of(
            st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
            st.sampled_from([b"", b"  ", b"\t\r", b"x" * 50, b'{"k":"v"}']),
        ),
        st.sampled_from([b"\n", b"\r\n"]),
    ),
    max_size=15,
)


def ndjson_oracle(items: list[tuple[bytes, bytes]], tail: bytes, max_size: int) -> list[Any]:
    out: list[Any] = []
    for raw, end in items:
        content = raw + end[:-1]  # "\r\n": the "\r" is stripped; a raw trailing "\r" stays
        content = content[:-1] if content.endswith(b"\r") else content
        if len(content) > max_size:
            out.append("too large")
        elif content.strip():
            out.append(content)
    content = tail[:-1] if tail.endswith(b"\r") else tail
    if len(content) > max_size:
        out.append("too large")
    elif content.strip():
        out.append(content)
    return out


@SETTINGS
@given(
    data=st.data(),
    items=lines,
    tail=st.binary(max_size=8).map(lambda b: b.replace(b"\n", b"")),
    max_size=st.integers(1, 40),
)
def test_ndjson_oracle_any_chunking(
    speedups: ModuleType,
    data: st.DataObject,
    items: list[tuple[bytes, bytes]],
    tail: bytes,
    max_size: int,
) -> None:
    stream = b"".join(raw + end for raw, end in items) + tail
    s = speedups.NdjsonSplitter(max_size)
    got: list[Any] = []
    for chunk in data.draw(chunked(stream)):
        got += s.feed(chunk)
        assert s.buffered <= max_size + 1
    got += s.flush()
    assert [x if isinstance(x, bytes) else "too large" for x in got] == ndjson_oracle(
        items, tail, max_size
    )
    for x in got:  # the head is the start of the message, as much as was received
        if isinstance(x, MessageTooLarge):
            assert x.max_size == max_size and 0 < len(x.head) <= 256


# --- SSE -------------------------------------------------------------------------------

sse_tokens = st.lists(
    st.sampled_from(
        [
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\n",
            b"data: ",
            b"data:",
            b"data",
            b"event: ",
            b"event",
            b"id: ",
            b"id",
            b"retry: ",
            b"retry:",
            b": comment",
            b":",
            b" ",
            b"x",
            b"y" * 25,
            b"12",
            b"\x00",
            b"\xef\xbb\xbf",
            b"\xc3\xa9",
            b"\xff",
            b"\xe2\x82",
            b"foo: ",
        ]
    ),
    max_size=50,
).map(b"".join)


def run_sse(mod: ModuleType, max_size: int, chunks: list[bytes]) -> list[Any]:
    p = mod.SseParser(max_size)
    out: list[Any] = []
    for chunk in chunks:
        out += plain(p.feed(chunk))
        out.append((p.last_event_id, p.retry, p.buffered))
    return out


@SETTINGS
@given(data=st.data(), stream=sse_tokens, max_size=st.integers(1, 60))
def test_sse_parity(
    compiled: ModuleType, pure: ModuleType, data: st.DataObject, stream: bytes, max_size: int
) -> None:
    chunks = data.draw(chunked(stream))
    assert run_sse(compiled, max_size, chunks) == run_sse(pure, max_size, chunks)


def sse_oracle(stream: bytes) -> tuple[list[tuple[str, str, str]], str, int | None]:
    """The WHATWG algorithm, written plainly on the whole decoded stream."""
    text = stream.decode("utf-8", "replace")
    text = text[1:] if text.startswith("\ufeff") else text
    lines = re.split(r"\r\n|\r|\n", text)[:-1]  # the last piece is an unfinished line
    events: list[tuple[str, str, str]] = []
    data, event, id_buffer, last_id, retry = "", "", "", "", None
    for line in lines:
        if line == "":
            last_id = id_buffer
            if data:
                events.append((event or "message", data[:-1], id_buffer))
            data, event = "", ""
            continue
        if line.startswith(":"):
            continue
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data += value + "\n"
        elif field == "event":
            event = value
        elif field == "id" and "\x00" not in value:
            id_buffer = value
        elif field == "retry" and re.fullmatch(r"[0-9]+", value):
            retry = int(value)
    return events, last_id, retry


@SETTINGS
@given(data=st.data(), stream=sse_tokens)
def test_sse_oracle_any_chunking(speedups: ModuleType, data: st.DataObject, stream: bytes) -> None:
    p = speedups.SseParser()
    got: list[Any] = []
    for chunk in data.draw(chunked(stream)):
        got += plain(p.feed(chunk))
    assert (got, p.last_event_id, p.retry) == sse_oracle(stream)


def sse_limit_oracle(stream: bytes, max_size: int) -> list[Any]:
    """Events and "too large" markers under the documented size rules, on whole lines."""
    stream = stream[3:] if stream.startswith(b"\xef\xbb\xbf") else stream
    out: list[Any] = []
    data, event, id_buffer, dropping = b"", b"", "", False
    *lines, unfinished = re.split(rb"\r\n|\r|\n", stream)
    for line in lines:
        if line == b"":
            if dropping:
                out.append("too large")
            elif data:
                out.append(
                    (
                        event.decode(errors="replace") or "message",
                        data[:-1].decode(errors="replace"),
                        id_buffer,
                    )
                )
            data, event, dropping = b"", b"", False
            continue
        if line.startswith(b":"):
            continue
        field, colon, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        if field == b"data":
            if not dropping and len(data) + len(value) > max_size:
                dropping, data = True, b""
            elif not dropping:
                data += value + b"\n"
        elif len(line) > max_size + 6:
            if colon and field in (b"event", b"id") and not dropping:
                dropping, data = True, b""
        elif field == b"event":
            event = value
        elif field == b"id" and b"\x00" not in value:
            id_buffer = value.decode(errors="replace")
    # an event is reported at its blank line: one cut off by the end of the stream is not
    del unfinished
    return out


@SETTINGS
@given(data=st.data(), stream=sse_tokens, max_size=st.integers(1, 60))
def test_sse_size_limit_any_chunking(
    speedups: ModuleType, data: st.DataObject, stream: bytes, max_size: int
) -> None:
    p = speedups.SseParser(max_size)
    got: list[Any] = []
    for chunk in data.draw(chunked(stream)):
        got += plain(p.feed(chunk))
        assert p.buffered <= 2 * max_size + 8
    assert [e if isinstance(e, tuple) else "too large" for e in got] == sse_limit_oracle(
        stream, max_size
    )


# --- JSON ------------------------------------------------------------------------------


@SETTINGS
@given(raw=st.binary(max_size=20) | st.sampled_from([b"{}", b"[1,2]", b'{"a":"\\u00e9"}', b"nul"]))
def test_decode_parity(compiled: ModuleType, pure: ModuleType, raw: bytes) -> None:
    assert outcome(compiled.decode_message, raw) == outcome(pure.decode_message, raw)


# --- LRU -------------------------------------------------------------------------------

keys = st.integers(0, 6)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("get"), keys),
        st.tuples(st.just("put"), keys, st.integers()),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("delete_where"), st.integers(2, 4)),
        st.tuples(st.just("clear")),
        st.tuples(st.just("contains"), keys),
        st.tuples(st.just("get"), st.just([])),  # unhashable: TypeError
    ),
    max_size=60,
)


def run_lru(mod: ModuleType, maxsize: int, ops: list[tuple[Any, ...]]) -> list[Any]:
    c = mod.LruCache(maxsize)
    out: list[Any] = []
    for op in ops:
        name, args = op[0], op[1:]
        if name == "delete_where":
            args = (lambda k, m=args[0]: k % m == 0,)
        elif name == "contains":
            name, args = "__contains__", args
        out.append(outcome(getattr(c, name), *args))
        out.append((len(c), c.keys()))
    return out


class LruModel:
    """The obvious (slow) LRU: a list of [key, value], oldest first."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize, self.items = maxsize, []  # type: ignore[var-annotated]

    def _find(self, key: Any) -> int:
        hash(key)
        return next((i for i, (k, _) in enumerate(self.items) if k == key), -1)

    def get(self, key: Any, default: Any = None) -> Any:
        i = self._find(key)
        if i < 0:
            return default
        self.items.append(self.items.pop(i))
        return self.items[-1][1]

    def put(self, key: Any, value: Any) -> None:
        i = self._find(key)
        if i >= 0:
            self.items.pop(i)
        self.items.append([key, value])
        del self.items[: max(0, len(self.items) - self.maxsize)]

    def delete(self, key: Any) -> bool:
        i = self._find(key)
        if i >= 0:
            self.items.pop(i)
        return i >= 0

    def delete_where(self, predicate: Callable[[Any], object]) -> int:
        before = len(self.items)
        self.items = [kv for kv in self.items if not predicate(kv[0])]
        return before - len(self.items)

    def clear(self) -> None:
        self.items = []

    def __contains__(self, key: Any) -> bool:
        return self._find(key) >= 0

    def __len__(self) -> int:
        return len(self.items)

    def keys(self) -> list[Any]:
        return [k for k, _ in self.items]


@SETTINGS
@given(maxsize=st.integers(0, 5), ops=operations)
def test_lru_parity(compiled: ModuleType, pure: ModuleType, maxsize: int, ops: list[Any]) -> None:
    assert run_lru(compiled, maxsize, ops) == run_lru(pure, maxsize, ops)


@SETTINGS
@given(maxsize=st.integers(0, 5), ops=operations)
def test_lru_model(speedups: ModuleType, maxsize: int, ops: list[Any]) -> None:
    class Model:
        LruCache = LruModel

    got = run_lru(speedups, maxsize, ops)
    expected = run_lru(Model, maxsize, ops)  # type: ignore[arg-type]
    assert [x if x[0] != "raise" else ("raise", x[1][0]) for x in got] == [
        x if x[0] != "raise" else ("raise", x[1][0]) for x in expected
    ]


def test_every_public_name_has_a_twin(compiled: ModuleType, pure: ModuleType) -> None:
    assert sorted(compiled.__all__) == sorted(pure.__all__)
    for name in pure.__all__:
        assert hasattr(compiled, name), name


# --- response-id attribution --------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["id", "method", "x", 'q"', "\\"]), inner, max_size=4),
    ),
    max_leaves=12,
)
message_keys = st.sampled_from(["jsonrpc", "id", "method", "result", "error", "params", "id\\"])


def response_id_oracle(message: Any) -> Any:
    """What the scanner must find, from the decoded message."""
    if not isinstance(message, dict) or "method" in message or "id" not in message:
        return None
    rid = message["id"]
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return None
    if isinstance(rid, int) and not -(10**19) < rid < 10**19:
        return None
    return rid


def request_id_oracle(message: Any) -> Any:
    """The id of a request from the peer (a top-level "method" and a usable "id")."""
    if not isinstance(message, dict) or "method" not in message:
        return None
    rid = message.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return None
    if isinstance(rid, int) and not -(10**19) < rid < 10**19:
        return None
    if isinstance(rid, str) and len(json.dumps(rid).encode()) > 258:
        return None
    return rid


@SETTINGS
@given(
    data=st.data(),
    message=st.one_of(st.dictionaries(message_keys, json_values, max_size=6), json_values),
    spaced=st.booleans(),
)
def test_response_id_scanner_oracle_and_parity(
    compiled: ModuleType, pure: ModuleType, data: st.DataObject, message: Any, spaced: bool
) -> None:
    import json

    text = json.dumps(message, separators=(", ", " : ") if spaced else (",", ":"))
    raw = text.encode()
    expected = response_id_oracle(message)
    if isinstance(expected, str) and len(json.dumps(expected).encode()) > 258:
        expected = None
    chunks = data.draw(chunked(raw))
    requested = request_id_oracle(message)
    for module in (compiled, pure):
        assert module.scan_response_id(raw) == expected
        scanner = module.ResponseIdScanner()
        for chunk in chunks:
            scanner.feed(chunk)
        assert scanner.response_id == expected
        assert scanner.request_id == requested
