"""``make bench``: every benchmark in one run, printed as tables with the targets.

    .venv/bin/python bench/run.py

Every figure is measured in this run (nothing is hard-coded); iteration counts are printed.
mcp_lite is compared over stdio with the official Python SDK client (PyPI ``mcp``) and with a
minimal hand-written sync client (``bench/raw_client.py``, the physical limit); how a figure
is taken is described in ``bench/bench_stdio.py``. The kernel micro-benchmarks
(``bench/bench_kernels.py``) run first when that module exists; the fleet section
(``bench/bench_fleet.py``: 200 servers in one process, the gateway, 8 processes, per-call
system calls, context switches and instructions) runs last. This is never part of the test
suite and asserts nothing. It takes about 5 minutes on 2 idle cores.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import bench_stdio as bs  # noqa: E402
from bench_stdio import Timing  # noqa: E402


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _load() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _ms(seconds: float | None) -> str:
    return "     n/a" if seconds is None else f"{seconds * 1e3:8.1f} ms"


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


SUMMARY: dict[str, Any] = {}


class Targets:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, bool | None]] = []
        self.ratios: list[dict[str, Any]] = []

    def ratio(self, what: str, value: float | None, target: str, limit: float) -> None:
        ok = None if value is None else (value <= limit if "<=" in target else value >= limit)
        self.rows.append((what, "n/a" if value is None else f"{value:.2f}x", target, ok))
        self.ratios.append({"row": what, "ratio": value, "target": target, "limit": limit,
                            "met": ok})

    def save(self, path: Path) -> None:
        """The ratio rows as JSON, for bench/plot.py (``--add`` folds them into the history
        the docs' chart is drawn from)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"date": time.strftime("%Y-%m-%d"), "load_average": _load(),
                  "rows": self.ratios}
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(f"\nratios written to {path} (python bench/plot.py --add {path})")

    def ms(self, what: str, seconds: float | None, target: str, limit_s: float) -> None:
        ok = None if seconds is None else seconds <= limit_s
        self.rows.append((what, "n/a" if seconds is None else f"{seconds * 1e3:.1f} ms",
                          target, ok))

    def show(self) -> None:
        print("\n== Targets ==")
        for what, shown, target, ok in self.rows:
            verdict = "n/a" if ok is None else ("met" if ok else "NOT met")
            print(f"  {what:<52} {shown:>9}   target {target:<9} {verdict}")


def kernels() -> None:
    try:
        import bench_kernels
    except ImportError:
        print("== Kernels ==\n  bench/bench_kernels.py not available: skipped")
        return
    print("== Kernels (bench/bench_kernels.py) ==")
    try:
        bench_kernels.run(print=print)
    except Exception:  # a broken kernel bench must not hide the stdio figures
        print("  bench_kernels.run() failed:")
        traceback.print_exc(file=sys.stdout)


def sequential(targets: Targets) -> dict[str, dict[str, Timing | None]]:
    print("\n== 1. Sequential tools/call over stdio (tests/peers/fault_server.py echo) ==")
    print(f"  {'arg':<6} {'client':<50} {'calls':>5} {'calls/s':>8} {'ms/call':>8} "
          f"{'CPU us/call':>11} {'CPU vs raw':>10}")
    names = {
        "raw": "raw sync client (bench/raw_client.py, stdlib json)",
        "raw_pc": "  same, pydantic_core JSON (mcp_lite's codec; info)",
        "lite": "mcp_lite (compiled kernels when built)",
        "pure": "mcp_lite, MCP_LITE_NO_EXTENSIONS=1 (pure Python)",
        "sdk": "official SDK (mcp.ClientSession, asyncio.run)",
    }
    seq: dict[str, dict[str, Timing | None]] = {}
    for size in bs.SIZES:
        res = seq[size] = bs.sequential(size)
        raw, lite, pure, sdk = res["raw"], res["lite"], res["pure"], res["sdk"]
        for key, name in names.items():
            t = res[key]
            if t is None:
                print(f"  {size:<6} {name:<50}   n/a")
                continue
            vs_raw = _div(t.cpu_us, raw.cpu_us) if raw else None
            print(f"  {size:<6} {name:<50} {t.calls:>5} {t.per_s:>8.0f} {t.wall_ms:>8.3f} "
                  f"{t.cpu_us:>11.1f} {'' if vs_raw is None else f'{vs_raw:.2f}x':>10}")
        if lite and sdk:
            ceiling = max((t.per_s for t in (raw, res["raw_pc"]) if t), default=None)
            print(f"  {'':<6} mcp_lite vs SDK: {lite.per_s / sdk.per_s:.1f}x the calls/s, "
                  f"{lite.cpu_us / sdk.cpu_us:.2f}x the CPU per call; the ceiling (fastest raw "
                  f"client) is {_div(ceiling, sdk.per_s) or 0:.1f}x the SDK's calls/s")
        if lite and pure:
            print(f"  {'':<6} compiled kernels end to end: {lite.per_s / pure.per_s:.2f}x the "
                  f"calls/s and {lite.cpu_us / pure.cpu_us:.2f}x the CPU per call of pure Python")
    for size, res in seq.items():
        targets.ratio(f"sequential calls/s vs raw client ({size})",
                      _div(res["lite"] and res["lite"].per_s, res["raw"] and res["raw"].per_s),
                      ">= 0.9x", 0.9)
        targets.ratio(f"client CPU/call vs raw client ({size})",
                      _div(res["lite"] and res["lite"].cpu_us, res["raw"] and res["raw"].cpu_us),
                      "<= 1.3x", 1.3)
    return seq


