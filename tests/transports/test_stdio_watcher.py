"""The server watcher never signals a stranger, keeps to its own pipe, ends when idle, and
close() reaches descendants that left the server's group (issue 36, process lifetimes).

- A server that crashes while a child of it still runs: the child is killed at once and
  the group forgotten; when the group's id is then reused by an unrelated process group (a
  real pid namespace, where the next pid can be chosen) and the owner is SIGKILLed, the
  watcher does not signal the stranger.
- An application that closes the watcher's pipe (daemonizing) and opens a log file under
  that fd number: no ``+pgid`` line lands in the log, and its next server still dies with it.
- The watcher exits, and is reaped, once no server is left; the next server starts another.
- ``close()`` kills a grandchild that called ``setsid()`` (Linux).
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
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite.transports import _reaper
from mcp_lite.transports.stdio import StdioTransport

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc and pid namespaces")

REPO = Path(__file__).resolve().parents[2]
FAULT_SERVER = REPO / "tests" / "peers" / "fault_server.py"
WITHIN = 2.0  # "at once", on a slow and busy machine


def _state(pid: int) -> str | None:
    """The process's state letter, None when it does not exist (reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    return _state(pid) not in (None, "Z")


def _until(check: object, seconds: float = WITHIN) -> bool:
    """Whether ``check()`` became true within ``seconds`` (looked at every 20 ms)."""
    end = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def _kill(*pids: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- 1. a reused group id is never signalled ------------------------------------------------

# The owner: a server that stays (so the watcher stays), and one whose child runs on after
# it crashes. It reports pids, then "closed" when the crashed connection has ended.
OWNER = textwrap.dedent(
    """
    import json, sys
    from mcp_lite.transports import _reaper
    from mcp_lite.transports.stdio import StdioTransport
    record = sys.argv[1]
    keep = StdioTransport(["sleep", "600"], name="keep")
    keep.start(lambda frame: None, lambda error: None)
    crash = StdioTransport(
        ["sh", "-c", 'sleep 600 >/dev/null 2>&1 & echo $! > "$0"; exec sleep 600', record],
        name="crash",
    )
    crash.start(lambda frame: None, lambda error: print("closed", flush=True))
    print(json.dumps({"keep": keep.pid, "server": crash.pid, "watcher": _reaper.watcher_pid()}),
          flush=True)
    sys.stdin.readline()
    """
)

# Pid 1 of a new pid namespace: runs the owner, crashes its server (SIGKILL to the server
# alone), sees whether the child went at once, makes an unrelated process group take the
# freed id, SIGKILLs the owner and reports whether the watcher spared the stranger. When it
# exits, the kernel kills whatever is left in the namespace.
DRIVER = textwrap.dedent(
    """
    import json, os, signal, subprocess, sys, time
    owner_code, record = sys.argv[1], sys.argv[2]

    def reaped(pid, seconds):
        end = time.monotonic() + seconds
        while True:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    return True
            except ChildProcessError:
                return True
            if time.monotonic() > end:
                return False
            time.sleep(0.02)

    owner = subprocess.Popen([sys.executable, "-c", owner_code, record],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    info = json.loads(owner.stdout.readline())
    while not (os.path.exists(record) and open(record).read().endswith("\\n")):
        time.sleep(0.02)
    child = int(open(record).read())
    os.kill(info["server"], signal.SIGKILL)  # the crash: the server alone, its child runs on
    closed = owner.stdout.readline().strip() == "closed"
    at_once = reaped(child, 2.0)  # (an orphan: ours to reap, as pid 1)
    if not at_once:  # the child ends later, by itself
        os.kill(child, signal.SIGKILL)
        reaped(child, 30)
    stranger = None
    for _ in range(50):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(info["server"] - 1))
        stranger = subprocess.Popen(["sleep", "600"], start_new_session=True)
        if stranger.pid == info["server"]:
            break
        stranger.kill()
        stranger.wait()
    reused = stranger.pid == info["server"] and os.getpgid(stranger.pid) == info["server"]
    owner.kill()
    owner.wait()
    watcher_done = reaped(info["watcher"], 30)  # it has sent every signal it was going to
    print(json.dumps({
        "closed": closed, "at_once": at_once, "reused": reused, "watcher_done": watcher_done,
        "keep_gone": reaped(info["keep"], 5), "stranger_alive": stranger.poll() is None,
    }), flush=True)
    """
)


def _pid_namespaces() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, timeout=30
    )
    return probe.returncode == 0


