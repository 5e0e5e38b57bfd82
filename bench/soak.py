"""``make soak``: mixed calls from many threads over every transport, with faults injected.

    .venv/bin/python bench/soak.py [--seconds 600] [--threads 16]

Servers (all on 127.0.0.1, stopped at the end): the chaos stdio server
(``tests/peers/chaos_server.py``: echo, slow, hang, crash, garbage, flood, oversized, stderr
floods), the same behind the WebSocket bridge (``tests/peers/ws_server.py``), the official SDK
over Streamable HTTP and legacy SSE (``tests/peers/official_server.py``), and the HTTP fault
server (``tests/peers/fault_http_server.py``: resets, 404 sessions, 500s, garbage events, slow
streams). A chaos thread kills and restarts one remote server every 20-40 s. Some calls use a
client of their own that is connected and closed around them.

Every call carries a token that its answer must echo. Each outcome is counted:
``answered`` (the right answer), ``failed`` (an ``McpError``: expected under faults),
``mismatched`` (an answer that is not this call's), ``unexpected`` (any other exception: a
library error that leaked), ``overdue`` (a call that outlived its timeout by more than 3 s).
Every 10 s it prints those counts and the process's RSS, threads, file descriptors and child
processes. It fails (exit 1) on any mismatched, unexpected or overdue call, on RSS that still
grows once warm: the peak of the last third of the run more than 10 MB above the peak of the
middle third (the first third is the warm-up), and on threads, file descriptors or child
processes left once every client is closed. Loopback only; bounded in time (the run is killed after seconds + 180).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import faulthandler
import gc
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_lite
from mcp_lite.errors import McpError

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "tests" / "peers"
MAX_MESSAGE = 1024 * 1024  # the soak clients' limit: the chaos server's ``big`` goes past it
# Connection pools, allocator arenas and 16 threads' stacks on five transports fill during
# the first minutes (a 10-minute run levels off after about 4); growth is measured after that.
WARMUP_FRACTION = 1 / 3
# A leak grows RSS from one third of the run to the next; the allocator's working set, with
# up to 16 callers' 1 MB messages in flight, reaches its level at any time in the first two
# thirds (seen: 200 s into one run, 400 s into another) and swings ~10 MB around it. Peak
# against peak is blind to when that level is reached; a single sample after the warm-up is
# not. 10 MB in a third of 600 s: 3 MB a minute, as the older check's 20 MB in 400 s.
RSS_GROWTH_LIMIT_MB = 10.0
OVERDUE_SLACK = 3.0


# --- servers ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Peer:
    """A server process on a fixed loopback port, restartable on the same port."""

    name: str
    command: list[str]
    port: int
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.command,
            cwd=PEERS,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", self.port), timeout=0.5
            ):
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


def start_peers() -> dict[str, Peer]:
    py = sys.executable
    chaos = str(PEERS / "chaos_server.py")
    ports = {name: free_port() for name in ("http", "sse", "fault", "ws")}
    peers = {
        "http": Peer("http", [py, "official_server.py", "http", "--port", str(ports["http"])], ports["http"]),
        "sse": Peer("sse", [py, "official_server.py", "sse", "--port", str(ports["sse"])], ports["sse"]),
        "fault": Peer("fault", [py, "fault_http_server.py", "--port", str(ports["fault"])], ports["fault"]),
        "ws": Peer("ws", [py, "ws_server.py", "--port", str(ports["ws"]), "--", py, chaos], ports["ws"]),
    }
    for peer in peers.values():
        peer.start()
    return peers


def targets(peers: dict[str, Peer]) -> dict[str, Any]:
    return {
        "stdio": [sys.executable, str(PEERS / "chaos_server.py")],
        "ws": f"ws://127.0.0.1:{peers['ws'].port}/",
        "http": f"http://127.0.0.1:{peers['http'].port}/mcp",
        "sse": {"type": "sse", "url": f"http://127.0.0.1:{peers['sse'].port}/sse"},
        "fault": f"http://127.0.0.1:{peers['fault'].port}/mcp",
    }


# --- the calls --------------------------------------------------------------------------------

Check = Callable[[Any], bool]


@dataclass
class Op:
    """One kind of call: the tool, its arguments, its timeout and how to check the answer."""

    tool: str
    arguments: dict[str, Any]
    timeout: float
    check: Check


def _text_is(expected: str) -> Check:
    return lambda result: not result.is_error and result.text == expected


def _never(result: Any) -> bool:
    return False  # the call must fail: any answer is a mismatch


def chaos_op(token: str, rng: random.Random, *, crash: bool) -> Op:
    """A call to the chaos server (stdio, or behind the WebSocket bridge)."""
    roll = rng.random()
    if roll < 0.55:
        return Op("echo", {"text": token}, 5.0, _text_is(token))
    if roll < 0.65:
        delay = rng.uniform(0.05, 1.0)
        timeout = rng.uniform(0.2, 1.5)
        return Op("slow", {"text": token, "delay": delay}, timeout, _text_is(token))
    if roll < 0.70:
        return Op("hang", {}, rng.uniform(0.2, 1.0), _never)
    if roll < 0.78:
        return Op("garbage", {"text": token}, 5.0, _text_is(token))
    if roll < 0.84:
        return Op("flood", {"text": token, "n": rng.choice((200, 2000, 20000))}, 15.0, _text_is(token))
    if roll < 0.90:
        return Op("big", {"size": 2 * MAX_MESSAGE}, 10.0, _never)
    if roll < 0.96:
        return Op("stderr", {"n": rng.choice((1, 64, 1024))}, 5.0, _text_is("ok"))
    if crash and roll < 0.975:
        return Op("crash", {}, 5.0, _never)
    return Op("echo", {"text": token}, 5.0, _text_is(token))


def official_op(token: str, rng: random.Random) -> Op:
    """A call to the official SDK server (Streamable HTTP or legacy SSE)."""
    roll = rng.random()
    if roll < 0.75:
        return Op("echo", {"text": token}, 5.0, _text_is(token))
    if roll < 0.90:
        steps = rng.randint(1, 10)
        return Op("slow", {"steps": steps, "delay": 0.1}, rng.uniform(0.3, 1.5), lambda r: not r.is_error)
    return Op("fail", {"message": token}, 5.0, lambda r: r.is_error and token in r.text)


def fault_op(token: str, rng: random.Random) -> Op:
    """A call to the HTTP fault server: most tools misbehave, ``echo`` answers "echo"."""
    tool = rng.choice(("echo", "echo", "echo", "boom", "reset", "garbage", "expire", "slow", "stream"))
    if tool == "echo":
        return Op("echo", {"text": token}, 5.0, _text_is("echo"))
    if tool == "slow":
        return Op("slow", {}, rng.uniform(0.2, 1.0), _never)
    return Op(tool, {"text": token}, 5.0, lambda r: True)  # answer or clear error: both fine


@dataclass
class Stats:
    counts: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    problems: list[str] = field(default_factory=list)
    # thread ident -> (started, timeout, what): the call each worker is in, for the watchdog
    inflight: dict[int, tuple[float, float, str]] = field(default_factory=dict)
    stacks_shown: int = 0

    def add(self, outcome: str, problem: str | None = None) -> None:
        with self.lock:
            self.counts[outcome] += 1
            if problem and len(self.problems) < 50:
                self.problems.append(problem)


def run_call(client: Any, op: Op, transport: str, stats: Stats) -> None:
    started = time.monotonic()
    me = threading.get_ident()
    stats.inflight[me] = (started, op.timeout, f"{transport} {op.tool}")
    try:
        result = client.call_tool(op.tool, op.arguments, timeout=op.timeout)
    except McpError:
        outcome, problem = "failed", None
    except Exception as exc:  # a library error that leaked past the transport boundary
        outcome, problem = "unexpected", f"{transport} {op.tool}: {type(exc).__name__}: {exc}"
    else:
        if op.check(result):
            outcome, problem = "answered", None
        else:
            outcome = "mismatched"
            problem = f"{transport} {op.tool}{op.arguments!r:.80}: got {result.text!r:.120}"
    finally:
        stats.inflight.pop(me, None)
    elapsed = time.monotonic() - started
    if elapsed > op.timeout + OVERDUE_SLACK:
        stats.add("overdue", f"{transport} {op.tool}: {elapsed:.1f} s for a {op.timeout:.1f} s timeout")
    stats.add(outcome, problem)


def worker(
    index: int,
    clients: dict[str, Any],
    target_of: dict[str, Any],
    stats: Stats,
    stop: threading.Event,
) -> None:
    rng = random.Random(index)
    names = list(clients)
    n = 0
    while not stop.is_set():
        n += 1
        transport = rng.choice(names)
        token = f"t{index}-{n}-{uuid.uuid4().hex[:8]}"
        if transport in ("stdio", "ws"):
            op = chaos_op(token, rng, crash=True)
        elif transport == "fault":
            op = fault_op(token, rng)
        else:
            op = official_op(token, rng)
        if rng.random() < 0.03:  # a client of its own, connected and closed around one call
            started = time.monotonic()
            try:
                with mcp_lite.connect(
                    target_of[transport], timeout=10.0, max_message_size=MAX_MESSAGE, name=f"own-{transport}"
                ) as own:
                    run_call(own, op, transport, stats)
            except McpError:
                stats.add("failed")
            except Exception as exc:
                stats.add("unexpected", f"connect {transport}: {type(exc).__name__}: {exc}")
            if time.monotonic() - started > op.timeout + 10.0 + 2 * OVERDUE_SLACK:
                stats.add("overdue", f"own {transport} client took {time.monotonic() - started:.1f} s")
        else:
            run_call(clients[transport], op, transport, stats)


# --- the process's own resources ----------------------------------------------------------------


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def descendants(root: int) -> set[int]:
    """Every process below ``root`` (from /proc: pid -> parent)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _is_watcher(pid: int) -> bool:
    """The stdio server watcher mcp_lite starts once per process (``transports/_reaper``): it
    lives as long as this process, by design, so it is no leftover."""
    from mcp_lite.transports._reaper import MARKER

    with contextlib.suppress(OSError):
        return MARKER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return False


