"""stdio benchmarks: mcp_lite vs the official SDK client (``mcp``) vs a minimal raw sync client.

Every figure is measured here; ``bench/run.py`` prints them.

How a figure is taken: each *round* runs in a fresh subprocess (``bench_stdio.py --round KIND
SIZE N``) that connects, warms up, then times N operations and prints the timing as JSON. A
fresh process is what a script or a CLI call gets, and it keeps one client's allocator and
import history from leaking into another's figure (measured: a large ``free()`` earlier in the
process changes glibc's mmap threshold and with it mcp_lite's per-call CPU by ~40%). The
kinds take turns round by round, so a change of load on the machine hits all alike; each
figure is the median over its rounds.

Client CPU is ``time.process_time()`` of the round's process (all its threads); the server is
its own subprocess and its CPU is not counted. Each SDK round is one ``asyncio.run`` (connect,
warm up, timed section), the way a user would call it.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

PY = sys.executable
ECHO_SERVER = [PY, str(ROOT / "tests" / "peers" / "fault_server.py"), "echo"]
TOOL_LIST_SERVER = [PY, str(BENCH / "tool_list_server.py"), "1000"]

SMALL = {"text": "0123456789"}  # 10-byte argument
LARGE = {"text": ("abcdefghijklmnopqrstuvwxyz0123456789" * 300)[:10240]}  # 10-kB argument
SIZES = {"10 B": SMALL, "10 kB": LARGE}

# Iteration counts, sized for a whole `make bench` under ~3 minutes on 2 cores.
COUNTS = {
    "warmup": 200,  # calls per connection before timing
    "rounds": 5,  # rounds per figure (each a fresh process); the median is shown
    "seq_raw": 4000,
    "seq_lite": 4000,
    "seq_sdk": 1000,
    "conc_lite": 4000,  # total calls over 8 threads / 8 in flight
    "conc_sdk": 1000,  # total calls over 8 tasks
    "list_calls": 3,  # timed tools/list calls per round (after one warm-up list)
    "proc_runs": 5,  # runs of each whole-process timing
}
CONCURRENCY = 8
if os.environ.get("MCP_LITE_BENCH_QUICK"):  # a smoke run of the bench itself, figures meaningless
    COUNTS.update(warmup=20, rounds=1, seq_raw=200, seq_lite=200, seq_sdk=100, conc_lite=400,
                  conc_sdk=200, list_calls=1, proc_runs=1)


class Timing:
    """Wall and client-CPU seconds for ``calls`` operations."""

    def __init__(self, calls: int, wall: float, cpu: float, items: int | None = None) -> None:
        self.calls, self.wall, self.cpu = calls, wall, cpu
        self.items = items  # e.g. how many tools one tools/list returned

    @property
    def per_s(self) -> float:
        return self.calls / self.wall

    @property
    def cpu_us(self) -> float:
        return self.cpu / self.calls * 1e6

    @property
    def wall_ms(self) -> float:
        return self.wall / self.calls * 1e3

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.calls * 1e3

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "wall": self.wall, "cpu": self.cpu, "items": self.items}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Timing:
        return cls(int(d["calls"]), float(d["wall"]), float(d["cpu"]), d.get("items"))


def median_timing(rounds: list[Timing]) -> Timing:
    """Median wall and median CPU over rounds of the same size."""
    return Timing(rounds[0].calls, statistics.median(t.wall for t in rounds),
                  statistics.median(t.cpu for t in rounds), rounds[0].items)


# --- what one round does (inside its own process) ------------------------------------------------


def _timed(fn: Callable[[int], None], calls: int) -> Timing:
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    fn(calls)
    return Timing(calls, time.perf_counter() - t0, time.process_time() - c0)


def _loop(call: Callable[[str, dict[str, Any]], object], args: dict[str, Any]
          ) -> Callable[[int], None]:
    def loop(count: int) -> None:
        for _ in range(count):
            call("echo", args)

    return loop


def round_seq_raw(args: dict[str, Any], n: int, codec: str = "json") -> Timing:
    from raw_client import RawClient

    with RawClient(ECHO_SERVER, codec) as client:
        loop = _loop(client.call_tool, args)
        loop(COUNTS["warmup"])
        return _timed(loop, n)


def round_seq_lite(args: dict[str, Any], n: int) -> Timing:
    import mcp_lite

    with mcp_lite.connect(ECHO_SERVER) as client:
        loop = _loop(client.call_tool, args)
        loop(COUNTS["warmup"])
        return _timed(loop, n)


def round_seq_sdk(args: dict[str, Any], n: int) -> Timing:
    from sdk_client import open_session

    async def main() -> Timing:
        async with open_session(ECHO_SERVER) as session:
            for _ in range(COUNTS["warmup"]):
                await session.call_tool("echo", args)
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n):
                await session.call_tool("echo", args)
            return Timing(n, time.perf_counter() - t0, time.process_time() - c0)

    return asyncio.run(main())


def round_threads_lite(args: dict[str, Any], n: int, workers: int = CONCURRENCY) -> Timing:
    """``workers`` threads share one Client, each making n/workers sequential calls."""
    import mcp_lite

    with mcp_lite.connect(ECHO_SERVER) as client:
        return _threaded(client.call_tool, args, n, workers)


def _threaded(call: Callable[[str, dict[str, Any]], object], args: dict[str, Any], n: int,
              workers: int) -> Timing:
    """``workers`` threads each make n/workers sequential ``call``s; timed from a barrier."""
    per = n // workers
    _loop(call, args)(COUNTS["warmup"])
    start = threading.Barrier(workers + 1)

    failed: list[BaseException] = []

    def worker() -> None:
        start.wait()
        try:
            for _ in range(per):
                call("echo", args)
        except BaseException as exc:  # a figure from fewer calls than counted is wrong
            failed.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    start.wait()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if failed:
        raise RuntimeError(f"{len(failed)} of {workers} threads failed") from failed[0]
    return Timing(per * workers, wall, cpu)


def round_threads_raw(args: dict[str, Any], n: int, workers: int = CONCURRENCY,
                      turns: bool = False) -> Timing:
    """The same with bench/raw_client.py's ThreadedRawClient (a reader thread), or with
    ``turns`` its TurnTakingRawClient (callers take turns to read): the floors for sharing."""
    from raw_client import ThreadedRawClient, TurnTakingRawClient

    with (TurnTakingRawClient if turns else ThreadedRawClient)(ECHO_SERVER) as client:
        return _threaded(client.call_tool, args, n, workers)


def round_window_lite(args: dict[str, Any], n: int, window: int = CONCURRENCY) -> Timing:
    """One thread keeps ``window`` requests in flight with ``client.submit`` (result dicts)."""
    import mcp_lite

    params = {"name": "echo", "arguments": args}
    with mcp_lite.connect(ECHO_SERVER) as client:
        submit = client.submit

        def loop(count: int) -> None:
            inflight: deque[Future[dict[str, Any]]] = deque()
            for _ in range(count):
                if len(inflight) >= window:
                    inflight.popleft().result()
                inflight.append(submit("tools/call", params))
            for fut in inflight:
                fut.result()

        loop(COUNTS["warmup"])
        return _timed(loop, n)


def round_gather_sdk(args: dict[str, Any], n: int, tasks: int = CONCURRENCY) -> Timing:
    """``tasks`` asyncio tasks share one ClientSession (``asyncio.gather``)."""
    from sdk_client import open_session

    per = n // tasks

    async def main() -> Timing:
        async with open_session(ECHO_SERVER) as session:
            for _ in range(COUNTS["warmup"]):
                await session.call_tool("echo", args)

            async def worker() -> None:
                for _ in range(per):
                    await session.call_tool("echo", args)

            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            await asyncio.gather(*(worker() for _ in range(tasks)))
            return Timing(per * tasks, time.perf_counter() - t0, time.process_time() - c0)

    return asyncio.run(main())


def _repeat(fn: Callable[[], object]) -> Callable[[int], None]:
    def loop(count: int) -> None:
        for _ in range(count):
            fn()

    return loop


def round_list_raw(_args: dict[str, Any], n: int) -> Timing:
    from raw_client import RawClient

    with RawClient(TOOL_LIST_SERVER) as client:
        client.list_tools()
        timing = _timed(_repeat(client.list_tools), n)
        timing.items = len(client.list_tools())
        return timing


def round_list_lite(_args: dict[str, Any], n: int) -> Timing:
    import mcp_lite

    with mcp_lite.connect(TOOL_LIST_SERVER) as client:
        client.list_tools()
        timing = _timed(_repeat(client.list_tools), n)
        timing.items = len(client.list_tools())
        return timing


def round_list_sdk(_args: dict[str, Any], n: int) -> Timing:
    from sdk_client import open_session

    async def main() -> Timing:
        async with open_session(TOOL_LIST_SERVER) as session:
            await session.list_tools()
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n):
                result = await session.list_tools()
            return Timing(n, time.perf_counter() - t0, time.process_time() - c0,
                          len(result.tools))

    return asyncio.run(main())


ROUNDS: dict[str, Callable[[dict[str, Any], int], Timing]] = {
    "seq-raw": round_seq_raw,
    "seq-raw-pydantic-core": lambda args, n: round_seq_raw(args, n, "pydantic_core"),
    "seq-lite": round_seq_lite,
    "seq-sdk": round_seq_sdk,
    "threads-lite": round_threads_lite,
    "threads-raw": round_threads_raw,
    "threads-raw-turns": lambda args, n: round_threads_raw(args, n, turns=True),
    "window-lite": round_window_lite,
    "gather-sdk": round_gather_sdk,
    "list-raw": round_list_raw,
    "list-lite": round_list_lite,
    "list-sdk": round_list_sdk,
}


# --- the parent side: rounds in subprocesses, interleaved ---------------------------------------


class Job:
    """One figure: a round kind, an argument size, an operation count, extensions on/off."""

    def __init__(self, kind: str, size: str, n: int, *, pure: bool = False) -> None:
        self.kind, self.size, self.n, self.pure = kind, size, n, pure
        self.rounds: list[Timing] = []
        self.error: str | None = None

    def run_round(self) -> None:
        env = dict(os.environ)
        env.pop("MCP_LITE_NO_EXTENSIONS", None)
        if self.pure:
            env["MCP_LITE_NO_EXTENSIONS"] = "1"
        proc = subprocess.run(
            [PY, str(Path(__file__).resolve()), "--round", self.kind, self.size, str(self.n)],
            env=env, capture_output=True, cwd=ROOT, timeout=300)
        if proc.returncode != 0:
            tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
            self.error = " | ".join(tail) or f"exit code {proc.returncode}"
            return
        out = json.loads(proc.stdout)
        if self.pure and out.get("USE_EXTENSIONS"):
            self.error = "MCP_LITE_NO_EXTENSIONS=1 still loaded the compiled kernels"
            return
        self.rounds.append(Timing.from_dict(out))

    @property
    def result(self) -> Timing | None:
        return median_timing(self.rounds) if self.rounds else None


def run_interleaved(jobs: dict[str, Job], rounds: int) -> dict[str, Timing | None]:
    """One round of each job in turn, ``rounds`` times; the median of each (None: it failed)."""
    for _ in range(rounds):
        for job in jobs.values():
            if job.error is None:
                job.run_round()
    for name, job in jobs.items():
        if job.error is not None:
            sys.stderr.write(f"bench: {name} ({job.kind} {job.size}) failed: {job.error}\n")
    return {name: job.result for name, job in jobs.items()}


def sequential(size: str) -> dict[str, Timing | None]:
    c = COUNTS
    return run_interleaved({
        "raw": Job("seq-raw", size, c["seq_raw"]),
        "raw_pc": Job("seq-raw-pydantic-core", size, c["seq_raw"]),
        "lite": Job("seq-lite", size, c["seq_lite"]),
        "pure": Job("seq-lite", size, c["seq_lite"], pure=True),
        "sdk": Job("seq-sdk", size, c["seq_sdk"]),
    }, c["rounds"])


def concurrent() -> dict[str, Timing | None]:
    c = COUNTS
    return run_interleaved({
        "threads": Job("threads-lite", "10 B", c["conc_lite"]),
        "raw_threads": Job("threads-raw", "10 B", c["conc_lite"]),
        "raw_turns": Job("threads-raw-turns", "10 B", c["conc_lite"]),
        "window": Job("window-lite", "10 B", c["conc_lite"]),
        "sdk": Job("gather-sdk", "10 B", c["conc_sdk"]),
    }, c["rounds"])


def tool_list() -> dict[str, Timing | None]:
    c = COUNTS
    return run_interleaved({
        "raw": Job("list-raw", "10 B", c["list_calls"]),
        "lite": Job("list-lite", "10 B", c["list_calls"]),
        "sdk": Job("list-sdk", "10 B", c["list_calls"]),
    }, c["rounds"])


# --- 4. and 5. whole processes -------------------------------------------------------------------


class ProcTime:
    """Median wall and CPU (user + sys of the process and every descendant it reaped)."""

    def __init__(self, wall: float, cpu: float) -> None:
        self.wall, self.cpu = wall, cpu


def _run_once(argv: Sequence[str], expect: str | None) -> tuple[float, float] | None:
    """(wall, CPU) seconds from spawn to exit; None when it fails or lacks ``expect``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT,
                          timeout=120)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or (expect is not None and expect not in proc.stdout.decode()):
        return None
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def process_times(commands: dict[str, tuple[Sequence[str], str | None]], runs: int
                  ) -> dict[str, ProcTime | None]:
    """Medians for each command (runs interleaved); None if any run of it failed."""
    times: dict[str, list[tuple[float, float] | None]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (argv, expect) in commands.items():
            times[name].append(_run_once(argv, expect))
    out: dict[str, ProcTime | None] = {}
    for name, results in times.items():
        ok = [r for r in results if r is not None]
        out[name] = None if len(ok) < len(results) else ProcTime(
            statistics.median(r[0] for r in ok), statistics.median(r[1] for r in ok))
    return out


def import_times(runs: int) -> dict[str, ProcTime | None]:
    return process_times({
        "pass": ([PY, "-c", "pass"], None),
        "import mcp_lite": ([PY, "-c", "import mcp_lite"], None),
        "from mcp_lite import connect": ([PY, "-c", "from mcp_lite import connect"], None),
        "import mcp": ([PY, "-c", "import mcp"], None),
    }, runs)


def oneshot_times(runs: int) -> dict[str, ProcTime | None]:
    server = " ".join(shlex.quote(part) for part in ECHO_SERVER)
    args = '{"text":"hi"}'
    commands: dict[str, tuple[Sequence[str], str | None]] = {
        "SDK script": ([PY, str(BENCH / "sdk_client.py"), "--stdio", server, "echo", args], "hi"),
    }
    # The Python API, as a script uses it: spawn, connect, one call, print, exit.
    call = "{'text': 'hi'}"
    commands["mcp_lite API"] = ([PY, "-c", (
        f"import mcp_lite\nwith mcp_lite.connect({list(ECHO_SERVER)!r}) as c:\n"
        f"    print(c.call_tool('echo', {call}).text)")], "hi")
    commands["raw API"] = ([PY, "-c", (
        f"import sys\nsys.path.insert(0, {str(BENCH)!r})\nfrom raw_client import RawClient\n"
        f"with RawClient({list(ECHO_SERVER)!r}) as c:\n"
        f"    print(c.call_tool('echo', {call})['content'][0]['text'])")], "hi")
    # The CLI may not have landed yet: then (or when it fails) its figure is None ("n/a").
    if importlib.util.find_spec("mcp_lite.__main__") is not None:
        commands["mcp_lite CLI"] = ([PY, "-m", "mcp_lite", "call", "--stdio", server, "echo",
                                     args], "hi")
    times = process_times(commands, runs)
    times.setdefault("mcp_lite CLI", None)
    return times


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--round" and sys.argv[2] in ROUNDS \
            and sys.argv[3] in SIZES:
        timing = ROUNDS[sys.argv[2]](SIZES[sys.argv[3]], int(sys.argv[4]))
        result: dict[str, Any] = dict(timing.as_dict())
        if "mcp_lite" in sys.modules:
            result["USE_EXTENSIONS"] = sys.modules["mcp_lite"].USE_EXTENSIONS
        print(json.dumps(result))
    else:
        print(f"usage: bench_stdio.py --round {{{'|'.join(ROUNDS)}}} {{{'|'.join(SIZES)}}} N\n"
              "(bench/run.py runs every round)", file=sys.stderr)
        sys.exit(2)
