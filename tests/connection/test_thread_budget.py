"""Threads per connection (DESIGN §3, issue 24 item 5), counted by name.

Twenty clients to stdio peers and to an HTTP peer (``tests/peers/slow_server.py``, an
``mcp_lite.Server``; over HTTP in a child process, so its threads are not counted) each
connect, list tools, make a call, a cancelled call and a call that times out; once settled
(a bounded poll), each connection keeps at most its budget of threads, and no thread of the
process-wide timer is left. While a deadline is live the timer is exactly one thread.
"""

from __future__ import annotations

import collections
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite import RequestTimeout, _timer

PEERS = Path(__file__).resolve().parents[1] / "peers"
SERVER = str(PEERS / "slow_server.py")
N = 20
# A settled stdio connection keeps one thread: it reads stdout and stderr and sees the exit.
STDIO_THREADS = 1
HTTP_WITH_STREAM = 1  # its GET stream reader
HTTP_WITHOUT_STREAM = 0  # 405 on GET, or the 2026-07-28 era
SETTLE = 8.0  # idle threads end after about a second; a loaded machine gets more
_PER_CONNECTION = re.compile(r"mcp-lite-[\w-]+\[(?P<name>.*)\](?:_\d+)?$")


def _by_connection() -> dict[str, list[str]]:
    found: dict[str, list[str]] = collections.defaultdict(list)
    for thread in threading.enumerate():
        match = _PER_CONNECTION.match(thread.name)
        if match is not None and thread.is_alive():
            found[match["name"]].append(thread.name)
    return found


def _timer_threads() -> int:
    return sum(t.name == _timer.thread_name and t.is_alive() for t in threading.enumerate())


