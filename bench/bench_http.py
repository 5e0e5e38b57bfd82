"""Remote-transport benchmark: mcp_lite vs the official SDK client over Streamable HTTP.

    python bench/bench_http.py          # this section alone, with its targets
    (bench/run.py calls ``run(print=..., targets=...)``)

The server is ``bench/http_echo_server.py`` (stdlib ``ThreadingHTTPServer``, JSON answers,
keep-alive, a legacy handshake-era server), started once for the section on 127.0.0.1 with a
free port; nothing here talks to any other address.

How a figure is taken (as in ``bench_stdio.py``): each round is a fresh client process
(``bench_http.py --round KIND URL SERVER_PID N``) that imports its client, connects, warms
up, then times N operations and prints the timing as JSON; the kinds take turns round by
round and each figure is the median over the rounds. Client CPU is ``time.process_time()``
of the round's process (all threads). The server's CPU over the same timed section is read
from ``/proc/PID/stat`` (10 ms ticks, so a rough figure: it shows when the server, not the
client, is the limit). Each SDK round is one ``asyncio.run`` (connect, warm up, timed part).

- sequential: ``call_tool("echo", {"text": "0123456789"})`` one after the other. mcp_lite
  with ``protocol_version="auto"`` (the default: a 2026-07-28 ``server/discover`` probe, then
  the ``initialize`` handshake) and pinned to 2025-11-25 (no probe); the SDK with
  ``streamable_http_client`` + ``ClientSession.initialize()``.
- raw: ``bench/raw_http_client.py``, the smallest sync client (one keep-alive
  ``http.client`` connection, stdlib ``json``, answers read on the caller's thread): the
  physical limit, pinned to 2025-11-25 like ``lite-pinned``.
- against the official SDK's own server (``tests/peers/official_server.py http``, uvicorn,
  SSE answers): the same sequential calls by mcp_lite (pinned), the raw client and the SDK.
- concurrent: 8 threads sharing one mcp_lite ``Client`` vs 8 tasks (``asyncio.gather``)
  sharing one SDK ``ClientSession``.
- connect: process CPU (and wall) from before connecting until the session is initialized
  and the first ``tools/list`` has returned. Imports are excluded: a discovery process finds
  which modules a connect loads lazily and every round imports those first (their import CPU
  is shown apart), then times a first connect; then, in the same process, a second connect
  (everything warm). Closing is not timed.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

PY = sys.executable
SERVER = [PY, str(BENCH / "http_echo_server.py"), "--port", "0"]
SDK_SERVER = [PY, str(ROOT / "tests" / "peers" / "official_server.py"), "http", "--port"]
ARGS = {"text": "0123456789"}  # 10-byte argument
PINNED = "2025-11-25"
CONCURRENCY = 8

# Iteration counts, sized for the whole section in well under a minute on 2 cores.
COUNTS = {
    "warmup": 50,  # calls per connection before timing
    "rounds": 5,  # rounds per figure (each a fresh process); the median is shown
    "seq_lite": 1000,
    "seq_sdk": 400,
    "seq_raw": 1000,
    "sdk_server_calls": 300,  # per round against the official SDK's (slower) server
    "conc_lite": 1600,  # total over 8 threads
    "conc_sdk": 800,  # total over 8 tasks
    "connect_rounds": 5,
}


class Timing:
    """Wall and client-CPU seconds for ``calls`` operations, plus the server's CPU seconds."""

    def __init__(self, calls: int, wall: float, cpu: float, server_cpu: float | None = None,
                 **info: Any) -> None:
        self.calls, self.wall, self.cpu, self.server_cpu = calls, wall, cpu, server_cpu
        self.info = info  # protocol version, era, ... (the same in every round)

    per_s = property(lambda self: self.calls / self.wall)
    cpu_us = property(lambda self: self.cpu / self.calls * 1e6)
    wall_ms = property(lambda self: self.wall / self.calls * 1e3)

    @property
    def server_us(self) -> float | None:
        return None if self.server_cpu is None else self.server_cpu / self.calls * 1e6


