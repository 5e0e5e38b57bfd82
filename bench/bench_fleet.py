"""Fleet benchmarks: many servers in one process, the gateway, many processes, and load-proof
per-call figures of the sequential stdio row.

    make bench-fleet                 # or: .venv/bin/python bench/bench_fleet.py
    (bench/run.py calls ``run(print=..., targets=...)``)

Every server is ``tests/peers/fault_server.py echo`` started as ``python -S`` (no site
import: a smaller, quicker peer), with a marker argument unique to the run so its processes
can be counted in ``/proc``; nothing here talks to any address but a Unix socket in /tmp.
Every figure is measured in this run; counts are printed; nothing is asserted. Each part runs
in fresh processes (``bench_fleet.py --round KIND ...``), as in ``bench_stdio.py``.

How each figure is taken:

1. **A Hub of 200 stdio servers** vs the official SDK holding 200 stdio sessions. mcp_lite:
   ``Hub(config)`` of 200 entries, ``connect_all()``. SDK: one ``asyncio.run`` entering, one
   after the other, ``stdio_client`` + ``ClientSession`` + ``initialize()`` for each server on
   one ``AsyncExitStack`` (the SDK has no hub; this is the plain way to hold 200 sessions).
   (``connect_all`` starts 3 local servers at a time; the SDK's loop, one at a time.)
   *connect*: wall seconds from before the first connect until all are initialized; *CPU*:
   ``time.process_time()`` of the client process over the same span (all threads, servers
   not counted). Then the process waits until its thread count has not changed for 0.5 s
   (at most 5 s): *threads* is ``/proc/self/task`` then (every thread of the process, the
   main thread included). *client RSS*: ``VmRSS`` of the client process, also before the
   first connect (imports done) so the growth per session shows. *helper*: processes the
   client started that are not servers (mcp_lite's reaper, a ``/bin/sh``). *servers*:
   how many processes carry the run's marker and the sum of their ``VmRSS`` (pages shared
   between them counted in each) and of their ``Pss`` (``/proc/PID/smaps_rollup``: shared
   pages split between the sharers, so the sum is what they really take).
2. **A call through the gateway vs the same call made directly.** A gateway
   (``python -m mcp_lite gateway --socket ... --config ...``) runs one echo server; a worker
   process makes ``Hub(config, gateway="unix://...")`` and times sequential
   ``hub.call_tool("mcp__echo__echo", {"text": "0123456789"})`` after a warm-up; the direct
   figure is the same Hub code with ``gateway=False`` (it runs the server over stdio itself).
   For information, the same calls by a plain Client (no Hub): ``mcp_lite.connect`` on the
   server command (stdio) and on ``unix://.../servers/echo/mcp`` (the gateway's endpoint),
   which tells the Hub's share from the transport's. Rounds alternate and each figure is
   the median over the rounds. *ms/call* is wall time; *client CPU* is the worker's
   ``process_time()``; *gateway CPU* is the gateway process's
   utime+stime from ``/proc/PID/stat`` over the timed section (10 ms ticks: rough). The
   added time is the difference of the medians, next to the goal (<= 0.3 ms).
3. **8 processes through one gateway vs 8 processes with their own servers**, each
   process a Hub of the same 3 stdio servers that has called each server's tool once (every
   answer checked) and then holds its connections. Measured while all 8 hold them: server
   processes on the machine (marker count), and RSS (and PSS) of the 8 client processes,
   their helper processes, the gateway process (with its helper) and the servers; the total
   is all of them. After the run (clients closed, gateway sent SIGTERM) the marker count is
   shown again: it should be 0.
4. **Per call, the sequential stdio row** (``bench_stdio.py``'s ``mcp_lite.connect`` on
   ``fault_server.py echo``, 10-byte argument) for mcp_lite and the raw client
   (``bench/raw_client.py``), figures that do not swing with the load: *system calls* of the
   client process (every thread; the server is another process and not counted), counted by
   ``perf stat -e raw_syscalls:sys_enter -p PID`` attached to the round's own process (or,
   without perf, ``strace -f -c -p PID``), once around ``SYSCALL_SHORT`` and once around
   ``SYSCALL_LONG`` calls: the difference over the difference of calls is one call's, the
   attach and detach cancel out. *context switches*: ``getrusage(RUSAGE_SELF)``
   ``ru_nvcsw`` (voluntary: the thread blocked) and ``ru_nivcsw`` (involuntary: preempted;
   this one grows with the load) summed over every thread of the process, per call over a
   run without a tracer attached. *instructions*: ``bench/instructions.py`` (callgrind, the
   calling thread's user-space instructions); about a minute of valgrind, so skipped when
   ``MCP_LITE_BENCH_NO_VALGRIND=1`` or valgrind is missing. Wall and CPU per call of the same
   untraced run are shown for scale (these do swing with the load).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

PY = sys.executable
FAULT_SERVER = str(ROOT / "tests" / "peers" / "fault_server.py")
ARGS = {"text": "0123456789"}  # 10-byte argument, as the sequential stdio row

# Iteration counts, sized for the whole module in about 2-3 minutes on 2 cores.
COUNTS = {
    "hub_servers": 200,  # servers of part 1
    "gw_warmup": 100,  # calls per worker before timing (part 2)
    "gw_calls": 1000,  # timed calls per round (part 2)
    "gw_rounds": 3,  # rounds per figure, alternating gateway / direct; the median is shown
    "fleet_procs": 8,  # client processes (part 3)
    "fleet_servers": 3,  # stdio servers each is configured with (part 3)
    "pc_warmup": 200,  # calls before counting (part 4)
    "pc_calls": 2000,  # calls of the untraced run: context switches, wall, CPU (part 4)
    "syscall_short": 500,  # calls of the two traced runs (part 4)
    "syscall_long": 2500,
}
if os.environ.get("MCP_LITE_BENCH_QUICK"):  # a smoke run of the bench itself, figures meaningless
    COUNTS.update(hub_servers=20, gw_warmup=20, gw_calls=100, gw_rounds=1, fleet_procs=2,
                  pc_warmup=20, pc_calls=200, syscall_short=100, syscall_long=300)
GATEWAY_GOAL_MS = 0.3


def _server(marker: str) -> dict[str, Any]:
    """A config entry of the echo peer; ``marker`` (an ignored argument) names the run."""
    return {"command": PY, "args": ["-S", FAULT_SERVER, "echo", marker]}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MCP_LITE_GATEWAY", None)  # every process here says which path it takes
    env.pop("MCP_LITE_NO_EXTENSIONS", None)
    return env


# --- /proc -----------------------------------------------------------------------------------


def _kb(pid: int | str, field: str, name: str = "status") -> int:
    """A ``kB`` field of /proc/PID/status (or smaps_rollup); 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/{name}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _memory(pids: list[int]) -> tuple[int, int]:
    """(sum of VmRSS, sum of Pss) of ``pids``, in kB."""
    return (sum(_kb(p, "VmRSS") for p in pids),
            sum(_kb(p, "Pss", "smaps_rollup") for p in pids))