def _settle(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + SETTLE
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _quiet_timer() -> None:
    """These tests count the process timer's entries and its thread: each starts from none
    (a test that ran before it in the same worker may still be winding down its calls)."""
    _settle(lambda: _timer.live() == 0 and _timer_threads() == 0)
    assert _timer.live() == 0, "an earlier test left entries on the process timer"


def _exercise(client: mcp_lite.Client) -> None:
    """connect (done) + list_tools + a call + a cancelled call + a call that times out."""
    assert {t.name for t in client.list_tools()} >= {"echo", "wait"}
    assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    cancelled = client.submit_tool("wait", {"seconds": 20})
    cancelled.cancel()
    with pytest.raises(CancelledError):
        cancelled.result(5)
    # (0.1 s: any timeout short of the 20 s wait times out; N clients wait it out in turn)
    late = client.submit_tool("wait", {"seconds": 20}, timeout=0.1)
    with pytest.raises(RequestTimeout):
        late.result(10)
    with pytest.raises(RequestTimeout):
        client.call_tool("wait", {"seconds": 20}, timeout=0.1)


def _check(names: list[str], budget: int) -> None:
    _settle(
        lambda: (
            all(len(_by_connection().get(n, [])) <= budget for n in names) and _timer_threads() == 0
        )
    )
    threads = _by_connection()
    over = {n: threads[n] for n in names if len(threads.get(n, [])) > budget}
    assert not over, f"more than {budget} thread(s) per connection: {over}"
    assert _timer_threads() == 0, "the timer thread outlived every deadline"


def test_stdio_connections(tmp_path: Path) -> None:
    names = [f"stdio-{i}" for i in range(N)]
    clients = [
        mcp_lite.connect(
            [sys.executable, SERVER, str(tmp_path / f"{name}.jsonl")], name=name, timeout=30
        )
        for name in names
    ]
    try:
        for client in clients:
            _exercise(client)
        _check(names, STDIO_THREADS)
        per = [len(_by_connection().get(n, [])) for n in names]
        print(f"threads per stdio connection, settled: {per}")
    finally:
        for client in clients:
            client.close()


@pytest.fixture(params=[False, True], ids=["stream", "no-stream"])
def http_peer(
    request: pytest.FixtureRequest,
    start_http_peer: Callable[..., object],
    free_port: int,
    tmp_path: Path,
) -> Iterator[tuple[str, bool]]:
    stateless = bool(request.param)
    code = (
        f"import sys; sys.path.insert(0, {str(PEERS)!r}); sys.argv = ['slow', sys.argv[1]]; "
        f"import slow_server; slow_server.server.run_http(port={free_port}, "
        f"stateless={stateless!r})"
    )
    peer = start_http_peer([sys.executable, "-c", code, str(tmp_path / "http.jsonl")], free_port)
    yield f"{peer.url}/mcp", stateless  # type: ignore[attr-defined]


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_http_connections(http_peer: tuple[str, bool], era: str) -> None:
    url, stateless = http_peer
    names = [f"http-{i}" for i in range(N)]
    clients = [mcp_lite.connect(url, name=name, protocol_version=era, timeout=30) for name in names]
    try:
        for client in clients:
            _exercise(client)
        streams = not stateless and era == "2025-11-25"
        _check(names, HTTP_WITH_STREAM if streams else HTTP_WITHOUT_STREAM)
        print(f"HTTP ({era}, stream={streams}) settled: {dict(_by_connection())}")
    finally:
        for client in clients:
            client.close()


def test_one_timer_thread_while_deadlines_are_live(tmp_path: Path) -> None:
    clients = [
        mcp_lite.connect(
            [sys.executable, SERVER, str(tmp_path / f"t{i}.jsonl")], name=f"timer-{i}", timeout=30
        )
        for i in range(3)
    ]
    try:
        futures = [c.submit_tool("wait", {"seconds": 20}, timeout=2.0) for c in clients]
        assert _timer_threads() == 1, [t.name for t in threading.enumerate()]
        for future in futures:
            with pytest.raises(RequestTimeout):
                future.result(10)
        _settle(lambda: _timer_threads() == 0)
        assert _timer_threads() == 0
        assert _timer.live() == 0
    finally:
        for client in clients:
            client.close()


def test_timer_callbacks_in_order_and_a_raising_one_is_survived() -> None:
    seen: list[int] = []
    done = threading.Event()
    now = time.monotonic()

    def boom() -> None:
        raise RuntimeError("a broken callback")

    _timer.schedule(now + 0.05, boom)
    _timer.schedule(now + 0.2, lambda: (seen.append(2), done.set()))
    _timer.schedule(now + 0.1, lambda: seen.append(1))
    dropped = _timer.schedule(now + 0.15, lambda: seen.append(99))
    dropped.cancel()
    assert done.wait(5)
    assert seen == [1, 2]


def test_cancelled_entries_are_compacted() -> None:
    far = time.monotonic() + 3600
    handles = [_timer.schedule(far, lambda: None) for _ in range(1000)]
    for handle in handles:
        handle.cancel()
    assert _timer.live() == 0
    # A cancel takes no lock and wakes nobody: the thread drops them when it next looks.
    _settle(lambda: len(_timer._timer._heap) < 32)
    assert len(_timer._timer._heap) < 32  # dropped, not 1000 dead entries
    _settle(lambda: _timer_threads() == 0)
    assert _timer_threads() == 0


def test_a_forked_child_has_a_working_timer(
    tmp_path: Path, in_fork: Callable[[Callable[[], str]], str]
) -> None:
    # A live deadline in the parent: its timer thread exists, and does not in the child.
    parent = _timer.schedule(time.monotonic() + 3600, lambda: None)
    try:

        def work() -> str:
            with mcp_lite.connect(
                [sys.executable, SERVER, str(tmp_path / "child.jsonl")], timeout=30
            ) as client:
                start = time.monotonic()
                future = client.submit_tool("wait", {"seconds": 20}, timeout=1.0)
                try:
                    future.result(10)
                except RequestTimeout:
                    return f"timeout {time.monotonic() - start:.2f}"
                return "no timeout"

        report = in_fork(work)
    finally:
        parent.cancel()
    kind, _, took = report.partition(" ")
    assert kind == "timeout", report
    assert float(took) < 1.0 + 1.0  # its timeout plus a slack under a second