def _median(values: list[float | None]) -> float | None:
    known = [x for x in values if x is not None]
    return statistics.median(known) if known else None


# --- inside a round process ----------------------------------------------------------------------


def _server_cpu(pid: int) -> float | None:
    """utime + stime of the server process (Linux /proc), in seconds; None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Meter:
    """Times one section: wall, this process's CPU, the server's CPU."""

    def __init__(self, server_pid: int) -> None:
        self.pid = server_pid

    def __enter__(self) -> Meter:
        gc.collect()
        self.s0 = _server_cpu(self.pid)
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        self.cpu = time.process_time() - self.c0
        s1 = _server_cpu(self.pid)
        self.server = None if s1 is None or self.s0 is None else s1 - self.s0

    def result(self, calls: int, **info: Any) -> dict[str, Any]:
        return {"calls": calls, "wall": self.wall, "cpu": self.cpu, "server_cpu": self.server,
                **info}


def _lite_info(client: Any) -> dict[str, Any]:
    return {"version": client.protocol_version, "era": client.session.era}


def _sdk_info(session: Any) -> dict[str, Any]:
    return {"version": session.protocol_version, "era": "handshake"
            if session.initialize_result is not None else "stateless"}


def _lite_connect(url: str, pinned: bool) -> Any:
    import mcp_lite

    return mcp_lite.connect(url, protocol_version=PINNED) if pinned else mcp_lite.connect(url)


def round_seq_lite(url: str, pid: int, n: int, pinned: bool = False) -> dict[str, Any]:
    with _lite_connect(url, pinned) as client:
        call = client.call_tool
        for _ in range(COUNTS["warmup"]):
            call("echo", ARGS)
        with Meter(pid) as m:
            for _ in range(n):
                call("echo", ARGS)
        return m.result(n, **_lite_info(client))


def round_seq_raw(url: str, pid: int, n: int) -> dict[str, Any]:
    from raw_http_client import RawHttpClient

    with RawHttpClient(url, PINNED) as client:
        call = client.call_tool
        for _ in range(COUNTS["warmup"]):
            call("echo", ARGS)
        with Meter(pid) as m:
            for _ in range(n):
                call("echo", ARGS)
        return m.result(n, version=PINNED, era="handshake")


def _sdk_session() -> Any:
    """An async context manager: ``streamable_http_client`` + an initialized ClientSession."""
    from contextlib import asynccontextmanager

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    @asynccontextmanager
    async def open_session(url: str) -> Any:
        async with streamable_http_client(url) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session

    return open_session


def round_seq_sdk(url: str, pid: int, n: int) -> dict[str, Any]:
    open_session = _sdk_session()

    async def main() -> dict[str, Any]:
        async with open_session(url) as session:
            for _ in range(COUNTS["warmup"]):
                await session.call_tool("echo", ARGS)
            with Meter(pid) as m:
                for _ in range(n):
                    await session.call_tool("echo", ARGS)
            return m.result(n, **_sdk_info(session))

    return asyncio.run(main())


def round_threads_lite(url: str, pid: int, n: int) -> dict[str, Any]:
    per = n // CONCURRENCY
    with _lite_connect(url, False) as client:
        for _ in range(COUNTS["warmup"]):
            client.call_tool("echo", ARGS)
        start = threading.Barrier(CONCURRENCY + 1)

        def worker() -> None:
            start.wait()
            for _ in range(per):
                client.call_tool("echo", ARGS)

        threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
        for t in threads:
            t.start()
        with Meter(pid) as m:
            start.wait()
            for t in threads:
                t.join()
        return m.result(per * CONCURRENCY, **_lite_info(client))


def round_gather_sdk(url: str, pid: int, n: int) -> dict[str, Any]:
    open_session = _sdk_session()
    per = n // CONCURRENCY

    async def main() -> dict[str, Any]:
        async with open_session(url) as session:
            for _ in range(COUNTS["warmup"]):
                await session.call_tool("echo", ARGS)

            async def worker() -> None:
                for _ in range(per):
                    await session.call_tool("echo", ARGS)

            with Meter(pid) as m:
                await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
            return m.result(per * CONCURRENCY, **_sdk_info(session))

    return asyncio.run(main())


# Connect: each kind is (base imports, connect-and-list-once returning info).


def _connect_lite(pinned: bool) -> Callable[[str], dict[str, Any]]:
    def once(url: str) -> dict[str, Any]:
        client = _lite_connect(url, pinned)
        client.list_tools()
        return {"client": client, **_lite_info(client)}

    return once


def _connect_sdk_session(url: str) -> dict[str, Any]:
    """``asyncio.run`` of: streamable_http_client + ClientSession.initialize() + list_tools.
    The meter stops inside, right after list_tools (closing is not timed)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, Any] = {}

    async def main() -> None:
        async with streamable_http_client(url) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            out["stop"] = (time.perf_counter(), time.process_time())
            out.update(_sdk_info(session))

    asyncio.run(main())
    return out


