"""Differential fuzzing: the compiled kernels and the pure twin, fed the same random input,
give the same frames, events, errors and state (issue 22, item 15).

Every kernel that reads server bytes or server-chosen strings is driven through the same
random operations in both builds, and every observable is compared after each step:

- ``NdjsonSplitter``: ``feed``/``flush`` and ``read_into`` + ``route`` over a pipe, with
  ``buffered``; ``MessageTooLarge`` items compare by all their arguments;
- ``SseParser``: ``feed``, with ``last_event_id``, ``retry`` and ``buffered``;
- ``ResponseIdScanner``: ``response_id``, ``likely_response_id``, ``request_id`` per chunk;
- ``plain_shape`` over random JSON-like values; the name kernels over random text and
  non-strings; ``LruCache`` over random operation sequences.

``make test`` runs a modest number of examples. ``make fuzz`` runs it longer against an
AddressSanitizer/UBSan build of the extension: ``MCP_LITE_FUZZ_EXT`` names that ``.so``
(loaded instead of ``mcp_lite/_speedups``), ``MCP_LITE_FUZZ_EXAMPLES`` the examples per test.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_lite.errors import MessageTooLarge

EXAMPLES = int(os.environ.get("MCP_LITE_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # each run explores afresh (make fuzz repeats it with new seeds)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def compiled() -> ModuleType:
    """The compiled kernels: the sanitizer build named by MCP_LITE_FUZZ_EXT, else the
    normal one."""
    if os.environ.get("MCP_LITE_NO_EXTENSIONS", "") not in ("", "0"):
        pytest.skip("MCP_LITE_NO_EXTENSIONS is set: the compiled kernels are not tested here")
    path = os.environ.get("MCP_LITE_FUZZ_EXT")
    if not path:
        try:
            return importlib.import_module("mcp_lite._speedups")
        except ImportError as exc:
            pytest.skip(f"compiled mcp_lite._speedups is not built ({exc}); run `make build-ext`")
    spec = importlib.util.spec_from_file_location("mcp_lite._speedups", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert os.path.samefile(module.__file__, path)
    return module


def outcome(fn: Callable[..., Any], *args: Any) -> Any:
    """The result, or the exception's type and message (compared, not swallowed)."""
    try:
        return ("ok", fn(*args))
    except Exception as exc:
        return ("raise", type(exc).__name__, str(exc))


def plain(items: Any) -> Any:
    """Events as tuples, so the two builds' SseEvent types compare; the rest as is."""
    if isinstance(items, list):
        return [plain(item) for item in items]
    if isinstance(items, tuple):
        return tuple(plain(item) for item in items)
    if hasattr(items, "event") and hasattr(items, "data") and not isinstance(items, bytes):
        return ("event", items.event, items.data, items.id)
    if isinstance(items, MessageTooLarge):
        return ("too large", *items.args)
    return items


@st.composite
def chunked(draw: st.DrawFn, stream: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=16)))
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


limits = st.one_of(
    st.integers(1, 80),
    st.sampled_from([sys.maxsize, sys.maxsize - 1, sys.maxsize - 6, 2**62, 256, 257]),
)

# --- JSON-RPC-ish bytes ---------------------------------------------------------------------

json_tokens = st.lists(
    st.one_of(
        st.sampled_from(
            [
                b"{",
                b"}",
                b"[",
                b"]",
                b",",
                b":",
                b'"',
                b"\\",
                b'\\"',
                b" ",
                b"\t",
                b"\r",
                b"\n",
                b"\x0b",
                b"\x0c",
                b'"id"',
                b'"method"',
                b'"result"',
                b'"error"',
                b'"params"',
                b"1",
                b"-7",
                b"0",
                b"01",
                b"1e3",
                b"12345678901234567890",
                b'"abc"',
                b'"\\u00e9"',
                b'"\\ud800"',
                b"null",
                b"true",
                b"\xff",
                b"\xc3\xa9",
                b'{"jsonrpc": "2.0", "id": 5, "result": {}}',
                b'{"jsonrpc":"2.0","method":"ping","id":"x"}',
            ]
        ),
        st.binary(max_size=6),
    ),
    max_size=40,
).map(b"".join)


# what may precede the top-level "{": JSON's whitespace, and bytes.isspace()'s other two
leads = st.sampled_from([b"", b" ", b"\t\r\n", b"\x0b", b"\x0c", b" \x0c"])


