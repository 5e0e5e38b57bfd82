"""Kernel micro-benchmarks: the compiled ``_speedups`` against its pure-Python twin.

    python bench/bench_kernels.py          (or ``make bench-kernels``)

Both implementations run in the same process on the same realistic inputs; each figure is the
best of several repetitions. One line per kernel with both times and ``twin/compiled``.
Targets: names >= 2x, every other kernel >= 1.5x. Asserts nothing; ``run()`` returns the
ratios for ``bench/run.py``.
"""

from __future__ import annotations

import builtins
import importlib
import json
import time
from collections.abc import Callable
from types import ModuleType

REPEAT = 7
TARGETS = {"names": 2.0, "ndjson": 1.5, "sse": 1.5, "lru": 1.5}


def _best(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    fn()  # warm up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _chunks(stream: bytes, size: int) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


# --- inputs ----------------------------------------------------------------------------

_VERBS = ["get", "list", "create", "update", "delete", "search", "read", "write", "run", "query"]
_NOUNS = ["issue", "file", "page", "user", "table", "row", "branch", "commit", "event", "doc"]


def tool_names(n: int = 1000) -> list[str]:
    """A big server's tool list: mostly clean snake/kebab case, some dots, spaces, non-ASCII."""
    names = []
    for i in range(n):
        base = f"{_VERBS[i % 10]}_{_NOUNS[(i // 10) % 10]}_{i}"
        if i % 10 == 3:
            base = base.replace("_", ".")
        elif i % 10 == 7:
            base = base.replace("_", " ") + "!"
        elif i % 50 == 11:
            base += "_café"
        names.append(base)
    return names


def rpc_messages(n: int = 10_000) -> list[bytes]:
    """JSON-RPC responses of about 200 bytes."""
    out = []
    for i in range(n):
        msg = {
            "jsonrpc": "2.0",
            "id": i,
            "result": {
                "content": [{"type": "text", "text": f"row {i}: " + "lorem ipsum " * 8}],
                "isError": False,
            },
        }
        out.append(json.dumps(msg, separators=(",", ":")).encode())
    return out


def ndjson_stream(messages: list[bytes]) -> bytes:
    return b"".join(m + b"\n" for m in messages)


def sse_stream(messages: list[bytes]) -> bytes:
    return b"".join(
        b"event: message\nid: %d\ndata: %s\n\n" % (i, m) for i, m in enumerate(messages)
    )


def lru_workload(n: int = 100_000) -> list[tuple[list[tuple[str, str]], str]]:
    """Batches of 2000 lookups, each followed by invalidating one server (``delete_where``).

    80 hot keys (8 per server) are looked up in turn, and every 10th lookup is a key never seen
    before (a miss, then a put). A hot key is reused within ~90 lookups, so with 100 entries
    LRU evicts only the cold keys: about 90% hits, 10% misses, plus a few refills after
    each invalidation.
    """
    hot = [(f"srv{i % 10}", f"tools/list page {i // 10}") for i in range(80)]
    keys = []
    for i in range(n):
        keys.append((f"srv{i % 10}", f"cold {i}") if i % 10 == 9 else hot[(i - i // 10) % 80])
    return [(keys[i : i + 2000], f"srv{(i // 2000) % 10}") for i in range(0, n, 2000)]


# --- one kernel, one implementation ----------------------------------------------------


def bench_names(mod: ModuleType, tools: list[str]) -> float:
    def work() -> None:
        mod.normalize_names(tools)
        mod.build_tool_names("my server", tools)

    return _best(work)


def bench_ndjson(mod: ModuleType, chunks: list[bytes], count: int) -> float:
    def work() -> None:
        splitter = mod.NdjsonSplitter()
        feed = splitter.feed
        n = 0
        for chunk in chunks:
            n += len(feed(chunk))
        assert n == count, n

    return _best(work)


def bench_sse(mod: ModuleType, chunks: list[bytes], count: int) -> float:
    def work() -> None:
        parser = mod.SseParser()
        feed = parser.feed
        n = 0
        for chunk in chunks:
            n += len(feed(chunk))
        assert n == count, n

    return _best(work)


def bench_lru(mod: ModuleType, batches: list[tuple[list[tuple[str, str]], str]]) -> float:
    def work() -> None:
        cache = mod.LruCache(100)
        get, put, delete_where = cache.get, cache.put, cache.delete_where
        misses = 0
        for keys, server in batches:
            for key in keys:
                if get(key) is None:
                    put(key, key)
                    misses += 1
            delete_where(lambda key, server=server: key[0] == server)
        assert 0.09 < misses / sum(len(k) for k, _ in batches) < 0.11, misses

    return _best(work)


# --- driver ----------------------------------------------------------------------------


def run(print: Callable[..., None] = builtins.print) -> dict[str, float]:
    """Run every kernel benchmark, print one line each, return ``{kernel: twin/compiled}``."""
    pure = importlib.import_module("mcp_lite._speedups_py")
    try:
        compiled = importlib.import_module("mcp_lite._speedups")
    except ImportError as exc:
        print(f"  compiled kernels not built ({exc}); run `make build-ext`: skipped")
        return {}

    tools = tool_names(1000)
    messages = rpc_messages(10_000)
    nd = ndjson_stream(messages)
    sse = sse_stream(messages)
    nd_chunks, sse_chunks = _chunks(nd, 4096), _chunks(sse, 4096)
    batches = lru_workload()
    cases: dict[str, tuple[str, Callable[[ModuleType], float]]] = {
        "names": (
            "normalize_names + build_tool_names, 1000 tools",
            lambda m: bench_names(m, tools),
        ),
        "ndjson": (
            f"NdjsonSplitter, 10000 msgs ({len(nd) // 10_000} B avg) in 4 kB chunks",
            lambda m: bench_ndjson(m, nd_chunks, 10_000),
        ),
        "sse": (
            "SseParser, 10000 events in 4 kB chunks",
            lambda m: bench_sse(m, sse_chunks, 10_000),
        ),
        "lru": (
            "LruCache(100), 100k lookups, 90/10 hit/miss, delete_where / 2000",
            lambda m: bench_lru(m, batches),
        ),
    }
    ratios: dict[str, float] = {}
    for name, (what, bench) in cases.items():
        t_c = bench(compiled)
        t_p = bench(pure)
        ratio = t_p / t_c
        ratios[name] = ratio
        verdict = "met" if ratio >= TARGETS[name] else "NOT met"
        print(
            f"  {name:<7} compiled {t_c * 1e3:8.3f} ms   twin {t_p * 1e3:8.3f} ms   "
            f"twin/compiled {ratio:5.2f}x  (target >= {TARGETS[name]}x: {verdict})  {what}"
        )
    return ratios


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's mcp_lite
    print(f"== Kernels: compiled vs pure-Python twin (best of {REPEAT}) ==")
    run()
