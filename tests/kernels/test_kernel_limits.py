"""Server-reachable edge values of the kernels (issue 22, item 14), on both builds.

- an SSE ``retry:`` too long to be a usable number is ignored (as a non-digit one is) and the
  rest of the chunk is still parsed (it used to raise ``ValueError`` out of ``feed``);
- the id scanner takes only JSON's whitespace (space, tab, CR, LF) before the top-level
  ``{``: ``\\v`` and ``\\f`` make the message invalid, as for ``json.loads``;
- a ``max_size`` near ``sys.maxsize`` (a "no limit") is a limit, not an overflow that turned
  every split NDJSON line and every SSE ``event``/``id`` line into ``MessageTooLarge``;
- ``Gate.wait`` with an infinite (or huge, or NaN) timeout blocks until opened, and a
  ``call_tool(..., timeout=inf)`` waits without spinning a core.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

import mcp_lite
from mcp_lite.errors import MessageTooLarge

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX pipes")

SLOW_SERVER = str(Path(__file__).parent.parent / "peers" / "slow_server.py")

# --- SSE retry ---------------------------------------------------------------------------


@pytest.mark.parametrize("digits", [19, 4301, 10000])
def test_unusable_retry_is_ignored_and_parsing_goes_on(speedups: ModuleType, digits: int) -> None:
    p = speedups.SseParser()
    out = p.feed(b"retry: 250\nretry: " + b"9" * digits + b"\ndata: after\n\n")
    assert [e.data for e in out] == ["after"]
    assert p.retry == 250


def test_retry_digits_split_across_chunks(speedups: ModuleType) -> None:
    p = speedups.SseParser()
    assert p.feed(b"retry: " + b"7" * 3000) == []
    assert [e.data for e in p.feed(b"7" * 3000 + b"\ndata: x\n\n")] == ["x"]
    assert p.retry is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [(b"0", 0), (b"000000000000000000000001500", 1500), (b"9" * 18, int("9" * 18))],
)
def test_usable_retry_values(speedups: ModuleType, value: bytes, expected: int) -> None:
    p = speedups.SseParser()
    p.feed(b"retry: " + value + b"\n")
    assert p.retry == expected


# --- id scanner whitespace --------------------------------------------------------------------


@pytest.mark.parametrize("lead", [b"\x0b", b"\x0c", b" \x0c", b"\x1c", b"\xa0"])
def test_scanner_takes_only_json_whitespace(speedups: ModuleType, lead: bytes) -> None:
    message = lead + b'{"jsonrpc": "2.0", "id": 3, "result": {}}'
    with pytest.raises(ValueError):
        json.loads(message)
    assert speedups.scan_response_id(message) is None
    scanner = speedups.ResponseIdScanner()
    scanner.feed(message[:1])
    scanner.feed(message[1:])
    assert scanner.response_id is None and scanner.likely_response_id is None


@pytest.mark.parametrize("lead", [b"", b" \t\r\n"])
def test_scanner_json_whitespace_is_fine(speedups: ModuleType, lead: bytes) -> None:
    message = lead + b'{"jsonrpc": "2.0", "id": 3, "result": {}}'
    assert json.loads(message)["id"] == 3
    assert speedups.scan_response_id(message) == 3


def test_oversized_frame_with_form_feed_is_not_attributed(speedups: ModuleType) -> None:
    [item] = speedups.NdjsonSplitter(16).feed(b'\x0c{"id": 3, "result": "' + b"x" * 40 + b'"}\n')
    assert isinstance(item, MessageTooLarge) and item.response_id is None


# --- huge max_size --------------------------------------------------------------------------

HUGE = [sys.maxsize, sys.maxsize - 1, sys.maxsize - 6, 2**62]


@pytest.mark.parametrize("limit", HUGE)
def test_ndjson_huge_limit_split_lines(speedups: ModuleType, limit: int) -> None:
    s = speedups.NdjsonSplitter(limit)
    assert s.feed(b'{"a"') == []
    assert s.feed(b": 1}\r") == []
    assert s.feed(b'\n{"b": 2}\n{"c') == [b'{"a": 1}', b'{"b": 2}']
    assert s.buffered == 3
    assert s.flush() == [b'{"c']


@pytest.mark.parametrize("limit", HUGE)
def test_sse_huge_limit_event_and_id_lines(speedups: ModuleType, limit: int) -> None:
    p = speedups.SseParser(limit)
    assert p.feed(b"event: upd") == []
    out = p.feed(b"ate\nid: 4") + p.feed(b"2\ndata: one\nda") + p.feed(b"ta: two\n\n")
    assert [(e.event, e.data, e.id) for e in out] == [("update", "one\ntwo", "42")]
    assert p.last_event_id == "42"


# --- infinite waits ------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [math.inf, 1e300, 2.0**63, math.nan, -1.0])
def test_gate_wait_without_limit_blocks_until_opened(speedups: ModuleType, timeout: float) -> None:
    gate = speedups.Gate()
    results: list[object] = []

    def wait() -> None:
        try:
            results.append(gate.wait(timeout))
        except BaseException as exc:  # reported below
            results.append(exc)

    thread = threading.Thread(target=wait)
    cpu, wall = time.process_time(), time.monotonic()
    thread.start()
    thread.join(0.5)
    alive = thread.is_alive()
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    gate.open()
    thread.join(5)
    assert alive, f"wait({timeout}) returned at once on a closed gate: {results}"
    assert results == [True]
    assert cpu < 0.5 * wall, f"the wait used {cpu:.2f} s of CPU in {wall:.2f} s"


def test_call_tool_with_infinite_timeout_does_not_spin(tmp_path: Path) -> None:
    """Three calls answered after ~0.5 s, each with timeout=inf, through a stdio server;
    the client process (not the server) must stay mostly idle meanwhile (a CPU bound, no
    timing assertion)."""
    record = tmp_path / "record.jsonl"
    record.touch()
    with mcp_lite.connect(
        [sys.executable, SLOW_SERVER, str(record)], timeout=30, max_message_size=sys.maxsize
    ) as client:
        assert client.call_tool("echo", {"text": "warm"}).text == "warm"
        results: list[object] = []

        def call() -> None:
            try:
                results.append(client.call_tool("wait", {"seconds": 0.5}, timeout=math.inf))
            except BaseException as exc:  # reported below
                results.append(exc)

        threads = [threading.Thread(target=call) for _ in range(3)]
        cpu, wall = time.process_time(), time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    assert len(results) == 3 and all(not isinstance(r, BaseException) for r in results), results
    assert wall >= 0.4  # the calls did wait for the server
    # a spinning client used 60-130 % (less on a loaded machine), a blocked one under 1 %
    assert cpu < 0.25 * wall, f"the client used {cpu:.2f} s of CPU in {wall:.2f} s of waiting"


@pytest.mark.parametrize("timeout", [math.inf, 1e300])
def test_held_lock_without_limit_waits_for_the_lock(speedups: ModuleType, timeout: float) -> None:
    """It raised OverflowError in both builds (the stdio transport's write path with an
    infinite deadline)."""
    lock = threading.Lock()
    with speedups.HeldLock(lock, timeout) as got:
        assert got and lock.locked()
    assert not lock.locked()
    lock.acquire()
    results: list[object] = []

    def take() -> None:
        with speedups.HeldLock(lock, timeout) as got:
            results.append(got)

    thread = threading.Thread(target=take)
    thread.start()
    thread.join(0.3)
    assert thread.is_alive() and results == []
    lock.release()
    thread.join(5)
    assert results == [True]