whole = st.sampled_from([b"", b'{"id": 5, "result": {}}', b'{"method": "x", "id": "r"}'])


@FUZZ
@given(data=st.data(), stream=st.tuples(leads, whole, json_tokens).map(b"".join))
def test_scanner_differential(
    compiled: ModuleType, pure: ModuleType, data: st.DataObject, stream: bytes
) -> None:
    chunks = data.draw(chunked(stream))
    states = []
    for mod in (compiled, pure):
        scanner = mod.ResponseIdScanner()
        seen = []
        for chunk in chunks:
            seen.append(outcome(scanner.feed, chunk))
            seen.append((scanner.response_id, scanner.likely_response_id, scanner.request_id))
        seen.append(outcome(mod.scan_response_id, stream))
        states.append(seen)
    assert states[0] == states[1]
    assert all(step[0] != "raise" for step in states[0][:-1:2]), states[0]  # feed never raises


# --- NDJSON ---------------------------------------------------------------------------------

ndjson_streams = st.lists(
    st.one_of(json_tokens, st.sampled_from([b"\n", b"\r\n", b"\r", b"  \n", b"x" * 300])),
    max_size=8,
).map(b"".join)


def run_ndjson(mod: ModuleType, limit: int, ops: list[tuple[str, bytes]]) -> list[Any]:
    s = mod.NdjsonSplitter(limit)
    r, w = os.pipe()
    os.set_blocking(r, False)
    out: list[Any] = []
    try:
        for op, chunk in ops:
            if op == "feed":
                out.append(plain(outcome(s.feed, chunk)))
            elif op == "flush":
                out.append(plain(outcome(s.flush)))
            else:  # through the pipe: read_into, then pop_frame or route
                if chunk:
                    os.write(w, chunk)
                out.append(outcome(s.read_into, r, 0.0))
                if op == "route":
                    routed: list[Any] = []
                    out.append((outcome(s.route, routed.append), plain(routed)))
                else:
                    out.append(plain(outcome(s.pop_frame)))
            out.append(("state", s.buffered, s.max_size))
        os.close(w)
        w = -1
        out.append(outcome(s.read_into, r, 0.0))  # end of stream: the last line
        out.append(plain(outcome(s.route, lambda frame: out.append(plain(frame)))))
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    return out


@FUZZ
@given(data=st.data(), stream=ndjson_streams, limit=limits)
def test_ndjson_differential(
    compiled: ModuleType, pure: ModuleType, data: st.DataObject, stream: bytes, limit: int
) -> None:
    chunks = data.draw(chunked(stream))
    kinds = st.sampled_from(["feed", "feed", "feed", "pop", "route", "flush"])
    ops = [(data.draw(kinds), chunk) for chunk in chunks]
    got = run_ndjson(compiled, limit, ops)
    assert got == run_ndjson(pure, limit, ops)
    assert not any(isinstance(step, tuple) and step[:1] == ("raise",) for step in got), got


# --- SSE ------------------------------------------------------------------------------------

sse_streams = st.lists(
    st.one_of(
        st.sampled_from(
            [
                b"data",
                b"data:",
                b"data: ",
                b"event:",
                b"event: x",
                b"id:",
                b"id: 1",
                b"id: a\x00b",
                b"retry:",
                b"retry: ",
                b"retry: 1500",
                b"retry: 15x",
                b"retry: " + b"9" * 20,
                b"retry: " + b"1" * 4400,
                b"retry: 000000000000000000042",
                b":comment",
                b"\n",
                b"\r",
                b"\r\n",
                b"\n\n",
                b"\xef\xbb\xbf",
                b"\xef\xbb",
                b"\xff\xfe",
                b"foo: bar",
                b"x" * 100,
                b"data: " + b"y" * 90,
            ]
        ),
        json_tokens,
    ),
    max_size=14,
).map(b"".join)


def run_sse(mod: ModuleType, limit: int, chunks: list[bytes]) -> list[Any]:
    p = mod.SseParser(limit)
    out: list[Any] = []
    for chunk in chunks:
        out.append(plain(outcome(p.feed, chunk)))
        out.append(("state", p.last_event_id, p.retry, p.buffered, p.max_size))
    return out