def _connect_sdk_client(url: str) -> dict[str, Any]:
    """The SDK's high-level ``mcp.Client(url)`` (mode="auto": it probes server/discover too)."""
    from mcp import Client

    out: dict[str, Any] = {}

    async def main() -> None:
        async with Client(url) as client:
            await client.list_tools()
            out["stop"] = (time.perf_counter(), time.process_time())
            out.update(_sdk_info(client.session))

    asyncio.run(main())
    return out


CONNECTS: dict[str, tuple[tuple[str, ...], Callable[[str], dict[str, Any]]]] = {
    "lite": (("mcp_lite",), _connect_lite(False)),
    "lite-pinned": (("mcp_lite",), _connect_lite(True)),
    "sdk": (("mcp", "mcp.client.streamable_http"), _connect_sdk_session),
    "sdk-client": (("mcp", "mcp.client", "mcp.client.streamable_http"), _connect_sdk_client),
}


def _connect_timed(kind: str, url: str, pid: int) -> dict[str, Any]:
    once = CONNECTS[kind][1]
    with Meter(pid) as m:
        out = once(url)
    stop = out.pop("stop", None)
    if stop is not None:  # the SDK: the meter stopped inside asyncio.run, before closing
        m.wall, m.cpu = stop[0] - m.t0, stop[1] - m.c0
    client = out.pop("client", None)
    if client is not None:
        client.close()
    return m.result(1, **out)


def round_connect_modules(kind: str, url: str) -> list[str]:
    """The modules one connect (+ list + close) of ``kind`` imports beyond its base imports."""
    base, _ = CONNECTS[kind]
    for name in base:
        importlib.import_module(name)
    before = set(sys.modules)
    _connect_timed(kind, url, os.getpid())
    return sorted(set(sys.modules) - before)


def round_connect(kind: str, url: str, pid: int, modules: list[str]) -> dict[str, Any]:
    base, _ = CONNECTS[kind]
    for name in base:
        importlib.import_module(name)
    gc.collect()
    c0 = time.process_time()
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # e.g. a module that only imports in its own context
            pass
    import_cpu = time.process_time() - c0
    first = _connect_timed(kind, url, pid)
    second = _connect_timed(kind, url, pid)
    return {"first": first, "second": second, "import_cpu": import_cpu,
            "modules": len(modules)}


ROUNDS: dict[str, Callable[[str, int, int], dict[str, Any]]] = {
    "seq-lite": round_seq_lite,
    "seq-lite-pinned": lambda url, pid, n: round_seq_lite(url, pid, n, pinned=True),
    "seq-sdk": round_seq_sdk,
    "seq-raw": round_seq_raw,
    "threads-lite": round_threads_lite,
    "gather-sdk": round_gather_sdk,
}