def test_a_crashed_servers_group_is_ended_at_once_and_its_reused_id_never_signalled(
    tmp_path: Path,
) -> None:
    if not _pid_namespaces():
        pytest.skip("needs root and unshare --pid (a pid namespace, to reuse an id for sure)")
    out = subprocess.run(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            sys.executable,
            "-c",
            DRIVER,
            OWNER,
            str(tmp_path / "child"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["closed"] and report["reused"], report  # the scenario took place
    assert report["watcher_done"] and report["keep_gone"], report  # the watcher did its job
    assert report["stranger_alive"], "the watcher signalled an unrelated group that reused the id"
    assert report["at_once"], "the crashed server's child ran on"


# --- 2. the pipe is known by its identity, not its number -----------------------------------

DAEMON = textwrap.dedent(
    """
    import json, os, sys, time
    import mcp_lite
    from mcp_lite.transports import _reaper
    server, log_path = json.loads(sys.argv[1]), sys.argv[2]
    first = mcp_lite.connect(server)  # a first stdio use; it stays connected
    first.ping()
    # Daemonizing: the app closes its fds (here the watcher's pipe) and opens its log file,
    # which gets the lowest free number: the pipe's.
    number = _reaper._write_fd
    os.close(number)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    if log != number:
        os.dup2(log, number)
        os.close(log)
    second = mcp_lite.connect(server)
    second.ping()
    print(json.dumps({"second": second.transport.pid, "watcher": _reaper.watcher_pid()}),
          flush=True)
    time.sleep(600)
    """
)


def test_a_closed_and_reused_watcher_fd_is_never_written_and_a_new_watcher_takes_over(
    tmp_path: Path,
) -> None:
    log_path = tmp_path / "app.log"
    server = [sys.executable, str(FAULT_SERVER), "echo"]
    owner = subprocess.Popen(
        [sys.executable, "-c", DAEMON, json.dumps(server), str(log_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    second = watcher = 0
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line, owner.stderr.read() if owner.stderr else ""
        report = json.loads(line)
        second, watcher = report["second"], report["watcher"]
        assert _alive(second) and watcher is not None and _alive(watcher)
        assert log_path.read_bytes() == b"", "the watcher's lines went into the app's log"
        owner.kill()
        owner.wait(30)
        assert _until(lambda: not _alive(second)), "the next server outlived its owner's SIGKILL"
    finally:
        owner.kill()
        owner.wait(30)
        for stream in (owner.stdout, owner.stderr):
            if stream is not None:
                stream.close()
        _kill(*(pid for pid in (second, watcher) if pid))


# --- 3. the watcher ends when no server is left -----------------------------------------------


def _watchers_of_ours() -> list[int]:
    """Our children that carry the watcher's marker (a zombie has no argv: the tests look
    for the watchers they know by pid as well)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and _reaper.MARKER.encode() in argv:
            found.append(int(entry))
    return found


def test_the_watcher_exits_and_is_reaped_once_no_server_is_left(
    no_leftover_processes, tmp_path: Path
) -> None:
    echo = [sys.executable, str(FAULT_SERVER), "echo"]
    first, second = mcp_lite.connect(echo), mcp_lite.connect(echo)
    watcher = _reaper.watcher_pid()
    assert watcher is not None and _alive(watcher)
    first.close()
    assert _reaper.watcher_pid() == watcher and _alive(watcher)  # a server is left
    second.close()
    # close() returned: the watcher has exited and been reaped (no zombie), none of ours left
    assert _reaper.watcher_pid() is None
    assert _state(watcher) is None, f"the watcher is still there: {_state(watcher)}"
    assert _watchers_of_ours() == []
    # The next server starts a new one; a server that ends on its own ends it as well.
    with mcp_lite.connect(echo) as client:
        again = _reaper.watcher_pid()
        assert again not in (None, watcher) and _alive(again)  # type: ignore[arg-type]
        client.ping()
    assert _state(again) is None  # type: ignore[arg-type]
    ended = threading.Event()
    # The server ends on its own once the test has seen the watcher (a file it waits for):
    # one that exits at once may end it before the test looks.
    go = tmp_path / "go"
    transport = StdioTransport(
        ["sh", "-c", 'while [ ! -e "$0" ]; do sleep 0.01; done; exit 3', str(go)]
    )
    transport.start(lambda frame: None, lambda error: ended.set())
    try:
        on_its_own = _reaper.watcher_pid()
        assert on_its_own is not None
        go.touch()
        assert ended.wait(30)
        assert _until(lambda: _reaper.watcher_pid() is None and _state(on_its_own) is None)
    finally:
        transport.close()
    assert _watchers_of_ours() == []
    no_leftover_processes()


# --- 4. close() reaches a grandchild that called setsid() ------------------------------------


def test_close_kills_a_grandchild_that_left_the_group_with_setsid(tmp_path: Path) -> None:
    record = tmp_path / "escaped"
    script = (
        'setsid sleep 600 >/dev/null 2>&1 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 600'
    )
    transport = StdioTransport(["sh", "-c", script, str(record)])
    transport.start(lambda frame: None, lambda error: None)
    server = transport.pid
    assert server is not None
    escaped = 0
    try:
        assert _until(record.exists, 30)
        escaped = int(record.read_text())
        assert _until(lambda: os.getsid(escaped) == escaped, 30)  # it left the group
        transport.close()
        assert not _alive(server)
        assert _until(lambda: not _alive(escaped)), "close() left the setsid grandchild running"
    finally:
        transport.close()
        _kill(*(pid for pid in (escaped,) if pid))