def client_children(peers: dict[str, Peer]) -> int:
    mine = descendants(os.getpid())
    for peer in peers.values():
        if peer.proc is not None:
            mine -= {peer.proc.pid} | descendants(peer.proc.pid)
    return len([pid for pid in mine if not _is_watcher(pid)])


def sample(peers: dict[str, Peer]) -> dict[str, float]:
    return {
        "rss": rss_mb(),
        "threads": len(os.listdir("/proc/self/task")),
        "fds": len(os.listdir("/proc/self/fd")),
        "children": client_children(peers),
    }


# --- the run ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 600)))
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument(
        "--transports", default="stdio,ws,http,sse,fault", help="a subset, to find what grows"
    )
    parser.add_argument(
        "--tracemalloc", action="store_true", help="print where memory grew after the warm-up"
    )
    args = parser.parse_args()
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(10)
    # Never hang the caller: past the run's length + 180 s, dump every thread's stack, stop
    # the servers and exit. SIGTERM (e.g. from `timeout`) also stops the servers first.
    faulthandler.dump_traceback_later(args.seconds + 180, exit=False)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    import logging

    log_file = os.environ.get("SOAK_LOG")  # the library's own log, to dig into a failure
    if log_file:
        logging.basicConfig(
            filename=log_file,
            level=logging.DEBUG,
            format="%(relativeCreated)8.0f %(threadName)s %(name)s %(message)s",
        )
    else:
        logging.basicConfig(level=logging.CRITICAL)  # faults are expected: keep the output ours
    print(f"soak: {args.threads} threads for {args.seconds:.0f} s, mcp_lite {mcp_lite.__version__}, "
          f"compiled kernels: {mcp_lite.USE_EXTENSIONS}", flush=True)
    peers = start_peers()
    atexit.register(lambda: [peer.stop() for peer in peers.values()])

    def give_up() -> None:
        for peer in peers.values():
            with contextlib.suppress(Exception):
                peer.stop()
        os._exit(1)

    hang_guard = threading.Timer(args.seconds + 181, give_up)
    hang_guard.daemon = True
    hang_guard.start()
    wanted = set(args.transports.split(","))
    target_of = {name: t for name, t in targets(peers).items() if name in wanted}
    baseline = sample(peers)
    clients = {
        name: mcp_lite.connect(target, timeout=10.0, max_message_size=MAX_MESSAGE, name=name)
        for name, target in target_of.items()
    }
    stats = Stats()
    stop = threading.Event()
    threads = [
        threading.Thread(target=worker, args=(i, clients, target_of, stats, stop), name=f"soak-{i}", daemon=True)
        for i in range(args.threads)
    ]

    def chaos() -> None:
        rng = random.Random(99)
        remote = [p for p in peers.values()]
        while not stop.wait(rng.uniform(20, 40)):
            peer = rng.choice(remote)
            with contextlib.suppress(Exception):
                peer.restart()
                stats.add(f"restart {peer.name}")

    def watchdog() -> None:
        """Dump every thread's stack (faulthandler: no interpreter locks taken) the first
        time a call is overdue, to show where it is stuck."""
        while not stop.wait(1.0):
            now = time.monotonic()
            for began, timeout, what in list(stats.inflight.values()):
                if now - began > timeout + OVERDUE_SLACK and stats.stacks_shown == 0:
                    stats.stacks_shown += 1
                    print(f"overdue: {what} after {now - began:.1f} s; all threads:", flush=True)
                    faulthandler.dump_traceback(file=sys.stdout, all_threads=True)

    threading.Thread(target=watchdog, name="soak-watchdog", daemon=True).start()
    chaos_thread = threading.Thread(target=chaos, name="soak-chaos", daemon=True)
    started = time.monotonic()
    for t in threads:
        t.start()
    chaos_thread.start()

    warmup_end = started + args.seconds * WARMUP_FRACTION
    last_third = started + args.seconds * (1 - WARMUP_FRACTION)
    rss_after_warmup: float | None = None
    rss_peak_middle = rss_peak = 0.0
    print(f"{'t':>5} {'answered':>9} {'failed':>7} {'mismatch':>8} {'unexp':>6} {'overdue':>7} "
          f"{'RSS MB':>7} {'threads':>7} {'fds':>5} {'children':>8}", flush=True)
    while True:
        now = time.monotonic()
        if now - started >= args.seconds:
            break
        time.sleep(min(10.0, args.seconds - (now - started)))
        s = sample(peers)
        if time.monotonic() >= warmup_end:
            if rss_after_warmup is None:
                rss_after_warmup = s["rss"]
                if args.tracemalloc:
                    warm_snapshot = tracemalloc.take_snapshot()
            if time.monotonic() < last_third:
                rss_peak_middle = max(rss_peak_middle, s["rss"])
            rss_peak = max(rss_peak, s["rss"])
        c = stats.counts
        print(f"{time.monotonic() - started:5.0f} {c['answered']:9d} {c['failed']:7d} {c['mismatched']:8d} "
              f"{c['unexpected']:6d} {c['overdue']:7d} {s['rss']:7.1f} {s['threads']:7.0f} "
              f"{s['fds']:5.0f} {s['children']:8.0f}", flush=True)

    if args.tracemalloc and rss_after_warmup is not None:
        print("where Python memory grew after the warm-up:")
        for stat in tracemalloc.take_snapshot().compare_to(warm_snapshot, "traceback")[:8]:
            print(f"  {stat.size_diff / 1024:+.0f} KiB in {stat.count_diff:+d} blocks:")
            for line in stat.traceback.format()[-6:]:
                print("    " + line)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    stuck = [t.name for t in threads if t.is_alive()]
    chaos_thread.join(timeout=60)
    for client in clients.values():
        client.close()
    clients.clear()
    gc.collect()
    # Threads finishing bounded work (a socket watchdog waiting out the last deadline, idle
    # workers) may take up to the longest call timeout (15 s) plus a few seconds to end.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        end = sample(peers)
        if end["threads"] <= baseline["threads"] and end["children"] == 0 and end["fds"] <= baseline["fds"] + 2:
            break
        time.sleep(0.2)
        gc.collect()
    for peer in peers.values():
        peer.stop()

    c = stats.counts
    growth = (rss_peak - rss_peak_middle) if rss_peak_middle else 0.0
    print(f"\nsoak result: {c['answered']} answered, {c['failed']} failed (clear errors), "
          f"{c['mismatched']} mismatched, {c['unexpected']} unexpected, {c['overdue']} overdue; "
          f"restarts: {', '.join(f'{k[8:]} {v}' for k, v in sorted(c.items()) if k.startswith('restart'))}")
    print(f"RSS {rss_after_warmup or 0:.1f} MB after warm-up, peak {rss_peak_middle:.1f} MB in the middle "
          f"third, {rss_peak:.1f} MB after (growth {growth:+.1f} MB, "
          f"limit {RSS_GROWTH_LIMIT_MB:.0f}); at the end {end['threads']:.0f} threads (start "
          f"{baseline['threads']:.0f}), {end['fds']:.0f} fds (start {baseline['fds']:.0f}), "
          f"{end['children']:.0f} client child processes")
    failures = []
    if c["mismatched"]:
        failures.append(f"{c['mismatched']} mismatched answers")
    if c["unexpected"]:
        failures.append(f"{c['unexpected']} unexpected exceptions")
    if c["overdue"]:
        failures.append(f"{c['overdue']} calls outlived their timeout by > {OVERDUE_SLACK:.0f} s")
    if stuck:
        failures.append(f"worker threads stuck: {', '.join(stuck)}")
    if growth > RSS_GROWTH_LIMIT_MB:
        failures.append(f"RSS grew {growth:.1f} MB from the middle third to the last")
    if end["threads"] > baseline["threads"]:
        names = sorted(t.name for t in threading.enumerate() if t is not threading.main_thread())
        failures.append(f"{end['threads'] - baseline['threads']:.0f} threads left {names}")
    if end["fds"] > baseline["fds"] + 2:
        failures.append(f"{end['fds'] - baseline['fds']:.0f} file descriptors left")
    if end["children"]:
        failures.append(f"{end['children']:.0f} child processes left")
    for problem in stats.problems[:20]:
        print("  problem:", problem)
    if failures:
        print("SOAK FAILED: " + "; ".join(failures))
        return 1
    print("soak passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
