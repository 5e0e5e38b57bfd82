"""stdio servers die with the process that owns their client, by any death (issue 21, item 3).

An owner process (a plain Python script: ``Client``, ``Hub`` or the CLI) connects to a stdio
server that starts a grandchild of its own, starts a tool call that never returns (the server
sleeps in it and never reads stdin again), and is then SIGKILLed or leaves with ``os._exit``:
2 s later neither the server nor the grandchild exists, by pid and by process group, and the
owner's watcher has exited. Also: the watcher signals only groups still registered, exits
when its owner exits normally; a forked child drops its copies of the parent's pipes without
waiting on locks held at fork time; ``start`` honours the caller's deadline and ``close`` is
bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite import _deadline
from mcp_lite.errors import RequestTimeout
from mcp_lite.transports import _reaper
from mcp_lite.transports.stdio import _CLOSE_LIMIT, StdioTransport

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

REPO = Path(__file__).resolve().parents[2]
FAULT_SERVER = REPO / "tests" / "peers" / "fault_server.py"
# Starts a grandchild; its tool never returns and it never reads stdin again (see its file).
BLOCKER = REPO / "tests" / "peers" / "blocker_server.py"
STOPPED_WITHIN = 2.0  # the promise: the owner's servers are gone this long after its death

# The owner: connects (Client, Hub or CLI), reports its pids, calls ``block`` on a thread,
# and once the server has the call and the test says so either waits to be SIGKILLed or
# leaves with os._exit.
OWNER = textwrap.dedent(
    """
    import json, os, sys, threading, time
    import mcp_lite
    from mcp_lite.transports import _reaper
    kind, ending, server, record = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    if kind == "client":
        client = mcp_lite.connect(server)
        call = lambda: client.call_tool("block", {}, timeout=600)
    else:
        hub = mcp_lite.Hub({"mcpServers": {"b": {"command": server[0], "args": server[1:]}}})
        call = lambda: hub.call_tool("mcp__b__block", {}, timeout=600)
    threading.Thread(target=call, daemon=True).start()
    while not os.path.exists(record + ".called"):
        time.sleep(0.02)
    print(json.dumps({"watcher": _reaper.watcher_pid()}), flush=True)
    sys.stdin.readline()  # the test has seen the process tree: now end
    if ending == "os._exit":
        os._exit(0)
    time.sleep(600)
    """
)


@dataclass
class Started:
    """What an owner process started: its server (a group leader), the grandchild, the
    watcher (None when the CLI owns it: not reported)."""

    owner: subprocess.Popen[str]
    server: int
    grandchild: int
    watcher: int | None


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) of ``pid``, None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[1]), int(fields[2])


def _alive(pid: int) -> bool:
    """A zombie counts as dead (it is init's to reap, or ours: see ``_reap``)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[2] == pgid and stat[0] != "Z":
                members.append(int(entry))
    return members


def _with_marker(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if marker.encode() in cmdline and _alive(int(entry)):
            found.append(int(entry))
    return found


def _wait_for(path: Path, owner: subprocess.Popen[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if owner.poll() is not None:
            pytest.fail(f"the owner exited first: {owner.stderr.read() if owner.stderr else ''}")
        assert time.monotonic() < deadline, f"{path.name} did not appear"
        time.sleep(0.02)


def _gone_within(seconds: float, check: Callable[[], list[int]]) -> list[int]:
    end = time.monotonic() + seconds
    left = check()
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = check()
    return left


@pytest.fixture
def marker() -> str:
    return f"mcp_lifetime_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def blocker(tmp_path: Path, marker: str) -> Iterator[list[str]]:
    """The blocking server's argv; every process carrying ``marker`` is killed at the end."""
    script = tmp_path / f"{marker}_server.py"  # a copy under a unique name: easy to find
    shutil.copy(BLOCKER, script)
    yield [sys.executable, str(script), marker, str(tmp_path / "record")]
    for pid in _with_marker(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _start_owner(kind: str, ending: str, server: list[str], tmp_path: Path) -> Started:
    record = tmp_path / "record"
    if kind == "cli":
        argv = [sys.executable, "-m", "mcp_lite", "call", "--stdio",
                " ".join(server), "block", "{}", "--timeout", "600"]
    else:
        argv = [sys.executable, "-c", OWNER, kind, ending, json.dumps(server), str(record)]
    owner = subprocess.Popen(
        argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    called = record.with_suffix(".called")
    _wait_for(called, owner)
    watcher = None
    if kind != "cli":
        assert owner.stdout is not None
        watcher = json.loads(owner.stdout.readline())["watcher"]
    grandchild = int(record.with_suffix(".grandchild").read_text())
    server_pid = _stat(grandchild)[1]  # type: ignore[index]
    assert _stat(server_pid)[2] == server_pid  # type: ignore[index]  # a group leader
    return Started(owner, server_pid, grandchild, watcher)


@pytest.mark.parametrize(
    ("kind", "ending"),
    [("client", "SIGKILL"), ("client", "os._exit"), ("hub", "SIGKILL"), ("cli", "SIGKILL")],
)
def test_servers_die_with_their_owner(
    kind: str, ending: str, blocker: list[str], marker: str, tmp_path: Path
) -> None:
    started = _start_owner(kind, ending, blocker, tmp_path)
    assert _alive(started.server) and _alive(started.grandchild)
    assert started.owner.stdin is not None
    started.owner.stdin.write("end\n")
    started.owner.stdin.close()
    if ending == "SIGKILL":
        started.owner.kill()
    started.owner.wait(30)
    if started.owner.stdout:
        started.owner.stdout.close()
    if started.owner.stderr:
        started.owner.stderr.close()

    def left() -> list[int]:
        pids = [pid for pid in (started.server, started.grandchild) if _alive(pid)]
        return pids + _group_members(started.server) + _with_marker(marker)

    remaining = _gone_within(STOPPED_WITHIN, left)
    assert remaining == [], f"still running {STOPPED_WITHIN} s after the owner died: {remaining}"
    if started.watcher is not None:  # its work done, the watcher is gone too
        assert _gone_within(STOPPED_WITHIN, lambda: [started.watcher] if _alive(  # type: ignore[list-item]
            started.watcher) else []) == []  # type: ignore[arg-type]


WATCH_ONLY = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from mcp_lite.transports import _reaper
    # Two groups of their own: one registered then forgotten (as after a reap), one still
    # registered. Only the second may be signalled when the owner dies.
    quiet = dict(start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kept = subprocess.Popen(["sleep", "600"], **quiet)
    forgotten = subprocess.Popen(["sleep", "600"], **quiet)
    _reaper.watch(kept.pid)
    _reaper.watch(forgotten.pid)
    _reaper.forget(forgotten.pid)
    print(kept.pid, forgotten.pid, _reaper.watcher_pid(), flush=True)
    os._exit(0)
    """
)


def test_only_groups_still_registered_are_signalled() -> None:
    out = subprocess.run(
        [sys.executable, "-c", WATCH_ONLY], cwd=REPO, capture_output=True, text=True,
        timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    kept, forgotten, watcher = (int(word) for word in out.stdout.split())
    try:
        assert _gone_within(STOPPED_WITHIN, lambda: [kept] if _alive(kept) else []) == []
        assert not _alive(watcher) or _gone_within(
            STOPPED_WITHIN, lambda: [watcher] if _alive(watcher) else []) == []
        assert _alive(forgotten), "a group no longer registered was signalled"
    finally:
        for pid in (kept, forgotten):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_the_watcher_exits_with_its_owner() -> None:
    script = textwrap.dedent(
        f"""
        import sys, mcp_lite
        from mcp_lite.transports import _reaper
        client = mcp_lite.connect({[sys.executable, str(FAULT_SERVER), "echo"]!r})
        client.ping()
        print(_reaper.watcher_pid(), flush=True)  # (the process ends with its client open)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    watcher = int(out.stdout.strip())
    assert _gone_within(STOPPED_WITHIN, lambda: [watcher] if _alive(watcher) else []) == []


def test_the_watcher_is_no_leftover_and_holds_no_fd_of_ours(no_leftover_processes) -> None:
    with mcp_lite.connect([sys.executable, str(FAULT_SERVER), "echo"]) as client:
        server = client.transport.pid
        watcher = _reaper.watcher_pid()
        assert watcher is not None and _alive(watcher)
        # Its argv carries the marker; it runs in a session of its own, from /.
        with open(f"/proc/{watcher}/cmdline", "rb") as f:
            assert _reaper.MARKER.encode() in f.read().split(b"\0")
        assert _stat(watcher)[2] == watcher  # type: ignore[index]
        assert os.readlink(f"/proc/{watcher}/cwd") == "/"
        # Its stdin is the pipe; no other fd of it is that pipe (its write end) or one of
        # the server's pipes. The server did not inherit the watcher's pipe either.
        pipe = os.fstat(_reaper._write_fd).st_ino  # type: ignore[arg-type]
        assert os.readlink(f"/proc/{watcher}/fd/0") == f"pipe:[{pipe}]"
        proc = client.transport._proc
        servers = {os.fstat(s.fileno()).st_ino for s in (proc.stdin, proc.stdout, proc.stderr)}
        others = _pipe_inodes(watcher) - {pipe} if _fd_count(watcher, pipe) == 1 else {pipe}
        assert not others & (servers | {pipe})
        assert pipe not in _pipe_inodes(server)
    no_leftover_processes()


def _fd_count(pid: int, inode: int) -> int:
    """How many fds of ``pid`` refer to pipe ``inode``."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}") == f"pipe:[{inode}]"
        except OSError:
            pass
    return count


def _pipe_inodes(pid: int | str) -> set[int]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("pipe:["):
            inodes.add(int(link[6:-1]))
    return inodes


def test_a_forked_child_drops_the_parents_pipes_without_waiting_on_its_locks(
    in_fork, no_leftover_processes
) -> None:
    client = mcp_lite.connect([sys.executable, str(FAULT_SERVER), "echo"])
    transport = client.transport
    parent_server = transport.pid
    parent_watcher = _reaper.watcher_pid()
    proc = transport._proc
    theirs = {os.fstat(s.fileno()).st_ino for s in (proc.stdin, proc.stdout, proc.stderr)}
    theirs.add(os.fstat(_reaper._write_fd).st_ino)  # type: ignore[arg-type]
    # Another thread holds the transport's locks while the fork happens (a writer, a close).
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with transport._write_lock, transport._state_lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(10)

    def child() -> str:
        signal.alarm(30)  # a child stuck on an inherited lock fails instead of hanging
        kept = theirs & _pipe_inodes("self")
        started = time.monotonic()
        text = client.call_tool("echo", {"text": "child"}, timeout=10).text
        took = time.monotonic() - started
        child_server = client.transport.pid
        child_watcher = _reaper.watcher_pid()
        client.close()
        return json.dumps({"kept": sorted(kept), "text": text, "took": took,
                           "server": child_server, "watcher": child_watcher})

    try:
        report = json.loads(in_fork(child))
    finally:
        release.set()
        holder.join(10)
    assert report["kept"] == [], "the child kept copies of the parent's pipes"
    assert report["text"] == "child" and report["took"] < 10
    assert report["server"] != parent_server
    assert report["watcher"] not in (None, parent_watcher)  # the child's own watcher
    # The parent's server and watcher were not touched.
    assert transport.pid == parent_server and _alive(parent_server)
    assert _reaper.watcher_pid() == parent_watcher and _alive(parent_watcher)  # type: ignore[arg-type]
    assert client.call_tool("echo", {"text": "parent"}, timeout=10).text == "parent"
    client.close()
    no_leftover_processes()


def test_start_past_its_deadline_starts_nothing(marker: str) -> None:
    transport = StdioTransport([sys.executable, "-c", "pass", marker])
    gone = _deadline.Deadline.after(0.0)
    with pytest.raises(RequestTimeout, match=r"^connecting: .* was not started within"):
        transport.start(lambda frame: None, lambda error: None, deadline=gone)
    assert transport.pid is None and _with_marker(marker) == []


def test_close_is_bounded_for_a_server_that_ignores_its_input_and_sigterm() -> None:
    client = mcp_lite.connect([sys.executable, str(FAULT_SERVER), "ignore-sigterm"])
    server = client.transport.pid
    started = time.monotonic()
    client.close()
    took = time.monotonic() - started
    assert took < _CLOSE_LIMIT + 0.9, f"close() took {took:.2f} s"
    assert _gone_within(1.0, lambda: [server] if _alive(server) else []) == []