# --- the parent side ------------------------------------------------------------------------------


class EchoServer:
    """``http_echo_server.py`` in a subprocess on a free 127.0.0.1 port."""

    def __enter__(self) -> EchoServer:
        self.proc = subprocess.Popen(SERVER, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     cwd=ROOT)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode().split()
        if len(line) != 3 or not line[2].startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError(f"http_echo_server.py did not start: {line!r}")
        self.url = line[2]
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class SdkServer(EchoServer):
    """The official SDK's own Streamable HTTP server (``official_server.py http``, uvicorn)
    on a free 127.0.0.1 port."""

    def __enter__(self) -> SdkServer:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.proc = subprocess.Popen([*SDK_SERVER, str(port)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                     cwd=ROOT)
        self.url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("official_server.py http did not start")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MCP_LITE_NO_EXTENSIONS", None)
    return env


def _subround(argv: list[str]) -> tuple[Any, str | None]:
    proc = subprocess.run([PY, str(Path(__file__).resolve()), *argv], env=_env(),
                          capture_output=True, cwd=ROOT, timeout=300)
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        return None, " | ".join(tail) or f"exit code {proc.returncode}"
    return json.loads(proc.stdout), None


class Job:
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.outputs: list[dict[str, Any]] = []
        self.error: str | None = None

    def run_round(self) -> None:
        out, self.error = _subround(self.argv)
        if out is not None:
            self.outputs.append(out)


def _interleaved(jobs: dict[str, Job], rounds: int) -> None:
    for _ in range(rounds):
        for job in jobs.values():
            if job.error is None:
                job.run_round()
    for name, job in jobs.items():
        if job.error is not None:
            sys.stderr.write(f"bench_http: {name} failed: {job.error}\n")
            job.outputs.clear()


def _timing(outputs: list[dict[str, Any]]) -> Timing | None:
    if not outputs:
        return None
    info = {k: v for k, v in outputs[0].items() if k not in ("calls", "wall", "cpu",
                                                              "server_cpu")}
    return Timing(outputs[0]["calls"], statistics.median(o["wall"] for o in outputs),
                  statistics.median(o["cpu"] for o in outputs),
                  _median([o["server_cpu"] for o in outputs]), **info)


def measure_calls(server: EchoServer) -> dict[str, Timing | None]:
    c, pid = COUNTS, str(server.proc.pid)

    def job(kind: str, n: int) -> Job:
        return Job(["--round", kind, server.url, pid, str(n)])

    jobs = {
        "lite": job("seq-lite", c["seq_lite"]),
        "lite-pinned": job("seq-lite-pinned", c["seq_lite"]),
        "raw": job("seq-raw", c["seq_raw"]),
        "sdk": job("seq-sdk", c["seq_sdk"]),
        "threads": job("threads-lite", c["conc_lite"]),
        "gather": job("gather-sdk", c["conc_sdk"]),
    }
    _interleaved(jobs, c["rounds"])
    return {name: _timing(j.outputs) for name, j in jobs.items()}


def measure_sdk_server() -> dict[str, Timing | None]:
    """Sequential calls against the official SDK's own server: mcp_lite, raw, SDK."""
    n = str(COUNTS["sdk_server_calls"])
    try:
        server = SdkServer().__enter__()
    except (OSError, RuntimeError) as exc:
        sys.stderr.write(f"bench_http: the SDK server did not start: {exc}\n")
        return {"lite": None, "raw": None, "sdk": None}
    try:
        pid = str(server.proc.pid)
        jobs = {
            "lite": Job(["--round", "seq-lite-pinned", server.url, pid, n]),
            "raw": Job(["--round", "seq-raw", server.url, pid, n]),
            "sdk": Job(["--round", "seq-sdk", server.url, pid, n]),
        }
        _interleaved(jobs, COUNTS["rounds"])
    finally:
        server.__exit__()
    return {name: _timing(j.outputs) for name, j in jobs.items()}


class ConnectFigures:
    def __init__(self, outputs: list[dict[str, Any]]) -> None:
        self.first = _timing([o["first"] for o in outputs])
        self.second = _timing([o["second"] for o in outputs])
        self.import_cpu = statistics.median(o["import_cpu"] for o in outputs)
        self.modules = outputs[0]["modules"]


def measure_connect(server: EchoServer) -> dict[str, ConnectFigures | None]:
    pid = str(server.proc.pid)
    jobs: dict[str, Job] = {}
    for kind in CONNECTS:
        modules, error = _subround(["--modules", kind, server.url])
        if error is not None:
            sys.stderr.write(f"bench_http: connect {kind} failed: {error}\n")
            continue
        jobs[kind] = Job(["--connect", kind, server.url, pid, json.dumps(modules)])
    _interleaved(jobs, COUNTS["connect_rounds"])
    return {kind: ConnectFigures(jobs[kind].outputs) if kind in jobs and jobs[kind].outputs
            else None for kind in CONNECTS}


# --- printing ------------------------------------------------------------------------------------


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _us(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0f}"


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1e3:.2f}"


