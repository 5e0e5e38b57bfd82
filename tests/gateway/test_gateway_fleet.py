"""One gateway, a fleet of 8 worker processes: gunicorn ``--preload -w 8`` (fleet_wsgi.py) and a
Celery prefork worker ``--concurrency 8`` on Redis (fleet_celery.py), each with a module-level
Hub built and warmed up before the fork, calling tools of two stdio servers through a gateway
started by the test (``mcp-lite gateway``).

What must hold: every answer right, from several worker processes; exactly one server process
per configured server on the machine, all the gateway's (without a gateway the same fleet runs
one per server per worker, which the contrast test shows); a gateway SIGKILLed mid-run and
restarted on the same socket costs the workers only reconnects (no call hangs, the errors in
the gap are clear and name the gateway's socket); SIGTERM to the gateway leaves no server
process, and the workers then start none of their own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gateway_helpers import HERE, PEERS, ROOT, GatewayProcess, wait_for

import mcp_lite

pytest.importorskip("gunicorn")
if not hasattr(mcp_lite, "Gateway"):
    pytest.skip("mcp_lite.Gateway is not built yet (branch gw)", allow_module_level=True)

WORKERS = 8
REQUESTS = 200
RUN_S = 90.0  # the whole of one run, on a loaded 2-core machine
CALL_TIMEOUT = 10.0  # each call's own deadline, inside the worker
SERVERS = ("plain", "official")
# What a worker may see while the gateway is down or restarting: each names the gateway.
GAP_ERRORS = {"ConnectError", "RequestTimeout", "ConnectionClosed", "ServerDied"}


# --- the fleet's config and its server processes --------------------------------------------


@dataclass
class Fleet:
    config: Path
    scripts: dict[str, str]  # server name -> the path of its (uniquely named) script

    def processes(self) -> dict[str, list[int]]:
        """Server name -> pids of the living processes running its script."""
        found: dict[str, list[int]] = {name: [] for name in self.scripts}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                with open(f"/proc/{entry}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue
            except OSError:
                continue
            for name, script in self.scripts.items():
                if script.encode() in argv:
                    found[name].append(int(entry))
        return found

    def counts(self) -> dict[str, int]:
        return {name: len(pids) for name, pids in self.processes().items()}

    def total(self) -> int:
        return sum(self.counts().values())


@pytest.fixture
def fleet(short_dir: Path) -> Fleet:
    """Two stdio servers, copies of tests/peers scripts under unique names (easy to count)."""
    marker = f"fleet_{uuid.uuid4().hex[:10]}"
    plain = short_dir / f"{marker}_plain.py"
    official = short_dir / f"{marker}_official.py"
    shutil.copy(PEERS / "plain_server.py", plain)
    shutil.copy(PEERS / "official_server.py", official)
    config = short_dir / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "plain": {"command": sys.executable, "args": [str(plain)]},
        "official": {"command": sys.executable, "args": [str(official), "stdio"]},
    }}))  # fmt: skip
    return Fleet(config, {"plain": str(plain), "official": str(official)})


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def _env(fleet: Fleet, gateway: GatewayProcess | None, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "FLEET_CONFIG": str(fleet.config),
        "FLEET_CALL_TIMEOUT": str(CALL_TIMEOUT),
        "MCP_LITE_GATEWAY": gateway.url if gateway else "",  # "": no gateway
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)]),
        **extra,
    }
    return env


def _job(i: int) -> tuple[str, dict[str, Any], str]:
    """The i-th call, alternating the servers: (tool, arguments, the right answer)."""
    if i % 2 == 0:
        return "mcp__plain__add", {"a": i, "b": 1000}, str(i + 1000)
    return "mcp__official__echo", {"text": f"w{i}"}, f"w{i}"


class Sampler:
    """Counts the server processes every 0.1 s while the fleet runs: the most seen at once."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.most = dict.fromkeys(fleet.scripts, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            for name, n in self.fleet.counts().items():
                self.most[name] = max(self.most[name], n)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


