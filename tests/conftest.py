"""Fixtures shared by the whole suite: paths, peer commands, ports, HTTP peers, process checks.

Paths are resolved from this file, never from the working directory: CI clones the repository
into another folder with ``shared/`` beside it, so ``shared_dir`` is ``<repo>/../shared``.

Process hygiene is part of what the tests check: ``start_http_peer`` runs every HTTP peer in
its own process group and kills the whole group at teardown; ``no_leftover_processes`` fails a
test that leaves a child (or grandchild) of the test process behind.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"
PEERS_DIR = REPO_ROOT / "tests" / "peers"
FORCE_LOOPBACK = SHARED_DIR / "peers" / "force-loopback.cjs"
EVERYTHING_JS = (
    PEERS_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)
LOOPBACK = "127.0.0.1"


# --- markers, from the fixtures a test uses -------------------------------------------------

# Fixtures that start a peer process outside the test process (an official SDK or Node server,
# an HTTP app, a gateway, Redis, a stdio agent server): a test using one is ``integration``.
PEER_FIXTURES = frozenset(
    {
        "start_http_peer",
        "official_server_cmd",
        "official_stdio",
        "everything_cmd",
        "everything_stdio",
        "node_bin",
        "fault_cmd",
        "gateway_process",
        "redis_server",
        "redis_url",
        "agent_peer",
    }
)
# Fixtures of external Node.js peers: ``node`` too.
NODE_FIXTURES = frozenset({"node_bin", "everything_cmd", "everything_stdio"})
# Cross-cutting suites (and the odd costly test), by path below tests/: (markers, why).
FOLDER_MARKS: dict[str, tuple[tuple[str, ...], str]] = {
    "conformance/": (("integration", "slow", "serial", "node"), "the official harness"),
    "docs/test_readme": (("integration", "slow"), "every fenced block in a fresh interpreter"),
    "docs/test_site": (("integration", "slow"), "mkdocs and a headless browser"),
    "fleet/": (("integration", "slow", "serial"), "Redis and Celery fleets"),
    "netfaults/": (("integration", "slow", "serial"), "veth pairs, fork stress"),
    "interop/": (("integration",), "real third-party peers"),
    "typing/": (("slow",), "mypy over the package and the examples"),
    "deadlines/test_matrix_": (("slow",), "cells that wait out their timeouts"),
    "architecture/test_layers.py::test_every_module_imports_alone": (
        ("slow",),
        "each of ~200 modules imported afresh, twice: a minute of CPU",
    ),
}
# Tests that must have the machine to themselves (timing or load bounds, whole fleets): the
# parallel run of ``make test`` leaves them to a serial pass.
SERIAL_PATHS = (
    "gateway/test_gateway_fleet.py",
    "connection/test_handoff_stress.py",
    "docs/test_site.py",  # headless Chromium renders every page: past its 120 s when shared
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Set ``integration``, ``node``, ``slow`` and ``serial`` from what a test uses and where
    it sits, never by hand (``make check`` runs ``-m "not integration and not slow"``)."""
    tests_dir = Path(__file__).resolve().parent
    for item in items:
        try:
            where = Path(str(item.path)).resolve().relative_to(tests_dir).as_posix()
        except ValueError:
            continue
        where += f"::{item.name}"  # a prefix may name a test too
        names = set(getattr(item, "fixturenames", ()))
        marks: set[str] = set()
        if names & PEER_FIXTURES:
            marks.add("integration")
        if names & NODE_FIXTURES:
            marks.add("node")
        for prefix, (folder_marks, _) in FOLDER_MARKS.items():
            if where.startswith(prefix):
                marks.update(folder_marks)
        if where.startswith(SERIAL_PATHS):
            marks.add("serial")
        for mark in sorted(marks):
            item.add_marker(mark)


# --- paths and commands ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return SHARED_DIR


@pytest.fixture(scope="session")
def peers_dir() -> Path:
    return PEERS_DIR


@pytest.fixture(scope="session")
def peer_python() -> str:
    """The interpreter that runs Python peers: the test interpreter (it has ``mcp`` installed)."""
    return sys.executable


@pytest.fixture(scope="session")
def official_server_cmd(peer_python: str) -> Callable[..., list[str]]:
    """``official_server_cmd("stdio")`` / ``("http", "--port", "N", "--stateless")`` -> argv."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as exc:
        pytest.fail(
            f"the official SDK peer needs PyPI `mcp` >= 2.3 in {peer_python} ({exc}); "
            "run `make peers`",
            pytrace=False,
        )

    def build(*args: str) -> list[str]:
        return [peer_python, str(PEERS_DIR / "official_server.py"), *args]

    return build


@pytest.fixture(scope="session")
def node_bin() -> str:
    """Path of ``node``; the only reason a Node test may skip is that Node is not installed."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (Node peers need Node.js >= 20)")
    return node


