"""A stdio connection runs one thread (issue 24, item 5): it reads stdout and stderr and
notices the process's exit.

Counted by name (``mcp-lite-stdio...``) in ``threading.enumerate()``: after connect, while 8
threads call, while one caller leads (reads its own answer, compiled build), and while the
server writes a flood of stderr; every answer is right and the close error quotes the
stderr tail. The exit is noticed by that thread: a server that exits by itself fails the
pending call with its exit code (not a timeout), one that closes stdout and keeps running
fails it as "closed its output", and one whose grandchild keeps stdout open after it exited
fails it too (through the pidfd, or without one through the thread's waitpid check).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite._deadline import Deadline
from mcp_lite.errors import ConnectionClosed
from mcp_lite.transports import stdio
from mcp_lite.transports.base import Outgoing

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Windows keeps two threads")

REPO = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, str(REPO / "tests" / "peers" / "talker_server.py")]
CALL_TIMEOUT = 10.0  # far above how long any of these takes: a timeout means a miss


def stdio_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-lite-stdio")]


@pytest.fixture(params=["pidfd", "no-pidfd"])
def pidfd(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    """With the process's pidfd, and as where there is none (the fallback)."""
    if request.param == "no-pidfd":
        monkeypatch.setattr(stdio, "_open_pidfd", lambda pid: -1)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no os.pidfd_open here")
    yield request.param == "pidfd"


class Sampler:
    """Counts the stdio threads on a thread of its own, as often as it can."""

    def __init__(self, transport: stdio.StdioTransport | None = None) -> None:
        self.counts: set[int] = set()
        self.led = False  # a caller was seen leading meanwhile
        self._transport = transport
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.counts.add(len(stdio_threads()))
            if self._transport is not None and self._transport._leading:
                self.led = True
            time.sleep(0.001)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def transport_of(client: mcp_lite.Client) -> stdio.StdioTransport:
    transport = client._conn.transport  # type: ignore[union-attr]
    assert isinstance(transport, stdio.StdioTransport)
    return transport


def test_one_thread_after_connect_during_calls_and_while_a_caller_leads(
    no_leftover_processes: object,
) -> None:
    with mcp_lite.connect(SERVER, timeout=CALL_TIMEOUT) as client:
        transport = transport_of(client)
        assert stdio_threads() == [f"mcp-lite-stdio[{transport.name}]"]
        with Sampler(), ThreadPoolExecutor(8) as pool:
            texts = list(
                pool.map(lambda i: client.call_tool("echo", {"text": f"t{i}"}).text, range(400))
            )
        assert texts == [f"t{i}" for i in range(400)]
        with Sampler(transport) as sampler:
            assert client.call_tool("sleep", {"seconds": 0.5}).text == "slept"
            for i in range(200):
                assert client.call_tool("echo", {"text": str(i)}).text == str(i)
        assert sampler.counts == {1}
        if transport.can_lead:  # (compiled build: the lone caller read its own answer)
            assert sampler.led
    assert stdio_threads() == []


def test_a_stderr_flood_while_answering_loses_no_answer_and_the_tail_is_kept(
    no_leftover_processes: object,
) -> None:
    with mcp_lite.connect(SERVER, timeout=CALL_TIMEOUT) as client:
        transport = transport_of(client)
        with Sampler(transport) as sampler:
            for i in range(100):  # a lone caller (it leads): 50 KB of stderr per answer
                assert client.call_tool("echo", {"text": str(i), "noise": 500}).text == str(i)
            with ThreadPoolExecutor(4) as pool:  # several callers: the thread reads
                texts = list(
                    pool.map(
                        lambda i: client.call_tool("echo", {"text": f"p{i}", "noise": 200}).text,
                        range(200),
                    )
                )
            assert texts == [f"p{i}" for i in range(200)]
        assert sampler.counts == {1}
        # stderr and stdout are two pipes: the answer may be read before the last of the
        # noise, which the thread drains next
        settle = time.monotonic() + CALL_TIMEOUT
        while "noise 000199" not in transport.stderr_tail() and time.monotonic() < settle:
            time.sleep(0.05)
        assert "noise 000199" in transport.stderr_tail()
        with pytest.raises(ConnectionClosed) as caught:
            client.call_tool("exit", {"code": 4})
    message = str(caught.value)
    assert "exit code 4" in message and "goodbye: exiting with 4" in message


def test_a_server_that_exits_fails_the_pending_call_with_its_exit_code(
    pidfd: bool, no_leftover_processes: object
) -> None:
    with mcp_lite.connect(SERVER, timeout=CALL_TIMEOUT) as client:
        transport = transport_of(client)
        assert (transport._fds[0] >= 0) == pidfd
        started = time.monotonic()
        with pytest.raises(ConnectionClosed) as caught:  # (a miss would be a RequestTimeout)
            client.call_tool("exit", {"code": 9})
        assert time.monotonic() - started < CALL_TIMEOUT
        assert transport.returncode == 9
        assert stdio_threads() == [] or stdio_threads() == [f"mcp-lite-stdio[{transport.name}]"]
    assert "exit code 9" in str(caught.value)
    assert "goodbye: exiting with 9" in str(caught.value)


