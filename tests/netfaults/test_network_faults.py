"""Calls across a real network path with faults on it: the client in this process, the server in
a network namespace of the test's own, joined by a veth pair.

What is injected, and where:

- **partition**: the server's end of the veth goes down mid-run, so packets vanish (no RST, no
  ICMP): a kernel fault, as a cable pulled or a firewall dropping traffic;
- **slow link**: a token-bucket qdisc (``tc tbf``) on the client's end caps the path's rate;
- **delay** and **loss**: this kernel has no ``netem`` qdisc, so a relay between client and
  server holds each chunk of the byte stream for a random 20-120 ms (delay and jitter), or
  holds some chunks for 0.3-0.9 s (what a lost segment costs TCP: a retransmission timeout).
  Reordering is invisible above TCP, so it is not emulated.

Each run asserts what a user sees: every call ends within its timeout plus a slack of under a
second, with its own answer or an ``McpError``; none is answered to the wrong caller; calls
succeed again once the path heals; and ``close()`` leaves no socket to the server and no
thread behind (counted without a garbage collection).

Needs root and ``ip netns`` (iproute2; ``make test`` runs as root): otherwise it skips, saying why.
Traffic goes only to the namespace's own addresses (10.241.x.y/30, created and removed here).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite.errors import McpError

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "peers" / "netpath_server.py"
TIMEOUT = 2.0
SLACK = 1.0  # the bound: a call ends within its timeout plus under a second


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def _netns_usable() -> str | None:
    """Why the test cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root to make a network namespace"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "needs iproute2 (ip, tc)"
    probe = f"mcplite-probe-{os.getpid()}"
    made = _run("ip", "netns", "add", probe)
    _run("ip", "netns", "del", probe)
    return None if made.returncode == 0 else f"ip netns add failed: {made.stderr.strip()}"


WHY_NOT = _netns_usable()


@dataclass
class Path_:
    namespace: str
    client_if: str
    server_if: str
    server_ip: str
    port: int
    process: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return f"http://{self.server_ip}:{self.port}/mcp"

    def partition(self, on: bool) -> None:
        state = "down" if on else "up"
        done = _run("ip", "-n", self.namespace, "link", "set", self.server_if, state)
        assert done.returncode == 0, done.stderr

    def slow(self, rate: str | None) -> None:
        if rate is None:
            _run("tc", "qdisc", "del", "dev", self.client_if, "root")
            return
        done = _run("tc", "qdisc", "replace", "dev", self.client_if, "root", "tbf", "rate", rate,
                    "burst", "4kb", "latency", "400ms")
        assert done.returncode == 0, done.stderr


@pytest.fixture
def netpath() -> Iterator[Path_]:
    if WHY_NOT:
        pytest.skip(WHY_NOT)
    tag = os.getpid() % 10000
    namespace, client_if, server_if = f"mcplite-{tag}", f"mlc{tag}", f"mls{tag}"
    subnet = 100 + tag % 100
    client_ip, server_ip = f"10.241.{subnet}.1", f"10.241.{subnet}.2"
    steps = [
        ("ip", "netns", "add", namespace),
        ("ip", "link", "add", client_if, "type", "veth", "peer", "name", server_if),
        ("ip", "link", "set", server_if, "netns", namespace),
        ("ip", "addr", "add", f"{client_ip}/30", "dev", client_if),
        ("ip", "-n", namespace, "addr", "add", f"{server_ip}/30", "dev", server_if),
        ("ip", "link", "set", client_if, "up"),
        ("ip", "-n", namespace, "link", "set", server_if, "up"),
        ("ip", "-n", namespace, "link", "set", "lo", "up"),
    ]
    process = None
    try:
        for step in steps:
            done = _run(*step)
            if done.returncode != 0:
                pytest.skip(f"{' '.join(step)} failed: {done.stderr.strip()}")
        port = 18000 + tag % 1000
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        process = subprocess.Popen(
            ["ip", "netns", "exec", namespace, sys.executable, str(SERVER), server_ip, str(port)],
            stdout=subprocess.PIPE, text=True, env=env,
        )
        assert process.stdout is not None
        assert process.stdout.readline().startswith("http://"), "the server did not start"
        yield Path_(namespace, client_if, server_if, server_ip, port, process)
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
            if process.stdout is not None:
                process.stdout.close()
        _run("ip", "link", "del", client_if)
        _run("ip", "netns", "del", namespace)


class Relay:
    """A TCP relay on 127.0.0.1 to the server across the veth, holding chunks of the byte
    stream back: ``delay`` (seconds, low and high) for every chunk, and with probability
    ``stall_p`` a longer ``stall`` (what a lost segment costs TCP)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.delay = (0.0, 0.0)
        self.stall_p, self.stall = 0.0, (0.0, 0.0)
        self._random = random.Random(1234)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="test-relay").start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def _hold(self) -> None:
        with self._lock:
            wait = self._random.uniform(*self.delay)
            if self._random.random() < self.stall_p:
                wait += self._random.uniform(*self.stall)
        if wait:
            time.sleep(wait)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=3)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True,
                                 name="test-relay-pump").start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                chunk = source.recv(4096)
                if not chunk:
                    break
                self._hold()
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.close()


def _sockets_to(ip: str, port: int) -> int:
    """This process's TCP sockets connected to ip:port (from /proc/net/tcp, by inode)."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/self/fd/{fd}")
            if link.startswith("socket:["):
                mine.add(link[8:-1])
    want = f"{int.from_bytes(socket.inet_aton(ip), 'little'):08X}:{port:04X}"
    count = 0
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[2] == want and fields[9] in mine:
                count += 1
    return count


