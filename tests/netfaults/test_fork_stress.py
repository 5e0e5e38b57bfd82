"""Fork at random moments while other threads are busy, and use the library in each child.

The parent keeps threads calling tools over stdio and Streamable HTTP on shared clients,
resolving a host name whose lookups hang (16 of them pending at once, the most the resolver
slots allow), and holding a token store's lock as a refresh would. It forks at random moments
in the middle of all that (gunicorn ``--preload``, Celery prefork, multiprocessing do the same).
Each child, at once:

- calls a tool on the clients it inherited (they reconnect on first use),
- connects new clients (stdio and HTTP) and calls a tool,
- resolves a host name through the library's resolver,
- takes the token store's lock the parent thread was holding,

every step with a 2 s timeout, and reports how long each took. Every child must finish every
step within its deadline plus under a second: no inherited lock, slot or watchdog thread may
stand in its way.
"""

from __future__ import annotations

import json
import math
import os
import random
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite._http import resolve
from mcp_lite.auth import FileTokenStore
from mcp_lite.errors import McpError

TIMEOUT = 2.0
SLACK = 1.0
FORKS = 6
DEMO = [sys.executable, "-m", "mcp_lite.demo"]
HANG = "hangs.invalid"


@pytest.fixture
def http_url() -> Iterator[str]:
    from mcp_lite.demo import server

    with server.serve_http(port=0) as http:
        yield http.url


@pytest.fixture
def hanging_resolver(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Lookups of ``HANG`` block until the event is set (a resolver that does not answer);
    everything else resolves as usual."""
    release = threading.Event()
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == HANG:
            release.wait(60)
            raise socket.gaierror(socket.EAI_NONAME, "no such host")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield release
    release.set()


def _timed(step: Callable[[], object]) -> tuple[float, str]:
    started = time.monotonic()
    try:
        step()
        result = "ok"
    except McpError as exc:
        result = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # reported, so the parent's assertion shows it
        result = f"unexpected {type(exc).__name__}: {exc}"
    return time.monotonic() - started, result


STEPS = ("inherited stdio call", "inherited http call", "new stdio client", "new http client",
         "name lookup", "token store lock")


def _child_work(stdio: mcp_lite.Client, http: mcp_lite.Client, url: str, store: FileTokenStore,
                key: str, out: int) -> None:
    """Run each step, writing one JSON line per step as it ends (a step that blocks for good
    is then named by the parent: the first one without a line)."""

    def fresh(target: Any) -> Callable[[], object]:
        def run() -> object:
            with mcp_lite.connect(target, timeout=TIMEOUT) as client:
                return client.call_tool("add", {"a": 1, "b": 2}, timeout=TIMEOUT)

        return run

    def lock() -> None:
        with store.lock(key, timeout=TIMEOUT):
            pass

    steps: dict[str, Callable[[], object]] = {
        "inherited stdio call": lambda: stdio.call_tool("add", {"a": 1, "b": 2}, timeout=TIMEOUT),
        "inherited http call": lambda: http.call_tool("add", {"a": 1, "b": 2}, timeout=TIMEOUT),
        "new stdio client": fresh(DEMO),
        "new http client": fresh(url),
        "name lookup": lambda: resolve.lookup("localhost", 80, socket.AF_INET, TIMEOUT),
        "token store lock": lock,
    }
    for name in STEPS:
        took, result = _timed(steps[name])
        os.write(out, (json.dumps([name, took, result]) + "\n").encode())


def _fork_and_run(work: Callable[[int], None]) -> dict[str, tuple[float, str]]:
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            os.close(read_end)
            work(write_end)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + len(STEPS) * (TIMEOUT + SLACK) + 5
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        os.waitpid(child, 0)
    with os.fdopen(read_end, "rb") as pipe:
        lines = pipe.read().decode().splitlines()
    report = {name: (took, result) for name, took, result in map(json.loads, lines)}
    for name in STEPS:
        report.setdefault(name, (math.inf, "blocked: the child was killed long after its deadline"))
    return report


@pytest.mark.timeout(300)
def test_children_forked_at_random_moments_keep_their_deadlines(
    http_url: str, hanging_resolver: threading.Event, tmp_path: Path
) -> None:
    rng = random.Random(2026)
    stop = threading.Event()
    store = FileTokenStore(tmp_path / "tokens")
    key = "tokens https://as.example https://mcp.example"
    stdio = mcp_lite.connect(DEMO, timeout=10)
    http = mcp_lite.connect(http_url, timeout=10)

    wrong: list[str] = []  # an answer to the wrong call, in the parent (a thread cannot fail the test)

    def caller(client: mcp_lite.Client) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                got = client.call_tool("add", {"a": n, "b": 1}, timeout=5).data
            except McpError:
                continue
            if got != {"result": n + 1}:
                wrong.append(f"add({n}, 1) answered {got}")

    def hanging_lookups() -> None:  # keep every resolver slot busy with lookups that hang
        while not stop.is_set():
            try:
                resolve.lookup(HANG, 80, socket.AF_INET, 0.2)
            except (OSError, TimeoutError):
                pass

    def refresher() -> None:  # holds the store's lock the way refreshes do: briefly, often
        while not stop.is_set():
            with store.lock(key, timeout=5):
                time.sleep(rng.uniform(0.01, 0.05))
            time.sleep(rng.uniform(0.02, 0.1))

    threads = [threading.Thread(target=caller, args=(c,), daemon=True)
               for c in (stdio, stdio, http, http)]
    threads += [threading.Thread(target=hanging_lookups, daemon=True) for _ in range(4)]
    threads += [threading.Thread(target=refresher, daemon=True)]
    for t in threads:
        t.start()
    reports = []
    try:
        for _ in range(FORKS):
            time.sleep(rng.uniform(0.05, 0.4))
            reports.append(
                _fork_and_run(lambda out: _child_work(stdio, http, http_url, store, key, out))
            )
    finally:
        stop.set()
        hanging_resolver.set()
        for t in threads:
            t.join(10)
        stdio.close()
        http.close()
    problems = [
        f"child {n}: {step} took {took:.2f} s: {result}"
        for n, report in enumerate(reports)
        for step, (took, result) in report.items()
        if took > TIMEOUT + SLACK or result != "ok"
    ]
    assert not problems + wrong, "\n".join(problems + wrong)