def concurrency(targets: Targets, seq: dict[str, dict[str, Timing | None]]) -> None:
    SUMMARY["seq"] = seq
    n = bs.CONCURRENCY
    print(f"\n== 2. {n} concurrent callers on one connection (10 B argument) ==")
    conc = bs.concurrent()
    print(f"  {'client':<58} {'calls':>5} {'calls/s':>8} {'CPU us/call':>11}")
    for key, name in (("threads", f"mcp_lite, {n} threads sharing one Client (call_tool)"),
                      ("window", f"mcp_lite, 1 thread, submit() keeping {n} in flight (dicts)"),
                      ("raw_threads", f"raw client, {n} threads (a reader thread, a lock each)"),
                      ("raw_turns", f"raw client, {n} threads taking turns to read"),
                      ("sdk", f"official SDK, {n} tasks (asyncio.gather) on one session")):
        t = conc[key]
        print(f"  {name:<58} " + ("  n/a" if t is None else
                                  f"{t.calls:>5} {t.per_s:>8.0f} {t.cpu_us:>11.1f}"))
    small = seq["10 B"]
    scale = ", ".join(f"{k} {t.per_s:.0f}/s" for k, t in
                      (("mcp_lite", small["lite"]), ("SDK", small["sdk"]), ("raw", small["raw"]))
                      if t is not None)
    print(f"  (sequential, for scale: {scale})")
    threads, raw_threads = conc["threads"], conc["raw_threads"]
    # For scale, what sharing gains on this machine now: a minimal threaded client against
    # the raw client's one thread. Where one thread's round trip never sleeps (client and
    # server take turns on one core), any shared connection pays a cross-thread wake-up per
    # call that one thread does not, and this falls below 1.
    floor = _div(raw_threads and raw_threads.per_s, small["raw"] and small["raw"].per_s)
    turns = _div(conc["raw_turns"] and conc["raw_turns"].per_s,
                 small["raw"] and small["raw"].per_s)
    if floor is not None:
        print(f"  (info: the raw client's {n} threads make {floor:.2f}x the calls/s of its one "
              f"thread here now; taking turns to read, with no reader thread, "
              f"{'n/a' if turns is None else f'{turns:.2f}x'})")
    targets.ratio(f"{n} threads' calls/s vs one thread's (mcp_lite)",
                  _div(threads and threads.per_s, small["lite"] and small["lite"].per_s),
                  ">= 1.2x", 1.2)
    targets.ratio(f"{n} threads' calls/s vs SDK {n} tasks",
                  _div(threads and threads.per_s, conc["sdk"] and conc["sdk"].per_s),
                  ">= 4x", 4)
    SUMMARY["conc"] = conc


def tool_list(targets: Targets) -> None:
    print("\n== 3. tools/list of 1000 tools, parsed (bench/tool_list_server.py, one page, "
          "~1.1 MB) ==")
    listing = bs.tool_list()
    print(f"  {'client':<56} {'tools':>5} {'time per list':>14} {'CPU per list':>13}")
    for key, name in (("raw", "raw sync client (stdlib json.loads only, no models)"),
                      ("lite", "mcp_lite client.list_tools() -> list[Tool]"),
                      ("sdk", "official SDK session.list_tools() -> ListToolsResult")):
        t = listing[key]
        print(f"  {name:<56} " + ("  n/a" if t is None else
                                  f"{t.items or 0:>5} {_ms(t.wall / t.calls):>14} "
                                  f"{_ms(t.cpu / t.calls):>13}"))
    SUMMARY["list"] = listing
    lite, sdk = listing["lite"], listing["sdk"]
    targets.ratio("1000-tool list time vs SDK",
                  _div(lite and lite.wall / lite.calls, sdk and sdk.wall / sdk.calls),
                  "<= 0.25x", 0.25)