@pytest.fixture(scope="session")
def everything_cmd(node_bin: str) -> Callable[[str], list[str]]:
    """``everything_cmd("stdio" | "streamableHttp" | "sse")`` -> argv of server-everything.

    HTTP modes take their port from the ``PORT`` environment variable. ``force-loopback.cjs``
    is preloaded so that Node's ``listen(port)`` binds 127.0.0.1, not every interface.
    """
    if not FORCE_LOOPBACK.is_file():
        pytest.fail(f"missing {FORCE_LOOPBACK} (shared/ must sit beside the repo)", pytrace=False)
    if not EVERYTHING_JS.is_file():
        pytest.fail(f"missing {EVERYTHING_JS}: run `make peers`", pytrace=False)

    def build(transport: str = "stdio") -> list[str]:
        return [node_bin, "--require", str(FORCE_LOOPBACK), str(EVERYTHING_JS), transport]

    return build


# --- ports and HTTP peers ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    return _free_port()


@dataclass
class HttpPeer:
    """A running HTTP peer: ``url`` is ``http://127.0.0.1:<port>`` (no path)."""

    proc: subprocess.Popen[bytes]
    port: int
    stderr_path: Path
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.url = f"http://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


# pids of HTTP peers started by tests: their process trees are not "leftovers".
_PEER_PIDS: set[int] = set()


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            # The leader is gone; SIGKILL whatever is left in its group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def start_http_peer(tmp_path: Path) -> Iterator[Callable[..., HttpPeer]]:
    """Factory: ``start_http_peer(cmd, port, env=None, cwd=None, wait=30.0) -> HttpPeer``.

    Starts ``cmd`` in its own process group (``env`` is added to the current environment),
    waits until 127.0.0.1:``port`` accepts connections, and fails the test with the process's
    stderr if it exits or the port does not open within ``wait`` seconds. Every peer's whole
    process group is killed at teardown.
    """
    started: list[subprocess.Popen[bytes]] = []

    def start(
        cmd: Sequence[str],
        port: int,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        wait: float = 30.0,
    ) -> HttpPeer:
        stderr_path = Path(tempfile.mkstemp(prefix="peer-stderr-", dir=tmp_path)[1])
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        started.append(proc)
        _PEER_PIDS.add(proc.pid)
        peer = HttpPeer(proc, port, stderr_path)
        deadline = time.monotonic() + wait
        while not _port_open(port):
            if proc.poll() is not None:
                pytest.fail(
                    f"HTTP peer {list(cmd)} exited with code {proc.returncode} before "
                    f"listening on port {port}; stderr:\n{peer.stderr()[-4000:]}",
                    pytrace=False,
                )
            if time.monotonic() > deadline:
                _kill_group(proc)
                pytest.fail(
                    f"HTTP peer {list(cmd)} did not listen on {LOOPBACK}:{port} within "
                    f"{wait} s; stderr:\n{peer.stderr()[-4000:]}",
                    pytrace=False,
                )
            time.sleep(0.05)
        return peer

    yield start
    for proc in reversed(started):
        _kill_group(proc)
        _PEER_PIDS.discard(proc.pid)


# --- process checks ----------------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, state, command line) for every process visible in /proc."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        rest = stat[stat.rindex(")") + 2 :].split()
        table[pid] = (
            int(rest[1]),
            rest[0],
            cmdline or stat[stat.index("(") : stat.rindex(")") + 1],
        )
    return table


def descendants(root: int | None = None) -> dict[int, tuple[str, str]]:
    """Every living descendant of ``root`` (default: this process): pid -> (state, cmdline)."""
    root = os.getpid() if root is None else root
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[str, str]] = {}
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if pid in found or pid not in table:
            continue
        found[pid] = (table[pid][1], table[pid][2])
        stack.extend(children.get(pid, []))
    return found