@FUZZ
@given(data=st.data(), stream=sse_streams, limit=limits)
def test_sse_differential(
    compiled: ModuleType, pure: ModuleType, data: st.DataObject, stream: bytes, limit: int
) -> None:
    chunks = data.draw(chunked(stream))
    got = run_sse(compiled, limit, chunks)
    assert got == run_sse(pure, limit, chunks)
    # server bytes never raise out of feed (a 4300-digit retry used to, in both builds)
    assert not any(step[:1] == ("raise",) for step in got), got


# --- plain_shape ----------------------------------------------------------------------------

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5), st.binary(max_size=3)
)


def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(["type", "text", "a", "b", "_meta", "isError"])
    return st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4)


values = st.recursive(scalars, containers, max_leaves=20)
ITEM = {"type": frozenset({str}), "text": frozenset({str}), "_meta": None}
CHECKS: dict[str, Any] = {
    "content": (ITEM, frozenset({"meta"}), "type"),
    "isError": frozenset({bool}),
    "a": lambda v: type(v) is int and v >= 0,
    "b": None,
    "nested": ({"content": (ITEM, frozenset(), "text")}, frozenset(), "content"),
}


@FUZZ
@given(
    raw=st.one_of(
        values,
        st.dictionaries(st.sampled_from([*CHECKS, "meta", "is_error", "x"]), values, max_size=5),
    )
)
def test_plain_shape_differential(compiled: ModuleType, pure: ModuleType, raw: Any) -> None:
    names = frozenset({"is_error", "meta"})
    assert outcome(compiled.plain_shape, raw, CHECKS, names) == outcome(
        pure.plain_shape, raw, CHECKS, names
    )


# --- names ----------------------------------------------------------------------------------

texts = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.sampled_from("ab_-_mcp09é日😀\x00\x7f\x80\udfff"), max_size=30),
    st.sampled_from(["mcp__", "mcp__a__b", "mcp____x", "mcp_", ""]),
)
names_or_not = st.one_of(texts, st.integers(), st.none(), st.binary(max_size=4))


@FUZZ
@given(server=names_or_not, tool=names_or_not, batch=st.lists(names_or_not, max_size=4))
def test_names_differential(
    compiled: ModuleType, pure: ModuleType, server: Any, tool: Any, batch: list[Any]
) -> None:
    for fn, args in [
        ("normalize_name", (server,)),
        ("normalize_names", (batch,)),
        ("build_tool_name", (server, tool)),
        ("build_tool_names", (server, batch)),
        ("parse_tool_name", (server,)),
        ("parse_tool_name", (tool,)),
    ]:
        got = outcome(getattr(compiled, fn), *args)
        assert got == outcome(getattr(pure, fn), *args), (fn, args)
        if got[0] == "ok" and isinstance(got[1], str):
            assert type(got[1]) is str


# --- LRU ------------------------------------------------------------------------------------

keys = st.one_of(st.integers(-3, 6), st.sampled_from(["a", "b", (1, 2), 2.0, True, None]))
lru_ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, st.integers()),
        st.tuples(st.just("get"), keys),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("delete_where"), st.integers(0, 3)),
        st.tuples(st.just("contains"), keys),
        st.tuples(st.just("clear")),
        st.tuples(st.just("bad"), st.just([])),  # an unhashable key
    ),
    max_size=40,
)


def run_lru(mod: ModuleType, maxsize: int, ops: list[tuple[Any, ...]]) -> list[Any]:
    c = mod.LruCache(maxsize)
    out: list[Any] = []
    for op, *args in ops:
        if op == "put":
            out.append(outcome(c.put, *args))
        elif op == "get":
            out.append(outcome(c.get, args[0], "missing"))
        elif op == "delete":
            out.append(outcome(c.delete, args[0]))
        elif op == "delete_where":
            out.append(outcome(c.delete_where, lambda k, m=args[0]: hash(k) % 4 == m))
        elif op == "contains":
            out.append(outcome(c.__contains__, args[0]))
        elif op == "clear":
            out.append(outcome(c.clear))
        else:
            out.append((outcome(c.get, args[0]), outcome(c.put, args[0], 1)))
        out.append(("state", c.keys(), len(c), repr(c)))
    return out


@FUZZ
@given(maxsize=st.integers(0, 5), ops=lru_ops)
def test_lru_differential(
    compiled: ModuleType, pure: ModuleType, maxsize: int, ops: list[tuple[Any, ...]]
) -> None:
    assert run_lru(compiled, maxsize, ops) == run_lru(pure, maxsize, ops)