def _library_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-lite")]


def _no_library_threads(within: float = 3.0) -> list[str]:
    end = time.monotonic() + within
    while _library_threads() and time.monotonic() < end:
        time.sleep(0.05)
    return _library_threads()


@dataclass
class Outcome:
    ok: int = 0
    failed: int = 0
    wrong: int = 0
    late: list[float] | None = None


def _hammer(client: mcp_lite.Client, calls: int, threads: int, seconds: float) -> Outcome:
    """``threads`` callers, each calling echo with its own texts until ``calls`` or ``seconds``."""
    outcome = Outcome(late=[])
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def caller(n: int) -> None:
        for i in range(calls):
            if time.monotonic() > stop:
                return
            text = f"caller {n} call {i} {random.random()}"
            started = time.monotonic()
            try:
                got = client.call_tool("echo", {"text": text}, timeout=TIMEOUT).text
            except McpError:
                got = None
            took = time.monotonic() - started
            with lock:
                if took > TIMEOUT + SLACK:
                    outcome.late.append(round(took, 2))  # type: ignore[union-attr]
                if got is None:
                    outcome.failed += 1
                elif got == text:
                    outcome.ok += 1
                else:
                    outcome.wrong += 1

    workers = [threading.Thread(target=caller, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(seconds + TIMEOUT + SLACK + 10)
    assert not any(w.is_alive() for w in workers), "a caller is still blocked"
    return outcome


def _recovers(client: mcp_lite.Client, within: float = 15.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            if client.call_tool("echo", {"text": "back"}, timeout=TIMEOUT).text == "back":
                return True
        except McpError:
            time.sleep(0.2)
    return False


ERAS = {"2025-11-25": "2025-11-25", "2026-07-28": "2026-07-28"}


@pytest.mark.parametrize("era", list(ERAS), ids=list(ERAS))
def test_partition_then_heal(netpath: Path_, era: str) -> None:
    client = mcp_lite.connect(netpath.url, timeout=10, protocol_version=ERAS[era])
    try:
        assert _hammer(client, 3, 2, 10).ok == 6  # the path works
        netpath.partition(True)
        healer = threading.Timer(3.0, netpath.partition, args=(False,))
        healer.start()
        during = _hammer(client, 3, 4, 3.0)
        healer.join()
        assert during.late == [], f"calls ended past their deadline: {during.late}"
        assert during.wrong == 0
        assert during.failed > 0  # the partition was seen
        assert _recovers(client), "calls did not recover once the path healed"
    finally:
        netpath.partition(False)
        client.close()
    assert _sockets_to(netpath.server_ip, netpath.port) == 0, "close() left a socket"
    assert _no_library_threads() == []


def test_connect_during_a_partition_ends_at_its_deadline(netpath: Path_) -> None:
    netpath.partition(True)
    try:
        started = time.monotonic()
        with pytest.raises(McpError):
            mcp_lite.connect(netpath.url, timeout=TIMEOUT)
        assert time.monotonic() - started < TIMEOUT + SLACK
    finally:
        netpath.partition(False)
    assert _sockets_to(netpath.server_ip, netpath.port) == 0
    assert _no_library_threads() == []


@pytest.mark.parametrize(
    ("fault", "delay", "stall_p", "stall"),
    [
        ("delay", (0.02, 0.12), 0.0, (0.0, 0.0)),
        ("loss", (0.0, 0.01), 0.1, (0.3, 0.9)),
    ],
    ids=["delay-and-jitter", "loss"],
)
def test_delay_and_loss(netpath: Path_, fault: str, delay: tuple[float, float], stall_p: float,
                        stall: tuple[float, float]) -> None:
    relay = Relay((netpath.server_ip, netpath.port))
    try:
        client = mcp_lite.connect(relay.url, timeout=10)
        relay.delay, relay.stall_p, relay.stall = delay, stall_p, stall
        try:
            outcome = _hammer(client, 6, 4, 8)
            assert outcome.late == [], f"calls ended past their deadline: {outcome.late}"
            assert outcome.wrong == 0
            assert outcome.ok > 0
            relay.delay, relay.stall_p = (0.0, 0.0), 0.0
            assert _recovers(client)
        finally:
            client.close()
        assert _sockets_to("127.0.0.1", relay.port) == 0, "close() left a socket"
        assert _no_library_threads() == []
    finally:
        relay.close()


def test_slow_link(netpath: Path_) -> None:
    client = mcp_lite.connect(netpath.url, timeout=10)
    try:
        netpath.slow("64kbit")  # 8 KB/s: 64 KB takes ~8 s, well past the 2 s timeout
        started = time.monotonic()
        try:
            client.call_tool("blob", {"size": 65536}, timeout=TIMEOUT)
        except McpError:
            pass
        assert time.monotonic() - started < TIMEOUT + SLACK
        small = client.call_tool("echo", {"text": "small"}, timeout=TIMEOUT + 3)
        assert small.text == "small"  # a small answer still gets through the slow link
        netpath.slow(None)
        assert _recovers(client)
    finally:
        netpath.slow(None)
        client.close()
    assert _sockets_to(netpath.server_ip, netpath.port) == 0
    assert _no_library_threads() == []