def _processes() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, command line)} of every process on the machine."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        out[int(entry)] = (ppid, cmdline)
    return out


def _marked(marker: str) -> list[int]:
    """Processes on the machine whose command line carries ``marker``."""
    return [pid for pid, (_, cmd) in _processes().items() if marker in cmd]


def _descendants(root: int, procs: dict[int, tuple[int, str]] | None = None) -> list[int]:
    procs = _processes() if procs is None else procs
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def _helpers(root: int, marker: str) -> list[int]:
    """Processes below ``root`` that are not servers (mcp_lite's reaper)."""
    procs = _processes()
    return [p for p in _descendants(root, procs) if marker not in procs[p][1]]


def _settled_threads() -> int:
    """Threads of this process once the count has not changed for 0.5 s (at most 5 s)."""
    last, since, end = -1, time.monotonic(), time.monotonic() + 5
    while time.monotonic() < end:
        now = len(os.listdir("/proc/self/task"))
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 0.5:
            break
        time.sleep(0.05)
    return last


def _cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` in clock ticks (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


# --- 1. a Hub of 200 stdio servers vs 200 SDK sessions (rounds) --------------------------------


def round_hub(n: int) -> dict[str, Any]:
    from mcp_lite import Hub

    marker = f"mcpbench-{uuid.uuid4().hex[:10]}"
    config = {"mcpServers": {f"s{i}": _server(marker) for i in range(n)}}
    rss0 = _kb("self", "VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    with Hub(config, gateway=False) as hub:
        states = hub.connect_all()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        threads = _settled_threads()
        answer = hub.call_tool(f"mcp__s{n - 1}__echo", ARGS).text
        servers = _marked(marker)
        out = {"connected": sum(s.state == "connected" for s in states.values()),
               "wall": wall, "cpu": cpu, "threads": threads, "rss0": rss0,
               "rss": _kb("self", "VmRSS"), "servers": len(servers),
               "server_mem": _memory(servers),
               "helper_mem": _memory(_helpers(os.getpid(), marker)),
               "answer_ok": answer == ARGS["text"]}
    return out


def round_sdk(n: int) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    marker = f"mcpbench-{uuid.uuid4().hex[:10]}"
    entry = _server(marker)
    params = StdioServerParameters(command=entry["command"], args=entry["args"])

    async def main() -> dict[str, Any]:
        rss0 = _kb("self", "VmRSS")
        t0, c0 = time.perf_counter(), time.process_time()
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for _ in range(n):
                read, write = await stack.enter_async_context(stdio_client(params))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                sessions.append(session)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            threads = _settled_threads()  # blocks the loop: the SDK's threads run on
            result = await sessions[-1].call_tool("echo", ARGS)
            servers = _marked(marker)
            return {"connected": len(sessions), "wall": wall, "cpu": cpu, "threads": threads,
                    "rss0": rss0, "rss": _kb("self", "VmRSS"), "servers": len(servers),
                    "server_mem": _memory(servers),
                    "helper_mem": _memory(_helpers(os.getpid(), marker)),
                    "answer_ok": getattr(result.content[0], "text", None) == ARGS["text"]}

    return asyncio.run(main())


# --- 2. a call through the gateway vs direct (rounds) -----------------------------------------


def round_call(config_path: str, gateway: str, gateway_pid: int, n: int) -> dict[str, Any]:
    from mcp_lite import Hub

    config = json.loads(Path(config_path).read_text())
    with contextlib.ExitStack() as stack:
        if gateway.startswith("client:"):  # a plain Client, no Hub: the gateway's or stdio
            import mcp_lite

            entry = config["mcpServers"]["echo"]
            target = gateway.removeprefix("client:")
            client = stack.enter_context(mcp_lite.connect(
                [entry["command"], *entry["args"]] if target == "direct"
                else target + "/servers/echo/mcp"))
            call: Callable[[], object] = lambda: client.call_tool("echo", ARGS)  # noqa: E731
            via = "local" if target == "direct" else "gateway"
        else:
            hub = stack.enter_context(
                Hub(config, gateway=False if gateway == "direct" else gateway))
            call = lambda: hub.call_tool("mcp__echo__echo", ARGS)  # noqa: E731
            call()
            via = str(hub.status()["echo"].via)
        for _ in range(COUNTS["gw_warmup"]):
            call()
        g0 = _cpu_ticks(gateway_pid) if gateway_pid else 0
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            call()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        gw_cpu = (_cpu_ticks(gateway_pid) - g0) / os.sysconf("SC_CLK_TCK") if gateway_pid else 0
    return {"calls": n, "wall": wall, "cpu": cpu, "gateway_cpu": gw_cpu, "via": via}


# --- 3. a long-lived fleet worker ----------------------------------------------------------------


def round_worker(config_path: str, gateway: str) -> None:
    """Call each server once, print one JSON line, then hold the connections until stdin
    closes."""
    from mcp_lite import Hub

    config = json.loads(Path(config_path).read_text())
    route: str | bool = False if gateway == "direct" else gateway
    with Hub(config, gateway=route) as hub:
        right = 0
        for name in config["mcpServers"]:
            text = f"{name}-{os.getpid()}"
            right += hub.call_tool(f"mcp__{name}__echo", {"text": text}).text == text
        vias = sorted({str(s.via) for s in hub.status().values()})
        print(json.dumps({"right": right, "via": vias}), flush=True)
        sys.stdin.read()


# --- 4. per-call figures of the sequential stdio row (rounds) ----------------------------------


def _syscall_tool() -> str | None:
    """``perf`` when it can count the syscall tracepoint here, else ``strace``, else None."""
    if shutil.which("perf"):
        probe = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "true"],
                               capture_output=True, text=True, timeout=30)
        if probe.returncode == 0 and "raw_syscalls" in probe.stderr \
                and "not supported" not in probe.stderr:
            return "perf"
    return "strace" if shutil.which("strace") else None


def _count_syscalls(tool: str, loop: Callable[[int], None], n: int) -> int:
    """System calls of this process (every thread) while ``loop(n)`` runs, tracer attached."""
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as out:
        if tool == "perf":
            argv = ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p",
                    str(os.getpid()), "-o", out.name]
        else:
            argv = ["strace", "-f", "-c", "-p", str(os.getpid()), "-o", out.name]
        tracer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # attached by then; what the wait costs is cancelled by the difference
        loop(n)
        time.sleep(0.1)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(30)
        text = Path(out.name).read_text()
    for line in text.splitlines():
        parts = line.split(",") if tool == "perf" else line.split()
        if tool == "perf" and len(parts) > 2 and parts[2].startswith("raw_syscalls"):
            return int(parts[0])
        if tool == "strace" and parts and parts[-1] == "total":
            return int(parts[3])
    raise RuntimeError(f"no count in the {tool} output: {text[-300:]!r}")


def round_percall(kind: str) -> dict[str, Any]:
    import bench_stdio

    c = COUNTS
    with contextlib.ExitStack() as stack:
        if kind == "raw":
            from raw_client import RawClient

            call: Callable[..., object] = stack.enter_context(
                RawClient(bench_stdio.ECHO_SERVER)).call_tool
        else:
            import mcp_lite

            call = stack.enter_context(mcp_lite.connect(bench_stdio.ECHO_SERVER)).call_tool

        def loop(count: int) -> None:
            for _ in range(count):
                call("echo", ARGS)

        loop(c["pc_warmup"])
        threads = len(os.listdir("/proc/self/task"))
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0, c0 = time.perf_counter(), time.process_time()
        loop(c["pc_calls"])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        tool = _syscall_tool()
        syscalls = None
        if tool is not None:
            short = _count_syscalls(tool, loop, c["syscall_short"])
            long = _count_syscalls(tool, loop, c["syscall_long"])
            syscalls = (long - short) / (c["syscall_long"] - c["syscall_short"])
    n = c["pc_calls"]
    return {"calls": n, "wall": wall, "cpu": cpu, "threads": threads,
            "nvcsw": (r1.ru_nvcsw - r0.ru_nvcsw) / n, "nivcsw": (r1.ru_nivcsw - r0.ru_nivcsw) / n,
            "syscalls": syscalls, "tool": tool}


# --- the parent side -----------------------------------------------------------------------------


def _round(*argv: str, timeout: float = 240) -> dict[str, Any]:
    """One round in a fresh process; its JSON line."""
    proc = subprocess.run([PY, str(Path(__file__).resolve()), "--round", *argv], env=_env(),
                          capture_output=True, cwd=ROOT, timeout=timeout)
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise RuntimeError(f"round {' '.join(argv)} failed: " + " | ".join(tail))
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


def _mb(kb: float | None) -> str:
    return "n/a" if kb is None else f"{kb / 1024:.1f} MB"


def _x(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}x"


class _Gateway:
    """``python -m mcp_lite gateway`` on a socket in ``workdir``, for ``config``."""

    def __init__(self, workdir: Path, config: dict[str, Any]) -> None:
        path = workdir / "mcp.json"
        path.write_text(json.dumps(config))
        self.socket = str(workdir / "gw.sock")
        self.proc = subprocess.Popen(
            [PY, "-m", "mcp_lite", "gateway", "--socket", self.socket, "--config", str(path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(workdir),
            env=_env())
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "gateway on" not in line:
            self.stop()
            raise RuntimeError(f"the gateway did not start: {line!r}")
        self.url = f"unix://{self.socket}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def hub_servers(print: Callable[..., Any]) -> dict[str, Any]:
    n = COUNTS["hub_servers"]
    print(f"\n  -- {n} stdio servers in one process (python -S fault_server.py echo; "
          f"one round each) --")
    res = {"lite": _round("hub", str(n)), "sdk": _round("sdk", str(n))}
    print(f"  {'client':<44} {'up':>7} {'connect':>8} {'CPU':>7} {'threads':>7} "
          f"{'RSS before':>10} {'RSS':>9} {'helpers':>8} {'servers RSS / PSS':>22}")
    names = {"lite": f"mcp_lite Hub({n} stdio).connect_all()",
             "sdk": f"official SDK, {n} ClientSession (ExitStack)"}
    for key, name in names.items():
        r = res[key]
        rss, pss = r["server_mem"]
        print(f"  {name:<44} {r['connected']:>3}/{n:<3} {r['wall']:>7.2f}s {r['cpu']:>6.2f}s "
              f"{r['threads']:>7} {_mb(r['rss0']):>10} {_mb(r['rss']):>9} "
              f"{_mb(r['helper_mem'][0]):>8} {r['servers']:>4} x: {_mb(rss):>8} / {_mb(pss)}"
              + ("" if r["answer_ok"] else "   (a call's answer was WRONG)"))
    lite, sdk = res["lite"], res["sdk"]
    grow = {k: r["rss"] - r["rss0"] for k, r in res.items()}
    print(f"  {'mcp_lite / SDK':<44} {'':>7} {_x(lite['wall'], sdk['wall']):>8} "
          f"{_x(lite['cpu'], sdk['cpu']):>7} {_x(lite['threads'], sdk['threads']):>7} "
          f"{'':>10} {_x(lite['rss'], sdk['rss']):>9}   (client RSS growth per session: "
          f"{grow['lite'] / n:.0f} kB vs {grow['sdk'] / n:.0f} kB, "
          f"{_x(grow['lite'], grow['sdk'])})")
    watcher = ("; the SDK's are asyncio's child watcher threads, one per process, on Python "
               "< 3.12" if sys.version_info < (3, 12) else "")
    print(f"  threads per connection: mcp_lite {lite['threads'] / n:.2f}, SDK "
          f"{sdk['threads'] / n:.2f} (whole process / {n}{watcher})")
    return res


def gateway_call(print: Callable[..., Any], targets: Any) -> dict[str, Any]:
    c = COUNTS
    print(f"\n  -- a call through the gateway vs the same call direct (Hub.call_tool, "
          f"{c['gw_calls']} calls per round, median of {c['gw_rounds']} rounds) --")
    workdir = Path(tempfile.mkdtemp(prefix="mcpbf", dir="/tmp"))
    marker = f"mcpbench-{uuid.uuid4().hex[:10]}"
    config = {"mcpServers": {"echo": _server(marker)}}
    gw = _Gateway(workdir, config)
    try:
        how = {"gateway": (gw.url, gw.proc.pid), "direct": ("direct", 0),
               "client": (f"client:{gw.url}", gw.proc.pid),
               "client_direct": ("client:direct", 0)}
        runs: dict[str, list[dict[str, Any]]] = {key: [] for key in how}
        for _ in range(c["gw_rounds"]):
            for key, (route, pid) in how.items():
                runs[key].append(_round("call", str(workdir / "mcp.json"), route, str(pid),
                                        str(c["gw_calls"])))
    finally:
        gw.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    med = {k: {f: statistics.median(r[f] / r["calls"] for r in rs)
               for f in ("wall", "cpu", "gateway_cpu")} for k, rs in runs.items()}
    print(f"  {'path':<58} {'via':>8} {'ms/call':>8} {'client CPU us':>14} {'gateway CPU us':>15}")
    for key, name in (("direct", "direct: Hub(config, gateway=False), stdio to the server"),
                      ("gateway", "gateway: Hub(config, gateway='unix://...')"),
                      ("client_direct", "  info: connect([server command]), no Hub"),
                      ("client", "  info: connect('unix://.../servers/echo/mcp'), no Hub")):
        m = med[key]
        gw_cpu = f"{m['gateway_cpu'] * 1e6:>15.0f}" if how[key][1] else f"{'':>15}"
        print(f"  {name:<58} {runs[key][0]['via']:>8} {m['wall'] * 1e3:>8.3f} "
              f"{m['cpu'] * 1e6:>14.1f} {gw_cpu}")
    added = med["gateway"]["wall"] - med["direct"]["wall"]
    print(f"  the gateway adds {added * 1e3:.3f} ms per call "
          f"({_x(med['gateway']['wall'], med['direct']['wall'])} the direct time; "
          f"goal <= {GATEWAY_GOAL_MS} ms: "
          f"{'met' if added * 1e3 <= GATEWAY_GOAL_MS else 'NOT met'})")
    wall = {key: m["wall"] * 1e3 for key, m in med.items()}
    print(f"  (info: between plain Clients, no Hub, the gateway adds "
          f"{wall['client'] - wall['client_direct']:.3f} ms per call; the Hub's own time per "
          f"call is {wall['direct'] - wall['client_direct']:.3f} ms direct and "
          f"{wall['gateway'] - wall['client']:.3f} ms through the gateway)")
    if targets is not None:
        targets.ms("time the gateway adds to a call", added, f"<= {GATEWAY_GOAL_MS} ms",
                   GATEWAY_GOAL_MS / 1e3)
    return {"median": med, "added": added}


def _fleet(workdir: Path, marker: str, gateway: _Gateway | None) -> dict[str, Any]:
    """``fleet_procs`` workers on the config in ``workdir``; figures while they hold it."""
    c = COUNTS
    procs = [subprocess.Popen(
        [PY, str(Path(__file__).resolve()), "--round", "worker", str(workdir / "mcp.json"),
         gateway.url if gateway else "direct"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=ROOT, env=_env()) for _ in range(c["fleet_procs"])]
    t0 = time.perf_counter()
    try:
        ready = []
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            if not line:
                raise RuntimeError(f"a worker failed: {p.communicate(timeout=10)[1][-500:]!r}")
            ready.append(json.loads(line))
        start = time.perf_counter() - t0
        time.sleep(0.5)
        table = _processes()
        servers = [pid for pid, (_, cmd) in table.items() if marker in cmd]
        clients = [p.pid for p in procs]
        helpers = [h for p in clients for h in _descendants(p, table) if h not in servers]
        gw = []
        if gateway is not None:
            gw = [gateway.proc.pid] + [h for h in _descendants(gateway.proc.pid, table)
                                       if h not in servers]
        mem = {k: _memory(v) for k, v in
               (("clients", clients), ("helpers", helpers), ("gateway", gw),
                ("servers", servers))}
        mem["total"] = (sum(m[0] for m in mem.values()), sum(m[1] for m in mem.values()))
        return {"start": start, "servers": len(servers), "mem": mem,
                "right": sum(r["right"] for r in ready), "via": sorted({v for r in ready
                                                                      for v in r["via"]})}
    finally:
        for p in procs:
            with contextlib.suppress(Exception):
                p.communicate(input="", timeout=20)
            if p.poll() is None:
                p.kill()
                p.wait()


def fleet(print: Callable[..., Any], targets: Any) -> dict[str, Any]:
    c = COUNTS
    n, k = c["fleet_procs"], c["fleet_servers"]
    print(f"\n  -- {n} processes, each a Hub of the same {k} stdio servers that called each "
          f"once and holds them --")
    res: dict[str, dict[str, Any]] = {}
    left: dict[str, int] = {}
    for key in ("gateway", "own"):
        workdir = Path(tempfile.mkdtemp(prefix="mcpbf", dir="/tmp"))
        marker = f"mcpbench-{uuid.uuid4().hex[:10]}"
        config = {"mcpServers": {f"s{i}": _server(marker) for i in range(k)}}
        (workdir / "mcp.json").write_text(json.dumps(config))
        gw = _Gateway(workdir, config) if key == "gateway" else None
        try:
            res[key] = _fleet(workdir, marker, gw)
        finally:
            if gw is not None:
                gw.stop()
            time.sleep(0.3)
            left[key] = len(_marked(marker))
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"  {'':<30} {'start':>7} {'answers':>8} {'via':>8} {'servers':>8} "
          f"{'clients':>9} {'helpers':>8} {'gateway':>8} {'servers':>9} {'total RSS':>10} "
          f"{'total PSS':>10} {'left':>5}")
    for key, name in (("gateway", f"{n} through one gateway"),
                      ("own", f"{n} with their own servers")):
        r, m = res[key], res[key]["mem"]
        print(f"  {name:<30} {r['start']:>6.2f}s {r['right']:>3}/{n * k:<4} "
              f"{','.join(r['via']):>8} {r['servers']:>8} {_mb(m['clients'][0]):>9} "
              f"{_mb(m['helpers'][0]):>8} {_mb(m['gateway'][0]):>8} {_mb(m['servers'][0]):>9} "
              f"{_mb(m['total'][0]):>10} {_mb(m['total'][1]):>10} {left[key]:>5}")
    g, o = res["gateway"], res["own"]
    print(f"  {'gateway / own':<30} {_x(g['start'], o['start']):>7} {'':>8} {'':>8} "
          f"{_x(g['servers'], o['servers']):>8} {'':>9} {'':>8} {'':>8} "
          f"{_x(g['mem']['servers'][0], o['mem']['servers'][0]):>9} "
          f"{_x(g['mem']['total'][0], o['mem']['total'][0]):>10} "
          f"{_x(g['mem']['total'][1], o['mem']['total'][1]):>10}")
    print("  (RSS columns; 'left': server processes still running after the clients closed "
          "and the gateway got SIGTERM)")
    return res


def per_call(print: Callable[..., Any]) -> dict[str, Any]:
    c = COUNTS
    tool = _syscall_tool()
    how = {"perf": "perf stat -e raw_syscalls:sys_enter -p", "strace": "strace -f -c -p",
           None: "no perf or strace: n/a"}[tool]
    print("\n  -- per call, sequential stdio (fault_server.py echo, 10 B): load-proof "
          "figures --")
    print(f"  untraced run: {c['pc_calls']} calls; system calls: ({how}) runs of "
          f"{c['syscall_long']} and {c['syscall_short']} calls, difference / "
          f"{c['syscall_long'] - c['syscall_short']}")
    res = {"raw": _round("percall", "raw"), "lite": _round("percall", "lite")}
    instr: dict[str, int | None] = {"raw": None, "lite": None}
    why = ""
    if os.environ.get("MCP_LITE_BENCH_NO_VALGRIND"):
        why = "skipped (MCP_LITE_BENCH_NO_VALGRIND=1)"
    elif shutil.which("valgrind") is None:
        why = "skipped (valgrind not installed)"
    else:
        import instructions

        failed = []
        with tempfile.TemporaryDirectory() as workdir:
            for kind in instr:
                try:
                    long = _instructions(instructions, kind, instructions.LONG, workdir)
                    short = _instructions(instructions, kind, instructions.SHORT, workdir)
                except (subprocess.SubprocessError, RuntimeError) as exc:
                    failed.append(f"{kind}: {exc}")
                    continue
                instr[kind] = (long - short) // (instructions.LONG - instructions.SHORT)
        why = (f"callgrind, runs of {instructions.LONG} and {instructions.SHORT} calls "
               "(bench/instructions.py)" + "".join(f"; FAILED {f}" for f in failed))
    print(f"  instructions: {why}")
    print(f"  {'client':<40} {'threads':>7} {'syscalls':>9} {'vol cs':>7} {'invol cs':>8} "
          f"{'instructions':>12} {'ms/call':>8} {'CPU us':>7}")
    for key, name in (("raw", "raw sync client (bench/raw_client.py)"),
                      ("lite", "mcp_lite client.call_tool")):
        r = res[key]
        sc = "n/a" if r["syscalls"] is None else f"{r['syscalls']:.2f}"
        ins = "n/a" if instr[key] is None else f"{instr[key]:,}"
        print(f"  {name:<40} {r['threads']:>7} {sc:>9} {r['nvcsw']:>7.2f} {r['nivcsw']:>8.2f} "
              f"{ins:>12} {r['wall'] / r['calls'] * 1e3:>8.3f} {r['cpu'] / r['calls'] * 1e6:>7.1f}")
    lite, raw = res["lite"], res["raw"]
    print(f"  {'mcp_lite / raw':<40} {'':>7} {_x(lite['syscalls'], raw['syscalls']):>9} "
          f"{_x(lite['nvcsw'], raw['nvcsw']):>7} {'':>8} {_x(instr['lite'], instr['raw']):>12} "
          f"{_x(lite['wall'], raw['wall']):>8} {_x(lite['cpu'], raw['cpu']):>7}")
    print("  (per call; vol/invol cs: voluntary and involuntary context switches of the "
          "whole process; threads: of the client process while calling)")
    return {"rows": res, "instructions": instr}


def _instructions(instructions: Any, kind: str, calls: int, workdir: str) -> int:
    """``instructions.count``, once more when a run fails (its stderr tail in the error)."""
    for attempt in (1, 2):
        try:
            return int(instructions.count(kind, calls, workdir))
        except subprocess.CalledProcessError as exc:
            tail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()[-3:]
            if attempt == 2:
                raise RuntimeError(f"valgrind run of {calls} calls: {' | '.join(tail)}") from None
    raise AssertionError("unreachable")


def run(print: Callable[..., Any] = print, targets: Any = None) -> dict[str, Any]:
    """Every part; a part that fails prints its traceback and the others still run."""
    out: dict[str, Any] = {}
    parts: list[tuple[str, Callable[[], Any]]] = [
        ("hub", lambda: hub_servers(print)),
        ("gateway", lambda: gateway_call(print, targets)),
        ("fleet", lambda: fleet(print, targets)),
        ("per_call", lambda: per_call(print)),
    ]
    for name, part in parts:
        started = time.perf_counter()
        try:
            out[name] = part()
        except Exception:  # a broken part must not hide the other figures
            print(f"  part {name!r} failed:")
            print(traceback.format_exc().rstrip())
        print(f"  ({time.perf_counter() - started:.0f} s)")
    return out


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--round":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "worker":
            round_worker(*rest)
            sys.exit(0)
        result = {"hub": lambda: round_hub(int(rest[0])),
                  "sdk": lambda: round_sdk(int(rest[0])),
                  "call": lambda: round_call(rest[0], rest[1], int(rest[2]), int(rest[3])),
                  "percall": lambda: round_percall(rest[0])}[kind]()
        print(json.dumps(result), flush=True)
    else:
        print(f"mcp_lite fleet benchmarks (load average "
              f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())})")
        run()