def process_gone(pid: int, wait: float = 5.0) -> bool:
    """True once ``pid`` no longer exists, polling up to ``wait`` seconds.

    A zombie counts as gone only when it is not our own child: a dead grandchild is re-parented
    and reaped by init in its own time, but an unreaped child of ours is a leak.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        entry = _proc_table().get(pid)
        if entry is None or (entry[1] == "Z" and entry[0] != os.getpid()):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def is_reaper(pid: int) -> bool:
    """True when ``pid`` is this process's stdio server watcher (``mcp_lite.transports._reaper``):
    it lives as long as the test process, by design, and is no leftover. Told by its marker,
    an argv element of its own, and by its parent: this process."""
    from mcp_lite.transports import _reaper

    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/stat", "rb") as f:
            ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return False
    return ppid == os.getpid() and _reaper.MARKER.encode() in argv


@pytest.fixture
def no_leftover_processes() -> Iterator[Callable[[], None]]:
    """Fails the test if it leaves a process behind; also a callable to check mid-test.

    Compares the descendants of the test process with those that existed when the fixture
    started, ignoring HTTP peers from ``start_http_peer`` (and their children) and this
    process's stdio server watcher (``is_reaper``). Processes get a few seconds to finish
    dying before they count as leftovers.
    """
    baseline = set(descendants())

    def leftovers() -> dict[int, tuple[str, str]]:
        peer_trees: set[int] = set()
        for peer in _PEER_PIDS:
            peer_trees.add(peer)
            peer_trees.update(descendants(peer))
        return {
            pid: info
            for pid, info in descendants().items()
            if pid not in baseline and pid not in peer_trees and not is_reaper(pid)
        }

    def check() -> None:
        deadline = time.monotonic() + 5.0
        left = leftovers()
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = leftovers()
        assert not left, "processes left behind: " + "; ".join(
            f"pid {pid} [{state}] {cmd}" for pid, (state, cmd) in sorted(left.items())
        )

    yield check
    check()


@pytest.fixture
def wait_until() -> Callable[..., bool]:
    """``wait_until(predicate, timeout=10.0)``: poll until true; returns the last result."""

    def wait(predicate: Callable[[], object], timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if predicate():
                return True
            if time.monotonic() > deadline:
                return bool(predicate())
            time.sleep(0.05)

    return wait


def run_in_fork(work: Callable[[], str]) -> str:
    """Run ``work`` in a forked child and return what it returned; fail if it raised."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, work().encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    _, status = os.waitpid(child, 0)
    report = os.read(read_end, 10_000).decode()
    os.close(read_end)
    assert os.waitstatus_to_exitcode(status) == 0, "the forked child failed"
    return report


@pytest.fixture
def in_fork() -> Callable[[Callable[[], str]], str]:
    """``in_fork(work)``: see ``run_in_fork``."""
    return run_in_fork


@pytest.fixture
def pid_gone() -> Callable[..., bool]:
    """``pid_gone(pid, wait=5.0)``: see ``process_gone``."""
    return process_gone


# --- the in-process fault HTTP server --------------------------------------------------------


def _load_fault_http_server() -> Any:
    name = "fault_http_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, PEERS_DIR / "fault_http_server.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def unix_fault_server() -> Iterator[Any]:
    """The ``FaultHttpServer`` on a Unix socket: ``.url(path)`` is ``unix://...``."""
    with tempfile.TemporaryDirectory(prefix="mcpf-", dir="/tmp") as name:  # short: sun_path
        server = _load_fault_http_server().UnixFaultHttpServer(f"{name}/f.sock").start()
        yield server
        server.stop()


@pytest.fixture
def fault_server() -> Iterator[Any]:
    """A running ``FaultHttpServer`` (127.0.0.1): ``.url(path)``, ``.state`` (what it saw)."""
    server = _load_fault_http_server().FaultHttpServer().start()
    yield server
    server.stop()


# --- stdio peers the client spawns itself (transports/, interop/) -----------------------------


@pytest.fixture(scope="session")
def official_stdio(official_server_cmd: Callable[..., list[str]]) -> list[str]:
    """argv of the official-SDK peer over stdio."""
    return official_server_cmd("stdio")


@pytest.fixture(scope="session")
def everything_stdio(everything_cmd: Callable[[str], list[str]]) -> list[str]:
    """argv of server-everything over stdio."""
    return everything_cmd("stdio")


@pytest.fixture(scope="session")
def fault_cmd(peer_python: str, peers_dir: Path) -> Callable[..., list[str]]:
    """``fault_cmd(mode, record=None)`` -> argv of ``fault_server.py`` in that mode."""

    def build(mode: str, record: Path | None = None) -> list[str]:
        cmd = [peer_python, str(peers_dir / "fault_server.py"), mode]
        if record is not None:
            cmd += ["--record", str(record)]
        return cmd

    return build