def imports(targets: Targets, runs: int) -> None:
    print(f"\n== 4. Import: a whole `python -c ...` process, spawn to exit "
          f"(median of {runs}) ==")
    times = bs.import_times(runs)
    base = times["pass"]
    for what, t in times.items():
        if t is None:
            print(f"  python -c {what!r:<32} failed")
            continue
        net = "" if base is None or what == "pass" else \
            f"  ({(t.wall - base.wall) * 1e3:+.1f} ms vs `pass`)"
        print(f"  python -c {what!r:<32} wall {_ms(t.wall)}  CPU {_ms(t.cpu)}{net}")
    lite, mcp = times["import mcp_lite"], times["import mcp"]
    if lite and mcp:
        print(f"  import mcp_lite takes {lite.wall / mcp.wall:.2f}x the wall time of import mcp")
    targets.ms("`python -c 'import mcp_lite'` process wall time", lite and lite.wall,
               "<= 80 ms", 0.080)


def oneshot(targets: Targets, runs: int) -> None:
    print(f"\n== 5. One-shot call, spawn to exit (median of {runs}; CPU includes the "
          f"server's) ==")
    print("  server: <python> tests/peers/fault_server.py echo; call: echo '{\"text\":\"hi\"}'")
    times = bs.oneshot_times(runs)
    SUMMARY["oneshot"] = times
    for key, name in (("raw API", "raw client script (bench/raw_client.py)"),
                      ("mcp_lite API", "python -c 'with mcp_lite.connect(...) as c: c.call_tool'"),
                      ("mcp_lite CLI", "python -m mcp_lite call --stdio ..."),
                      ("SDK script", "python bench/sdk_client.py --stdio ... (official SDK)")):
        t = times.get(key)
        shown = "n/a (failed)" if t is None else f"wall {_ms(t.wall)}  CPU {_ms(t.cpu)}"
        print(f"  {name:<60} {shown}")
    sdk = times["SDK script"]
    targets.ratio("one-shot call through the Python API vs SDK script",
                  _div(times["mcp_lite API"] and times["mcp_lite API"].wall, sdk and sdk.wall),
                  "<= 0.2x", 0.2)
    targets.ratio("one-shot CLI call time vs SDK script",
                  _div(times["mcp_lite CLI"] and times["mcp_lite CLI"].wall, sdk and sdk.wall),
                  "<= 0.2x", 0.2)


def summary() -> None:
    """The issue's table: every stdio row as a ratio to the SDK and to the raw client."""
    seq, conc = SUMMARY.get("seq", {}), SUMMARY.get("conc", {})
    listing, shot = SUMMARY.get("list", {}), SUMMARY.get("oneshot", {})
    small = seq.get("10 B", {})

    def get(d: Any, key: str, attr: str) -> float | None:
        t = d.get(key) if d else None
        return None if t is None else float(getattr(t, attr))

    def per_list(d: Any, key: str) -> float | None:
        t = d.get(key) if d else None
        return None if t is None else t.wall / t.calls

    def fmt(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}x"

    rows = [
        ("sequential calls/s (10 B)", get(small, "lite", "per_s"), get(small, "sdk", "per_s"),
         get(small, "raw", "per_s")),
        ("client CPU per call (10 B)", get(small, "lite", "cpu_us"), get(small, "sdk", "cpu_us"),
         get(small, "raw", "cpu_us")),
        ("8 threads on one client, calls/s", get(conc, "threads", "per_s"),
         get(conc, "sdk", "per_s"), get(small, "raw", "per_s")),
        ("one-shot process via the Python API (wall)", get(shot, "mcp_lite API", "wall"),
         get(shot, "SDK script", "wall"), get(shot, "raw API", "wall")),
        ("tools/list of 1000 tools (time per list)", per_list(listing, "lite"),
         per_list(listing, "sdk"), per_list(listing, "raw")),
        ("compiled kernels vs pure: sequential calls/s", get(small, "lite", "per_s"),
         get(small, "pure", "per_s"), None),
        ("compiled kernels vs pure: CPU per call", get(small, "lite", "cpu_us"),
         get(small, "pure", "cpu_us"), None),
    ]
    print("\n== Summary (issue 13's stdio table): mcp_lite as a ratio ==")
    print(f"  {'metric':<48} {'vs SDK':>8} {'vs raw':>8}")
    for what, lite, sdk, raw in rows:
        versus = "vs pure" if what.startswith("compiled") else "vs SDK"
        print(f"  {what:<48} {fmt(_div(lite, sdk)):>8} {fmt(_div(lite, raw)):>8}"
              + ("   (first column: vs pure Python)" if versus == "vs pure" else ""))
    print("  (8 threads 'vs raw': against the raw client's sequential calls/s; "
          "the raw client has no threads)")


