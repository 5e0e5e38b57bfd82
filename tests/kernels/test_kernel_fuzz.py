"""Differential fuzzing: the compiled kernels and the pure twin, fed the same random input,
give the same frames, events, errors and state (issue 22, item 15).

Every kernel that reads server bytes or server-chosen strings is driven through the same
random operations in both builds, and every observable is compared after each step:

- ``NdjsonSplitter``: ``feed``/``flush`` and ``read_into`` + ``route`` over a pipe, with
  ``buffered``; ``MessageTooLarge`` items compare by all their arguments;
- ``SseParser``: ``feed``, with ``last_event_id``, ``retry`` and ``buffered``;
- ``ResponseIdScanner``: ``response_id``, ``likely_response_id``, ``request_id`` per chunk;
- ``plain_shape`` over random JSON-like values; the name kernels over random text and
  non-strings; ``LruCache`` over random operation sequences;
- ``NdjsonSplitter.lead`` (each way it ends: ``stop()``, the owner's flags, an exception
  out of ``on_message``, end of stream, a past deadline; caps and deadlines of 0, < 0, NaN
  and inf); ``read_watching`` and ``woke`` over a stdout pipe and three watched pipes
  (written, drained, hung up); ``write_nowait`` into a pipe that fills and whose reader
  goes; ``Gate`` (opened at once, or while a reader routes with ``defer_wakes``),
  ``open_deferred`` and ``HeldLock`` (plain and reentrant locks, every kind of timeout);
  ``encode_message`` and ``decode_message`` of what it wrote (issue 36). Every public
  kernel is driven by one of these.

``make test`` runs a modest number of examples. ``make fuzz`` runs it longer against an
AddressSanitizer/UBSan build of the extension: ``MCP_LITE_FUZZ_EXT`` names that ``.so``
(loaded instead of ``mcp_lite/_speedups``), ``MCP_LITE_FUZZ_EXAMPLES`` the examples per test.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
import threading
import time
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


# --- NdjsonSplitter.lead --------------------------------------------------------------------

waits = st.sampled_from([0.0, -1.0, 0.01, 0.5, math.inf, math.nan])


class Owner:
    """What lead() reads of the transport: its two flags."""

    def __init__(self) -> None:
        self._reader_wanted = False
        self._closing = False


def run_lead(
    mod: ModuleType, limit: int, chunks: list[bytes], ending: str, at: int, cap: float, far: bool
) -> list[Any]:
    """Write the chunks to a pipe, then lead until ``ending`` at the ``at``-th frame routed:
    ``stop`` (stop() turns true), ``wanted``/``closing`` (on_message sets the owner's flag),
    ``raise`` (on_message raises), ``eof`` (the writer was closed first) or ``late`` (the
    deadline has passed). What was routed, how lead ended, and what a later read finds."""
    s = mod.NdjsonSplitter(limit)
    owner = Owner()
    got: list[Any] = []

    def on_message(frame: Any) -> None:
        got.append(plain(frame))
        if len(got) == at:
            if ending == "wanted":
                owner._reader_wanted = True
            elif ending == "closing":
                owner._closing = True
            elif ending == "raise":
                raise RuntimeError(f"frame {at}")

    r, w = os.pipe()
    os.set_blocking(r, False)
    out: list[Any] = []
    try:
        for chunk in chunks:
            if chunk:
                os.write(w, chunk)
        if ending == "eof":
            os.close(w)
            w = -1
        deadline = time.monotonic() + (-1.0 if ending == "late" else 30.0)
        if far and ending != "late":
            deadline = math.inf  # (then each wait is the cap itself, inf included)
        stop = lambda: ending == "stop" and len(got) >= at  # noqa: E731
        out.append(outcome(s.lead, r, stop, deadline, on_message, owner, cap))
        out.append(("routed", list(got), s.buffered, s.woke))
        if w >= 0:
            os.close(w)
            w = -1
        out.append(outcome(s.read_into, r, 0.0))  # what lead left: the rest, then the end
        later: list[Any] = []
        out.append((outcome(s.route, later.append), plain(later)))
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    return out


@FUZZ
@given(
    data=st.data(),
    stream=ndjson_streams,
    limit=limits,
    ending=st.sampled_from(["stop", "wanted", "closing", "raise", "eof", "late"]),
    cap=waits,
    far=st.booleans(),
)
def test_lead_differential(
    compiled: ModuleType,
    pure: ModuleType,
    data: st.DataObject,
    stream: bytes,
    limit: int,
    ending: str,
    cap: float,
    far: bool,
) -> None:
    chunks = data.draw(chunked(stream))
    # Every ending but eof and late needs its frame to come (the whole stream is one read):
    # else the lead would wait for the deadline.
    frames = len(pure.NdjsonSplitter(limit).feed(stream))
    at = data.draw(st.integers(1, max(frames, 1)))
    if frames == 0 and ending not in ("eof", "late"):
        ending = "eof"
    got = run_lead(compiled, limit, chunks, ending, at, cap, far)
    assert got == run_lead(pure, limit, chunks, ending, at, cap, far)
    assert got[0][0] == ("raise" if ending == "raise" else "ok"), got


# --- NdjsonSplitter.read_watching and woke --------------------------------------------------

watch_ops = st.lists(
    st.one_of(
        st.tuples(st.just("out"), ndjson_streams),
        st.tuples(st.just("poke"), st.integers(0, 2)),
        st.tuples(st.just("drain"), st.integers(0, 2)),
        st.tuples(st.just("hangup"), st.integers(0, 2)),
        st.tuples(st.just("end")),
        st.tuples(st.just("watch"), st.booleans(), waits, st.integers(0, 7)),
        st.tuples(st.just("read"), waits),
    ),
    max_size=24,
)


def run_watching(mod: ModuleType, limit: int, ops: list[tuple[Any, ...]]) -> list[Any]:
    """The ops over a stdout pipe and three watched pipes. A wait that nothing would end
    (nothing ready) is made short: both builds then report nothing after it."""
    s = mod.NdjsonSplitter(limit)
    pipes = [os.pipe() for _ in range(4)]
    for r, _ in pipes:
        os.set_blocking(r, False)
    (out_r, out_w), watched = pipes[0], pipes[1:]
    writers: list[int] = [w for _, w in pipes]
    pending = [False] * 4  # unread bytes, per pipe (stdout: read once, all of it)
    out: list[Any] = [("woke", s.woke)]
    try:
        for op, *args in ops:
            if op == "out" and writers[0] >= 0 and args[0]:
                os.write(out_w, args[0])
                pending[0] = True
            elif op == "poke" and writers[args[0] + 1] >= 0:
                os.write(writers[args[0] + 1], b"x")
                pending[args[0] + 1] = True
            elif op == "drain":
                try:
                    while os.read(watched[args[0]][0], 4096):
                        pass
                except BlockingIOError:
                    pass
                pending[args[0] + 1] = False
            elif op in ("hangup", "end"):
                index = 0 if op == "end" else args[0] + 1
                if writers[index] >= 0:
                    os.close(writers[index])
                    writers[index] = -1
            elif op in ("watch", "read"):
                read_out = op == "read" or args[0]
                mask = 0 if op == "read" else args[2]
                wait = args[-1] if op == "read" else args[1]
                ready = [pending[i] or writers[i] < 0 for i in range(4)]
                if not (read_out and ready[0]) and not any(
                    ready[i + 1] for i in range(3) if mask & (1 << i)
                ):
                    wait = min(wait, 0.01) if wait == wait else wait  # (NaN: no wait)
                if op == "read":
                    out.append(outcome(s.read_into, out_r, wait))
                else:
                    a, b, c = (watched[i][0] if mask & (1 << i) else -1 for i in range(3))
                    out.append(outcome(s.read_watching, out_r if read_out else -1, wait, a, b, c))
                    out.append(("woke", s.woke))
                if read_out and ready[0]:
                    pending[0] = False
                routed: list[Any] = []
                out.append((outcome(s.route, routed.append), plain(routed), s.buffered))
    finally:
        for r, _ in pipes:
            os.close(r)
        for w in writers:
            if w >= 0:
                os.close(w)
    return out


@FUZZ
@given(limit=limits, ops=watch_ops)
def test_read_watching_differential(
    compiled: ModuleType, pure: ModuleType, limit: int, ops: list[tuple[Any, ...]]
) -> None:
    got = run_watching(compiled, limit, ops)
    assert got == run_watching(pure, limit, ops)
    assert not any(isinstance(step, tuple) and step[:1] == ("raise",) for step in got), got


# --- write_nowait ---------------------------------------------------------------------------

write_ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("write"),
            st.integers(0, 20000),
            st.sampled_from(["bytes", "bytearray", "memoryview", "str", "int"]),
        ),
        st.tuples(st.just("read"), st.integers(1, 20000)),
        st.tuples(st.just("close_reader")),
    ),
    max_size=16,
)


def run_writes(mod: ModuleType, ops: list[tuple[Any, ...]]) -> list[Any]:
    r, w = os.pipe()
    os.set_blocking(w, False)
    os.set_blocking(r, False)
    out: list[Any] = []
    try:
        for op, *args in ops:
            if op == "write":
                size, kind = args
                data: Any = {
                    "bytes": b"x" * size,
                    "bytearray": bytearray(b"y" * size),
                    "memoryview": memoryview(b"z" * (size + 3))[3:],
                    "str": "s" * size,
                    "int": size,
                }[kind]
                out.append(outcome(mod.write_nowait, w, data))
            elif op == "read" and r >= 0:
                try:
                    out.append(("read", len(os.read(r, args[0]))))
                except BlockingIOError:
                    out.append(("read", None))
            elif op == "close_reader" and r >= 0:
                os.close(r)
                r = -1
    finally:
        os.close(w)
        if r >= 0:
            os.close(r)
    return out


@FUZZ
@given(ops=write_ops)
def test_write_nowait_differential(
    compiled: ModuleType, pure: ModuleType, ops: list[tuple[Any, ...]]
) -> None:
    assert run_writes(compiled, ops) == run_writes(pure, ops)


# --- Gate, open_deferred, HeldLock (one thread: what each call answers) ------------------------

gate_ops = st.lists(
    st.one_of(
        st.tuples(st.just("open"), st.integers(0, 2)),
        st.tuples(st.just("is_open"), st.integers(0, 2)),
        st.tuples(st.just("wait"), st.integers(0, 2), waits),
        st.tuples(st.just("routed_open"), st.lists(st.integers(0, 2), max_size=3)),
        st.tuples(st.just("open_deferred")),
    ),
    max_size=20,
)


def run_gates(mod: ModuleType, ops: list[tuple[Any, ...]]) -> list[Any]:
    """Three gates; a wait on a closed gate is made short (nothing would open it), and so
    is an unbounded one while wake-ups may be queued: a gate opened while a reader routes
    is open, but its wake-up waits for the reader (``open_deferred``), which in this one
    thread never comes (the compiled wait would block for ever, and a hang defeats the
    per-test timeout: hypothesis runs the example again to shrink it)."""
    gates = [mod.Gate() for _ in range(3)]
    out: list[Any] = []
    queued = False
    for op, *args in ops:
        if op == "open":
            out.append(outcome(gates[args[0]].open))
        elif op == "is_open":
            out.append(outcome(gates[args[0]].is_open))
        elif op == "wait":
            gate, wait = gates[args[0]], args[1]
            if not gate.is_open() or (queued and not 0.0 <= wait < math.inf):
                wait = 0.01
            out.append(outcome(gate.wait, wait))
        elif op == "routed_open":  # opened while a reader routes (deferred in the kernel)
            s = mod.NdjsonSplitter()
            r, w = os.pipe()
            try:
                os.set_blocking(r, False)
                os.write(w, b"{}\n" * len(args[0]))
                s.read_into(r, 0.0)
                which = iter(args[0])
                out.append(outcome(s.route, lambda frame, it=which: gates[next(it)].open(), True))
                queued = True
            finally:
                os.close(r)
                os.close(w)
        else:
            out.append(outcome(mod.open_deferred))
            queued = False
        out.append(("state", [gate.is_open() for gate in gates]))
    mod.open_deferred()  # (nothing queued is left for the next example)
    out.append([gate.wait(0.0) if gate.is_open() else None for gate in gates])
    return out


@FUZZ
@given(ops=gate_ops)
def test_gate_differential(
    compiled: ModuleType, pure: ModuleType, ops: list[tuple[Any, ...]]
) -> None:
    assert run_gates(compiled, ops) == run_gates(pure, ops)


held_ops = st.lists(
    st.one_of(
        st.tuples(st.just("take")),
        st.tuples(st.just("give")),
        st.tuples(
            st.just("held"),
            st.sampled_from([-1.0, 0.0, 0.001, 1e300, math.inf, math.nan, -math.inf]),
            st.booleans(),
        ),
    ),
    max_size=12,
)


def run_held(mod: ModuleType, reentrant: bool, ops: list[tuple[Any, ...]]) -> list[Any]:
    """``HeldLock`` over a lock this thread takes and gives back; a wait that nothing would
    end (a plain lock already held) is made short."""
    lock: Any = threading.RLock() if reentrant else threading.Lock()
    depth = 0
    out: list[Any] = []

    def block(timeout: float, fail: bool) -> Any:
        with mod.HeldLock(lock, timeout) as got:
            inside = (got, _held(lock, reentrant, depth + bool(got)))
            if fail:
                raise KeyError("in the block")
        return inside

    for op, *args in ops:
        if op == "take" and (reentrant or not depth):
            lock.acquire()
            depth += 1
        elif op == "give" and depth:
            lock.release()
            depth -= 1
        elif op == "held":
            timeout, fail = args
            if depth and not reentrant and not timeout < 0:
                timeout = 0.001  # (NaN included: the same answer, an error, soon)
            out.append(outcome(block, timeout, fail))
        out.append(("state", _held(lock, reentrant, depth)))
    for _ in range(depth):
        lock.release()
    return out


def _held(lock: Any, reentrant: bool, depth: int) -> Any:
    return depth if reentrant else lock.locked()


@FUZZ
@given(reentrant=st.booleans(), ops=held_ops)
def test_held_lock_differential(
    compiled: ModuleType, pure: ModuleType, reentrant: bool, ops: list[tuple[Any, ...]]
) -> None:
    assert run_held(compiled, reentrant, ops) == run_held(pure, reentrant, ops)


# --- encode_message / decode_message --------------------------------------------------------


@FUZZ
@given(raw=st.one_of(values, st.dictionaries(st.text(max_size=4), values, max_size=4)))
def test_encode_decode_differential(compiled: ModuleType, pure: ModuleType, raw: Any) -> None:
    encoded = outcome(compiled.encode_message, raw)
    assert encoded == outcome(pure.encode_message, raw)
    if encoded[0] == "ok":
        line = encoded[1]
        assert outcome(compiled.decode_message, line) == outcome(pure.decode_message, line)
        assert outcome(compiled.decode_message, line[:-1]) == outcome(
            pure.decode_message, line[:-1]
        )


# --- SseEvent -------------------------------------------------------------------------------


@FUZZ
@given(
    fields=st.lists(
        st.one_of(st.text(max_size=6), st.integers(), st.none()), min_size=3, max_size=3
    ),
    other=st.lists(st.text(max_size=2), min_size=3, max_size=3),
)
def test_sse_event_differential(
    compiled: ModuleType, pure: ModuleType, fields: list[Any], other: list[str]
) -> None:
    def run(mod: ModuleType) -> list[Any]:
        made = outcome(mod.SseEvent, *fields)
        if made[0] != "ok":
            return [made]
        event, twin = made[1], mod.SseEvent(*other)
        return [
            plain(event),
            repr(event),
            event == twin,
            event != twin,
            event == mod.SseEvent(*fields),
            event == tuple(fields),
            outcome(hash, event) == outcome(hash, mod.SseEvent(*fields)),
        ]

    assert run(compiled) == run(pure)