class _OwnTargets:
    def __init__(self, print: Callable[..., None]) -> None:
        self.print, self.rows = print, []

    def ratio(self, what: str, value: float | None, target: str, limit: float) -> None:
        ok = None if value is None else (value <= limit if "<=" in target else value >= limit)
        self.rows.append((what, value, target, ok))

    def show(self) -> None:
        self.print("\n== Targets (Streamable HTTP) ==")
        for what, value, target, ok in self.rows:
            verdict = "n/a" if ok is None else ("met" if ok else "NOT met")
            shown = "n/a" if value is None else f"{value:.2f}x"
            self.print(f"  {what:<52} {shown:>9}   target {target:<9} {verdict}")


def run(print: Callable[..., None] = print, targets: Any = None) -> None:
    """Start the echo server, measure everything, print the tables (and add the targets to
    ``targets``, an object with ``ratio(what, value, target, limit)``; own table if None)."""
    started = time.perf_counter()
    own = targets is None
    if own:
        targets = _OwnTargets(print)
    c = COUNTS
    with EchoServer() as server:
        print(f"  server: bench/http_echo_server.py at {server.url} (stdlib ThreadingHTTPServer, "
              f"JSON answers, keep-alive; handshake era; a request before initialize gets "
              f"HTTP 400 / -32600)")
        print(f"  each figure: the median of {c['rounds']} rounds, each a fresh client process "
              f"(connect, warm up {c['warmup']} calls, time it), clients taking turns; "
              f"argument {json.dumps(ARGS)}.\n  Client CPU = time.process_time() of the client "
              f"process; server CPU from /proc (10 ms ticks; rough)")
        calls = measure_calls(server)
        connects = measure_connect(server)
    on_sdk = measure_sdk_server()

    seq_rows = (
        ("lite", "mcp_lite connect(url), protocol_version='auto'"),
        ("lite-pinned", f"mcp_lite connect(url, protocol_version='{PINNED}')"),
        ("raw", "raw http.client client (bench/raw_http_client.py)"),
        ("sdk", "official SDK streamable_http_client + ClientSession"),
    )
    print("\n  -- sequential tools/call --")
    print(f"  {'client':<52} {'protocol':<10} {'calls':>5} {'calls/s':>8} {'ms/call':>8} "
          f"{'CPU us/call':>11} {'server us/call':>14}")
    for key, name in seq_rows:
        t = calls[key]
        if t is None:
            print(f"  {name:<52} n/a")
            continue
        print(f"  {name:<52} {t.info.get('version', '?'):<10} {t.calls:>5} {t.per_s:>8.0f} "
              f"{t.wall_ms:>8.3f} {t.cpu_us:>11.0f} {_us(t.server_us):>14}")
    lite, sdk, pinned = calls["lite"], calls["sdk"], calls["lite-pinned"]
    if lite and sdk:
        print(f"  mcp_lite vs SDK: {lite.per_s / sdk.per_s:.2f}x the calls/s, "
              f"{lite.cpu_us / sdk.cpu_us:.2f}x the client CPU per call")
    if lite and pinned:
        print(f"  pinned vs auto: {pinned.per_s / lite.per_s:.2f}x the calls/s (the probe is "
              f"paid once, at connect: see the connect table)")
    raw = calls["raw"]
    if pinned and raw:
        print(f"  mcp_lite (pinned) vs raw http.client: {pinned.per_s / raw.per_s:.2f}x the "
              f"calls/s, {pinned.cpu_us / raw.cpu_us:.2f}x the client CPU per call")
    if raw and sdk:
        print(f"  raw http.client vs SDK: {raw.per_s / sdk.per_s:.2f}x the calls/s")

    print(f"\n  -- sequential tools/call against the official SDK's own server "
          f"(tests/peers/official_server.py http: uvicorn, SSE answers; "
          f"{c['sdk_server_calls']} calls a round) --")
    print(f"  {'client':<52} {'protocol':<10} {'calls':>5} {'calls/s':>8} {'ms/call':>8} "
          f"{'CPU us/call':>11} {'server us/call':>14}")
    for key, name in (("lite", f"mcp_lite connect(url, protocol_version='{PINNED}')"),
                      ("raw", "raw http.client client"),
                      ("sdk", "official SDK streamable_http_client + ClientSession")):
        t = on_sdk[key]
        if t is None:
            print(f"  {name:<52} n/a")
            continue
        print(f"  {name:<52} {t.info.get('version', '?'):<10} {t.calls:>5} {t.per_s:>8.0f} "
              f"{t.wall_ms:>8.3f} {t.cpu_us:>11.0f} {_us(t.server_us):>14}")
    s_lite, s_raw, s_sdk = on_sdk["lite"], on_sdk["raw"], on_sdk["sdk"]
    if s_lite and s_raw and s_sdk:
        print(f"  mcp_lite vs raw http.client: {s_lite.per_s / s_raw.per_s:.2f}x the calls/s; "
              f"vs SDK: {s_lite.per_s / s_sdk.per_s:.2f}x; raw vs SDK: "
              f"{s_raw.per_s / s_sdk.per_s:.2f}x")

    print(f"\n  -- {CONCURRENCY} concurrent callers on one connection --")
    print(f"  {'client':<52} {'protocol':<10} {'calls':>5} {'calls/s':>8} {'':>8} "
          f"{'CPU us/call':>11} {'server us/call':>14}")
    for key, name in (("threads", f"mcp_lite, {CONCURRENCY} threads sharing one Client"),
                      ("gather", f"official SDK, {CONCURRENCY} tasks (asyncio.gather), one "
                                 f"session")):
        t = calls[key]
        if t is None:
            print(f"  {name:<52} n/a")
            continue
        print(f"  {name:<52} {t.info.get('version', '?'):<10} {t.calls:>5} {t.per_s:>8.0f} "
              f"{'':>8} {t.cpu_us:>11.0f} {_us(t.server_us):>14}")
    threads, gather = calls["threads"], calls["gather"]
    if threads and gather:
        print(f"  mcp_lite vs SDK: {threads.per_s / gather.per_s:.2f}x the calls/s, "
              f"{threads.cpu_us / gather.cpu_us:.2f}x the client CPU per call")

    print(f"\n  -- connect: connect + initialize (+ probe) + first tools/list, client process "
          f"CPU (median of {c['connect_rounds']}) --")
    print(f"  {'client':<52} {'protocol':<10} {'1st CPU ms':>10} {'1st wall ms':>11} "
          f"{'2nd CPU ms':>10} {'lazy imports (excluded)':>24}")
    names = {
        "lite": "mcp_lite connect(url) + list_tools(), 'auto' (probe)",
        "lite-pinned": f"mcp_lite, protocol_version='{PINNED}' (no probe)",
        "sdk": "official SDK streamable_http_client + ClientSession",
        "sdk-client": "  SDK mcp.Client(url), mode='auto' (probe; info)",
    }
    for kind, name in names.items():
        f = connects[kind]
        if f is None or f.first is None or f.second is None:
            print(f"  {name:<52} n/a")
            continue
        lazy = f"{f.modules} modules, {f.import_cpu * 1e3:.0f} ms"
        print(f"  {name:<52} {f.first.info.get('version', '?'):<10} {_ms(f.first.cpu):>10} "
              f"{_ms(f.first.wall):>11} {_ms(f.second.cpu):>10} {lazy:>24}")
    short = {"lite": "mcp_lite auto", "lite-pinned": "mcp_lite pinned", "sdk": "SDK session",
             "sdk-client": "SDK mcp.Client auto"}
    eras = [f"{short[k]} {f.first.info.get('version')} ({f.first.info.get('era')} era)"
            for k, f in connects.items() if f is not None and f.first is not None]
    print("  negotiated: " + "; ".join(eras))
    lc, sc, pc = connects["lite"], connects["sdk"], connects["lite-pinned"]
    first_ratio = _div(lc and lc.first and lc.first.cpu, sc and sc.first and sc.first.cpu)
    if first_ratio is not None and lc and sc and lc.second and sc.second:
        print(f"  mcp_lite vs SDK connect CPU: {first_ratio:.3f}x (first connect), "
              f"{lc.second.cpu / sc.second.cpu:.3f}x (second connect)")
    if lc and pc and lc.first and pc.first:
        print(f"  cost of the server/discover probe (auto - pinned, first connect): "
              f"{(lc.first.cpu - pc.first.cpu) * 1e3:+.2f} ms CPU, "
              f"{(lc.first.wall - pc.first.wall) * 1e3:+.2f} ms wall")

    targets.ratio("HTTP sequential calls/s vs SDK", _div(lite and lite.per_s,
                                                         sdk and sdk.per_s), ">= 4x", 4)
    targets.ratio("HTTP calls/s vs raw http.client (stdlib server)",
                  _div(pinned and pinned.per_s, raw and raw.per_s), ">= 0.7x", 0.7)
    targets.ratio("HTTP calls/s vs raw http.client (SDK's server)",
                  _div(s_lite and s_lite.per_s, s_raw and s_raw.per_s), ">= 0.9x", 0.9)
    targets.ratio("HTTP calls/s vs SDK client (SDK's server)",
                  _div(s_lite and s_lite.per_s, s_sdk and s_sdk.per_s), ">= 1x", 1.0)
    targets.ratio(f"HTTP {CONCURRENCY}-caller calls/s vs SDK",
                  _div(threads and threads.per_s, gather and gather.per_s), ">= 4x", 4)
    targets.ratio("HTTP connect CPU vs SDK (first connect)", first_ratio, "<= 0.1x", 0.1)
    if own:
        targets.show()
    print(f"  (Streamable HTTP section: {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    argv = sys.argv[1:]
    if len(argv) == 5 and argv[0] == "--round" and argv[1] in ROUNDS:
        print(json.dumps(ROUNDS[argv[1]](argv[2], int(argv[3]), int(argv[4]))))
    elif len(argv) == 3 and argv[0] == "--modules" and argv[1] in CONNECTS:
        print(json.dumps(round_connect_modules(argv[1], argv[2])))
    elif len(argv) == 5 and argv[0] == "--connect" and argv[1] in CONNECTS:
        print(json.dumps(round_connect(argv[1], argv[2], int(argv[3]), json.loads(argv[4]))))
    elif not argv:
        run()
    else:
        print("usage: bench_http.py (the whole section) | --round KIND URL SERVER_PID N | "
              "--modules KIND URL | --connect KIND URL SERVER_PID MODULES_JSON",
              file=sys.stderr)
        sys.exit(2)