# --- gunicorn ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Gunicorn:
    proc: subprocess.Popen[bytes]
    base: str
    log: Path

    def call(self, i: int, timeout: float | None = None) -> dict[str, Any]:
        """The i-th call through the app: its JSON answer plus ``status`` (the HTTP status);
        ``timeout``: the call's own, in place of the app's ``CALL_TIMEOUT``."""
        tool, arguments, _ = _job(i)
        extra = {} if timeout is None else {"timeout": timeout}
        query = "&".join([f"tool={tool}", *(f"{k}={v}" for k, v in {**arguments, **extra}.items())])
        try:
            with urllib.request.urlopen(f"{self.base}/call?{query}", timeout=60) as response:
                return {"status": response.status, **json.loads(response.read())}
        except urllib.error.HTTPError as exc:
            return {"status": exc.code, **json.loads(exc.read())}

    def text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture
def gunicorn(short_dir: Path, tmp_path: Path) -> Iterator[Callable[..., Gunicorn]]:
    """``gunicorn(env)``: fleet_wsgi under gunicorn --preload -w 8 on a free 127.0.0.1 port;
    stopped with SIGTERM at the end (its whole process group killed if it does not stop)."""
    started: list[Gunicorn] = []

    def start(env: dict[str, str]) -> Gunicorn:
        port = _free_port()
        log = tmp_path / f"gunicorn-{len(started)}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "--preload", "-w", str(WORKERS),
                 "--threads", "2", "-b", f"127.0.0.1:{port}", "--timeout", "120",
                 "--graceful-timeout", "10", "--chdir", str(HERE), "fleet_wsgi:app"],
                cwd=str(short_dir), env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        app = Gunicorn(proc, f"http://127.0.0.1:{port}", log)
        started.append(app)
        deadline = time.monotonic() + RUN_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"gunicorn did not start:\n{app.text()}")
            time.sleep(0.1)
        return app

    yield start
    for app in started:
        _stop_group(app.proc, 30)


def _stop_group(proc: subprocess.Popen[bytes], wait: float) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _check_answers(answers: list[dict[str, Any]], via: str) -> set[int]:
    """Every answer right (``answers[i]`` is the i-th job's); returns the pids that answered."""
    for i, answer in enumerate(answers):
        assert answer.get("status", 200) == 200, answer
        assert answer["text"] == _job(i)[2], (i, answer)
        assert answer["is_error"] is False, answer
        assert answer["via"] == via, answer
    return {answer["pid"] for answer in answers}


def _gone_within(fleet: Fleet, wait: float) -> bool:
    return wait_for(lambda: fleet.total() == 0, wait)


def test_gunicorn_preload_fleet_shares_one_process_per_server(
    fleet: Fleet, gateway_process: Callable[..., GatewayProcess],
    gunicorn: Callable[..., Gunicorn],
) -> None:  # fmt: skip
    gw = gateway_process(fleet.config)
    app = gunicorn(_env(fleet, gw))
    with Sampler(fleet) as sampler, ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(app.call, range(REQUESTS)))
    pids = _check_answers(answers, "gateway")
    assert app.proc.pid not in pids and len(pids) >= 2, pids
    # Exactly one process per configured server on the machine, all along, all the gateway's.
    assert fleet.counts() == {"plain": 1, "official": 1}, fleet.processes()
    assert sampler.most == {"plain": 1, "official": 1}
    assert all(_parent(pid) == gw.proc.pid for pids_ in fleet.processes().values()
               for pid in pids_), fleet.processes()  # fmt: skip
    print(f"\ngunicorn -w {WORKERS} through a gateway: {len(pids)} workers answered, "
          f"server processes {fleet.counts()}")

    # SIGTERM to the gateway: within a few seconds no server process is left ...
    assert gw.stop(signal.SIGTERM) == 0
    assert _gone_within(fleet, 5.0), fleet.processes()
    # ... and the workers start none of their own: their calls fail clearly, naming the socket.
    # Each waits out its timeout for a gateway that might come back; 2 s (not 10 s) keeps the
    # 16 calls short however gunicorn spreads them over its workers' threads.
    with ThreadPoolExecutor(8) as pool:
        after = list(pool.map(lambda i: app.call(i, timeout=2.0), range(16)))
    for answer in after:
        assert answer["status"] == 502, answer
        assert answer["type"] in GAP_ERRORS and gw.socket in answer["error"], answer
    assert fleet.total() == 0, fleet.processes()

    _stop_group(app.proc, 30)
    assert app.proc.returncode is not None