def remote_http(targets: Targets) -> None:
    try:
        import bench_http
    except ImportError:
        print("\n== 6. Streamable HTTP ==\n  bench/bench_http.py not available: skipped")
        return
    print("\n== 6. Streamable HTTP vs the official SDK (bench/bench_http.py) ==")
    try:
        bench_http.run(print=print, targets=targets)
    except Exception:  # a broken HTTP bench must not hide the other figures
        print("  bench_http.run() failed:")
        traceback.print_exc(file=sys.stdout)


def tool_search(targets: Targets) -> None:
    try:
        import bench_tool_search
    except ImportError:
        print("\n== 7. Deferred tool loading ==\n  bench/bench_tool_search.py not available: skipped")
        return
    print("\n== 7. Deferred tool loading: tool-list size on a 500-tool pool "
          "(bench/bench_tool_search.py) ==")
    try:
        bench_tool_search.run(print=print, targets=targets)
    except Exception:  # a broken section must not hide the other figures
        print("  bench_tool_search.run() failed:")
        traceback.print_exc(file=sys.stdout)


def fleet(targets: Targets) -> None:
    try:
        import bench_fleet
    except ImportError:
        print("\n== 8. Fleet ==\n  bench/bench_fleet.py not available: skipped")
        return
    print("\n== 8. Fleet: 200 servers in one process, the gateway, 8 processes, per-call "
          "syscalls (bench/bench_fleet.py) ==")
    try:
        bench_fleet.run(print=print, targets=targets)
    except Exception:  # a broken section must not hide the other figures
        print("  bench_fleet.run() failed:")
        traceback.print_exc(file=sys.stdout)


def _bytecode(package: Any) -> str:
    """Whether the package's modules have up-to-date .pyc files, as an installed wheel has
    (make bench compiles them first); without them every process compiles the sources."""
    import importlib.util

    sources = list(Path(package.__file__).parent.rglob("*.py"))
    fresh = sum(
        1 for src in sources
        if Path(importlib.util.cache_from_source(str(src))).exists()
        and Path(importlib.util.cache_from_source(str(src))).stat().st_mtime >= src.stat().st_mtime
    )
    if fresh == len(sources):
        return "compiled (.pyc present, as after pip install)"
    return (f"{fresh} of {len(sources)} modules compiled: whole-process figures include "
            "compiling the rest from source (run `make bench`)")


def main() -> None:
    started = time.perf_counter()
    load_start = _load()
    import mcp_lite

    c = bs.COUNTS
    print("mcp_lite benchmarks")
    print(f"  python {platform.python_version()} ({sys.executable}), {os.cpu_count()} CPUs, "
          f"load average {load_start}")
    print(f"  mcp_lite {mcp_lite.__version__} (USE_EXTENSIONS={mcp_lite.USE_EXTENSIONS}); "
          f"official SDK mcp {_version('mcp')}; pydantic {_version('pydantic')}")
    print(f"  mcp_lite bytecode: {_bytecode(mcp_lite)}")
    print(f"  each figure: the median of {c['rounds']} rounds, each round a fresh process "
          f"(connect, warm up {c['warmup']} calls, then time it), clients taking turns.\n"
          f"  A round is: sequential raw {c['seq_raw']}, mcp_lite {c['seq_lite']}, SDK "
          f"{c['seq_sdk']} calls; {bs.CONCURRENCY} concurrent: mcp_lite {c['conc_lite']}, "
          f"SDK {c['conc_sdk']} calls; tools/list: {c['list_calls']} lists.\n"
          f"  Whole-process timings: median of {c['proc_runs']} runs. Client CPU = "
          f"time.process_time() of the client process (all threads), not the server's.\n")

    kernels()
    targets = Targets()
    seq = sequential(targets)
    concurrency(targets, seq)
    tool_list(targets)
    imports(targets, c["proc_runs"])
    oneshot(targets, c["proc_runs"])
    remote_http(targets)
    tool_search(targets)
    fleet(targets)
    summary()
    targets.show()
    targets.save(Path(__file__).with_name("results") / "last-run.json")
    print(f"\ntotal benchmark time {time.perf_counter() - started:.0f} s; load average at "
          f"start {load_start}, at end {_load()} (a busy machine skews wall times)")


if __name__ == "__main__":
    main()