def test_a_server_that_closes_stdout_but_keeps_running(
    pidfd: bool, no_leftover_processes: object
) -> None:
    with mcp_lite.connect(SERVER, timeout=CALL_TIMEOUT) as client:
        transport = transport_of(client)
        started = time.monotonic()
        with pytest.raises(ConnectionClosed) as caught:
            client.call_tool("close-stdout", {})
        assert time.monotonic() - started < CALL_TIMEOUT
        assert "closed its output" in str(caught.value)
        assert transport.returncode is None  # still running: close() stops it
        assert len(stdio_threads()) == 1  # still draining stderr and watching the exit
    assert transport.returncode is not None
    assert stdio_threads() == []


def test_a_server_that_exits_while_its_grandchild_holds_stdout(
    pidfd: bool, tmp_path: Path, no_leftover_processes: object, pid_gone: Callable[..., bool]
) -> None:
    record = tmp_path / "grandchild.pid"
    with mcp_lite.connect(SERVER, timeout=CALL_TIMEOUT) as client:
        assert (transport_of(client)._fds[0] >= 0) == pidfd
        started = time.monotonic()
        with pytest.raises(ConnectionClosed) as caught:
            client.call_tool("exit-held", {"code": 5, "record": str(record)})
        assert time.monotonic() - started < CALL_TIMEOUT
        # The exit was seen though the grandchild held stdout; what the server left in its
        # group is killed at once, before close() (issue 36: its group is then forgotten).
        grandchild = int(record.read_text())
        assert pid_gone(grandchild)
    assert "exit code 5" in str(caught.value)
    assert "goodbye: leaving a grandchild" in str(caught.value)


def test_an_exit_seen_while_another_thread_holds_the_wait_lock_is_looked_at_again(
    pidfd: bool, tmp_path: Path, no_leftover_processes: object
) -> None:
    """The pidfd fires once. If the thread's poll() then meets the process's wait lock held
    by another thread (and answers None), the thread looks again: the exit is still seen,
    though a grandchild keeps stdout open, and the pending call fails with the exit code."""
    record = tmp_path / "grandchild.pid"
    with mcp_lite.connect(SERVER, timeout=CALL_TIMEOUT) as client:
        transport = transport_of(client)
        proc = transport._proc
        assert proc is not None
        busy = proc._waitpid_lock  # type: ignore[attr-defined]

        def hold_through_the_exit() -> None:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            time.sleep(0.3)  # the thread's poll() after the pidfd fired meets the lock held
            busy.release()

        busy.acquire()
        holder = threading.Thread(target=hold_through_the_exit, daemon=True)
        holder.start()
        try:
            with pytest.raises(ConnectionClosed) as caught:
                client.call_tool("exit-held", {"code": 5, "record": str(record)})
        finally:
            holder.join(CALL_TIMEOUT)
        assert not holder.is_alive()
        os.kill(int(record.read_text()), 0)  # the grandchild still holds stdout
    assert "exit code 5" in str(caught.value)


# Writes its last words without a newline and exits before reading anything; a grandchild
# keeps stderr open a moment longer, so those words reach the thread after a write fails.
QUITTER = """
import os, sys, time
sys.stderr.write("cannot start: no config found"); sys.stderr.flush()
os.close(0)
if os.fork() == 0:
    os.close(1); time.sleep(0.1); os._exit(0)
os._exit(3)
"""


def a_ping() -> Outgoing:
    return Outgoing(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        deadline=Deadline.after(CALL_TIMEOUT),
    )