def test_gunicorn_preload_fleet_without_a_gateway_runs_servers_per_worker(
    fleet: Fleet, gunicorn: Callable[..., Gunicorn]
) -> None:
    """The contrast: the same fleet with no gateway runs each server in every worker."""
    # Every worker starts its own SDK server at once here: on a loaded 2-core machine that
    # takes longer than the gateway runs' call deadline (this test counts, it times nothing).
    app = gunicorn(_env(fleet, None, FLEET_CALL_TIMEOUT="40"))
    with Sampler(fleet) as sampler, ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(app.call, range(REQUESTS)))
    pids = _check_answers(answers, "local")
    counts = fleet.counts()
    print(f"\ngunicorn -w {WORKERS} without a gateway: {len(pids)} workers answered, "
          f"server processes {counts} (most at once {sampler.most})")
    # The master's warm-up server (plain) plus each worker's own servers.
    assert counts["plain"] >= 1 + len({a["pid"] for a in answers[0::2]}), counts
    assert counts["official"] >= len({a["pid"] for a in answers[1::2]}), counts
    assert sum(counts.values()) > len(SERVERS)
    _stop_group(app.proc, 30)
    assert _gone_within(fleet, 10.0), f"servers outlived gunicorn: {fleet.processes()}"


def test_gateway_killed_and_restarted_mid_run_costs_gunicorn_workers_reconnects(
    fleet: Fleet, gateway_process: Callable[..., GatewayProcess],
    gunicorn: Callable[..., Gunicorn],
) -> None:  # fmt: skip
    gw = gateway_process(fleet.config)
    app = gunicorn(_env(fleet, gw))
    # (monotonic start, end, job index, answer or the exception's repr)
    record: list[tuple[float, float, int, Any]] = []
    lock = threading.Lock()
    stop = threading.Event()
    counter = iter(range(10**9))

    def load() -> None:
        while not stop.is_set():
            with lock:
                i = next(counter)
            start = time.monotonic()
            try:
                outcome: Any = app.call(i)
            except Exception as exc:  # a request that hung past its 60 s, a refused one...
                outcome = repr(exc)
            with lock:
                record.append((start, time.monotonic(), i, outcome))

    def successes_since(t: float) -> int:
        with lock:
            return sum(1 for s, _, _, o in record
                       if s >= t and isinstance(o, dict) and o["status"] == 200)  # fmt: skip

    threads = [threading.Thread(target=load, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    try:
        assert wait_for(lambda: successes_since(0) >= 40, RUN_S), app.text()
        gw.stop(signal.SIGKILL)
        killed_at = time.monotonic()
        assert _gone_within(fleet, 5.0), fleet.processes()  # its servers died with it
        wait_for(lambda: len([r for r in record if r[0] > killed_at]) >= 16, 3.0)
        restarted = gateway_process(fleet.config, gw.socket)  # the same socket path
        restarted_at = time.monotonic()
        assert wait_for(lambda: successes_since(restarted_at) >= 80, RUN_S), app.text()
    finally:
        stop.set()
        for t in threads:
            t.join(90)
    assert not any(t.is_alive() for t in threads), "a request hung"

    wrong, gap_errors, late_errors = [], [], []
    for start, _, i, outcome in record:
        if not isinstance(outcome, dict):
            (late_errors if start >= restarted_at else gap_errors).append(outcome)
        elif outcome["status"] == 200:
            if outcome["text"] != _job(i)[2] or outcome["via"] != "gateway":
                wrong.append((i, outcome))
        elif start >= restarted_at:
            late_errors.append(outcome)
        else:
            gap_errors.append(outcome)
    assert wrong == [], wrong
    # After the restart, every call succeeds (the workers reconnect within their deadline).
    assert late_errors == [], late_errors[:5]
    # During the gap, an error is clear: a connect failure or a timeout saying the gateway on
    # its socket could not be reached, and in which phase.
    for error in gap_errors:
        assert isinstance(error, dict) and error["status"] == 502, error
        assert error["type"] in GAP_ERRORS, error
        assert f"the gateway on {gw.socket} is unreachable (" in error["error"] or (
            f"connected by another thread through the gateway on {gw.socket}" in error["error"]
        ) or (  # a call that waited for the gateway to come back, then ran out of time
            f"the gateway on {gw.socket} was unreachable for part of the call (" in error["error"]
        ), error
    # No call hangs: each ended within its own deadline plus a slack (the HTTP hop included).
    slowest = max(end - start for start, end, _, _ in record)
    assert slowest < CALL_TIMEOUT + 1.0, slowest
    workers = {o["pid"] for s, _, _, o in record
               if s >= restarted_at and isinstance(o, dict)}  # fmt: skip
    assert len(workers) >= 2, workers
    assert fleet.counts() == {"plain": 1, "official": 1}, fleet.processes()
    assert all(_parent(pid) == restarted.proc.pid for pids in fleet.processes().values()
               for pid in pids)  # fmt: skip
    print(f"\nkill and restart: {len(record)} calls, {len(gap_errors)} failed in the gap "
          f"({sorted({e['type'] for e in gap_errors if isinstance(e, dict)})}), "
          f"{successes_since(restarted_at)} right after the restart from {len(workers)} workers")
    assert restarted.stop(signal.SIGTERM) == 0
    assert _gone_within(fleet, 5.0), fleet.processes()
    # No orphans: gunicorn's workers end with it, and none started a server of its own.
    workers_alive = [p for p in workers if os.path.exists(f"/proc/{p}")]
    _stop_group(app.proc, 30)
    assert wait_for(lambda: not any(_running(p) for p in workers_alive), 10.0), workers_alive
    assert fleet.total() == 0, fleet.processes()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


# --- Celery -----------------------------------------------------------------------------------


@pytest.fixture
def redis_url(short_dir: Path) -> Iterator[str]:
    """A private redis-server on a free 127.0.0.1 port (tests/fleet/conftest.py's approach)."""
    pytest.importorskip("redis")
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (make test installs it)")
    import redis

    port = _free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(short_dir), "--daemonize", "no", "--loglevel", "warning"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}"
    try:
        ok = wait_for(lambda: _ping(redis, url), 30.0)
        assert ok, "redis-server did not start"
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _ping(redis: Any, url: str) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.RedisError:
        return False


def test_celery_prefork_fleet_shares_one_process_per_server(
    fleet: Fleet, gateway_process: Callable[..., GatewayProcess], redis_url: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    celery = pytest.importorskip("celery")
    gw = gateway_process(fleet.config)
    broker, backend = f"{redis_url}/0", f"{redis_url}/1"
    log = tmp_path / "celery.log"
    env = _env(fleet, gw, FLEET_BROKER=broker, FLEET_BACKEND=backend)
    with open(log, "wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "fleet_celery", "worker", "--pool=prefork",
             f"--concurrency={WORKERS}", "--loglevel=WARNING", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "-n", f"gwfleet-{uuid.uuid4().hex[:6]}@localhost"],
            cwd=str(HERE), env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    client = celery.Celery("gwfleet-test", broker=broker, backend=backend)
    try:
        with Sampler(fleet) as sampler:
            results = [client.send_task("fleet.call", args=[*_job(i)[:2]],
                                        kwargs={"timeout": CALL_TIMEOUT})
                       for i in range(REQUESTS)]  # fmt: skip
            deadline = time.monotonic() + RUN_S * 2
            answers = []
            for result in results:
                left = deadline - time.monotonic()
                assert left > 0, f"the tasks did not finish in time:\n{log.read_text()[-3000:]}"
                answers.append(result.get(timeout=left))
        pids = _check_answers(answers, "gateway")
        assert worker.pid not in pids and len(pids) >= 2, pids
        assert fleet.counts() == {"plain": 1, "official": 1}, fleet.processes()
        assert sampler.most == {"plain": 1, "official": 1}
        assert all(_parent(pid) == gw.proc.pid for pids_ in fleet.processes().values()
                   for pid in pids_), fleet.processes()  # fmt: skip
        print(f"\ncelery --concurrency {WORKERS} through a gateway: {len(pids)} pool processes "
              f"answered, server processes {fleet.counts()}")
    finally:
        _stop_group(worker, 60)
        client.close()
    assert worker.returncode is not None
    assert fleet.counts() == {"plain": 1, "official": 1}  # the gateway's, still serving
    assert gw.stop(signal.SIGTERM) == 0
    assert _gone_within(fleet, 5.0), fleet.processes()