def test_a_write_to_a_server_that_already_exited_quotes_its_last_words(
    pidfd: bool, no_leftover_processes: object
) -> None:
    transport = stdio.StdioTransport([sys.executable, "-c", QUITTER], name="quitter")
    transport.start(lambda frame: None, lambda error: None)
    try:
        try:  # the server has exited (not reaped here): the write below meets a closed pipe
            os.waitid(os.P_PID, transport.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass  # the thread reaped it already
        with pytest.raises(ConnectionClosed) as caught:
            transport.send(a_ping())
    finally:
        transport.close()
    # the error is made on the writer's thread, before the connection's thread has read
    # stderr to its end: it waits for those words (bounded) instead of leaving them out
    assert caught.value.exit_code == 3
    assert "cannot start: no config found" in str(caught.value)


def test_a_write_to_an_exited_server_quotes_its_exit_code_while_its_reaping_is_busy(
    pidfd: bool, no_leftover_processes: object
) -> None:
    """Popen.poll() answers None while another thread holds the process's wait lock (as the
    connection's thread does inside its waitpid check): the writer waits for the code
    (within its last-words budget) instead of quoting a gone server without it."""
    transport = stdio.StdioTransport([sys.executable, "-c", QUITTER], name="quitter")
    transport.start(lambda frame: None, lambda error: None)
    proc = transport._proc
    assert proc is not None
    busy = proc._waitpid_lock  # type: ignore[attr-defined]
    busy.acquire()  # "another thread is inside waitpid": nobody reaps the server meanwhile
    release = threading.Timer(0.1, busy.release)
    try:
        try:
            os.waitid(os.P_PID, transport.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
        except ChildProcessError:
            pass  # the pidfd watcher reaped it already (it does not take Popen's wait lock)
        assert transport._stderr_ended.wait(CALL_TIMEOUT)
        release.start()  # the lock is free again 0.1 s from now
        with pytest.raises(ConnectionClosed) as caught:
            transport.send(a_ping())
    finally:
        if release.ident is None:  # never started: the lock is still ours to give back
            busy.release()
        else:
            release.join()
        transport.close()
    assert caught.value.exit_code == 3
    assert "exited with exit code 3" in str(caught.value)
    assert "cannot start: no config found" in str(caught.value)


# Exits with its reason on stderr, unterminated, while a child it leaves holds stderr open.
HELD_STDERR = """
import os, sys, time
sys.stderr.write("fatal: no config found"); sys.stderr.flush()
child = os.fork()
if child == 0:
    os.close(0); os.close(1); time.sleep(1.5); os._exit(0)
os.setpgid(child, child)  # a group of its own: not killed with the exited server's group
os._exit(3)
"""


def test_a_death_seen_before_stderr_ends_quotes_its_unterminated_last_line(
    pidfd: bool, no_leftover_processes: object
) -> None:
    """``dead()`` (what a caller sees before the thread reports the close) quotes the last
    line read so far, though stderr, held by a child, has not ended and it has no newline."""
    transport = stdio.StdioTransport([sys.executable, "-c", HELD_STDERR], name="held")
    transport.start(lambda frame: None, lambda error: None)
    try:
        end = time.monotonic() + 1.0  # (the child holds stderr for 1.5 s)
        while (error := transport.dead()) is None and time.monotonic() < end:
            time.sleep(0.01)
        assert error is not None, "the exit was not seen"
        assert not transport._stderr_ended.is_set(), "stderr ended: the test proves nothing"
    finally:
        transport.close()
    assert error.exit_code == 3
    assert "fatal: no config found" in str(error)


def test_the_words_written_before_the_exit_are_read_before_the_exit_is_published(
    pidfd: bool, monkeypatch: pytest.MonkeyPatch, no_leftover_processes: object
) -> None:
    """A thread that lags behind stderr (simulated: it never reads stderr as it comes)
    still reads what the server wrote before exiting, before poll() makes the exit visible
    to ``dead()`` (seen once under load: the exit quoted without its reason)."""
    handle = stdio._Watched.handle
    monkeypatch.setattr(stdio._Watched, "handle", lambda self, woke: handle(self, woke & ~1))
    transport = stdio.StdioTransport([sys.executable, "-c", HELD_STDERR], name="held")
    transport.start(lambda frame: None, lambda error: None)
    try:
        end = time.monotonic() + 1.0  # (the child holds stderr for 1.5 s)
        while (error := transport.dead()) is None and time.monotonic() < end:
            time.sleep(0.01)
        assert error is not None, "the exit was not seen"
    finally:
        transport.close()
    assert error.exit_code == 3
    assert "fatal: no config found" in str(error)


def test_an_unfinished_stderr_line_is_in_the_tail_once_as_it_grows() -> None:
    transport = stdio.StdioTransport([sys.executable, "-c", "pass"], name="lines")
    lines = stdio._StderrLines(transport)
    lines.feed(b"first\nsec")
    assert transport.stderr_tail() == "first\nsec"
    lines.feed(b"ond half")
    assert transport.stderr_tail() == "first\nsecond half"
    lines.feed(b" done\nthi")
    assert transport.stderr_tail() == "first\nsecond half done\nthi"
    lines.feed(b"rd\n")
    assert transport.stderr_tail() == "first\nsecond half done\nthird"
    lines.feed(b"x" * (stdio._STDERR_LINE_MAX + 10))
    lines.end()
    last = transport.stderr_tail().splitlines()[-1]
    assert last.startswith("x" * 100) and last.endswith("[... 10 more bytes of this line dropped]")
    kept = list(transport._stderr_tail)  # (stderr_tail() shows its last 4000 characters)
    assert kept[:3] == ["first", "second half done", "third"] and len(kept) == 4
    assert transport._stderr_ended.is_set()
