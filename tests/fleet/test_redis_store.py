"""RedisTokenStore against a real Redis: the TokenStore protocol, the fleet-wide lock, the
shared needs-auth cache, and a fleet of processes refreshing one rotating refresh token."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite.auth import OAuth, RedisTokenStore, TokenStore, fetch_redirect
from mcp_lite.errors import ConnectError, RequestTimeout

redis = pytest.importorskip("redis")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_tokens_round_trip_under_hashed_keys(redis_url: str) -> None:
    store = RedisTokenStore(redis_url, prefix="t1:")
    assert isinstance(store, TokenStore)
    key = "tokens https://as.example https://mcp.example/mcp"
    assert store.load(key) is None
    store.save(key, {"tokens": {"access_token": "secret-at"}})
    assert store.load(key) == {"tokens": {"access_token": "secret-at"}}
    # Another store object (another worker) sees it.
    assert RedisTokenStore(redis_url, prefix="t1:").load(key) == store.load(key)
    assert RedisTokenStore(redis_url, prefix="other:").load(key) is None
    keys = [k.decode() for k in redis.Redis.from_url(redis_url).keys("*")]
    assert len(keys) == 1 and keys[0].startswith("t1:oauth:")
    assert "example" not in keys[0]
    store.delete(key)
    assert store.load(key) is None


def test_errors_and_repr_never_show_the_password() -> None:
    store = RedisTokenStore("redis://user:hunter2@127.0.0.1:1/0", socket_timeout=2)
    assert "hunter2" not in repr(store)
    with pytest.raises(ConnectError) as caught:
        store.load("tokens x")
    assert "hunter2" not in str(caught.value) and "127.0.0.1:1" in str(caught.value)
    assert "connection refused" in str(caught.value)  # the cause in words, not a class name
    assert "ConnectionError" not in str(caught.value)


def test_lock_serialises_processes(redis_url: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "lock_worker.py"), redis_url, "40"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        )
        for _ in range(6)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()[-2000:]
    assert int(redis.Redis.from_url(redis_url).get("locktest:counter")) == 6 * 40


def test_lock_times_out_when_held(redis_url: str) -> None:
    store = RedisTokenStore(redis_url)
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with store.lock("k", timeout=5):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(30)
        started = time.monotonic()
        with pytest.raises(RequestTimeout), store.lock("k", timeout=0.3):
            pass
        assert time.monotonic() - started >= 0.3
        with store.lock("another key", timeout=1):  # locks are per key
            pass
    finally:
        release.set()
        thread.join(30)
    with store.lock("k", timeout=5):  # released by its holder
        pass


def test_an_expired_holder_never_releases_the_next_holders_lock(redis_url: str) -> None:
    slow = RedisTokenStore(redis_url, lock_ttl=0.2)
    other = RedisTokenStore(redis_url, lock_ttl=30)
    raw = redis.Redis.from_url(redis_url)
    with slow.lock("k", timeout=5):
        time.sleep(0.4)  # outlives its lock: the lock expired by itself
        with other.lock("k", timeout=5):
            pass  # got it (the dead holder's lock expired)
        other_cm = other.lock("k", timeout=5)
        other_cm.__enter__()
    # The slow holder's release did not free the lock the other one holds now.
    assert [k for k in raw.keys("mcp-lite:lock:*")], "the other holder's lock was deleted"
    other_cm.__exit__(None, None, None)
    assert raw.keys("mcp-lite:lock:*") == []


def test_needs_auth_cache_is_shared_and_expires(redis_url: str) -> None:
    a = RedisTokenStore(redis_url).needs_auth_cache(ttl=0.5)
    b = RedisTokenStore(redis_url).needs_auth_cache(ttl=0.5)
    assert not b.contains("srv abc")
    a.add("srv abc")
    assert b.contains("srv abc")
    b.discard("srv abc")
    assert not a.contains("srv abc")
    a.add("srv abc")
    time.sleep(0.8)
    assert not b.contains("srv abc")


def test_hub_records_needs_auth_for_every_worker(
    redis_url: str, auth_server: Callable[..., object]
) -> None:
    server = auth_server()
    config = {"mcpServers": {"remote": {"type": "http", "url": server.url}}}  # type: ignore[attr-defined]
    cache = RedisTokenStore(redis_url).needs_auth_cache()
    auth = OAuth(server.url, store=RedisTokenStore(redis_url), open_browser=False)  # type: ignore[attr-defined]
    options = {"auth": auth, "timeout": 20, "protocol_version": "2025-11-25"}
    with mcp_lite.Hub(config, auth_cache=cache, client_options=options) as hub:
        with pytest.raises(mcp_lite.AuthRequired):
            hub.client("remote")
        assert hub.status()["remote"].state == "needs-auth"
    tried = len(server.requests_to("/mcp"))  # type: ignore[attr-defined]
    # Another worker's Hub (its own cache object on the same Redis) does not try again.
    other = RedisTokenStore(redis_url).needs_auth_cache()
    with (
        mcp_lite.Hub(config, auth_cache=other, client_options=options) as hub,
        pytest.raises(mcp_lite.AuthRequired),
    ):
        hub.client("remote")
    assert len(server.requests_to("/mcp")) == tried  # type: ignore[attr-defined]


def _expire_shared_tokens(redis_url: str, prefix: str) -> int:
    raw = redis.Redis.from_url(redis_url)
    changed = 0
    for key in raw.keys(f"{prefix}oauth:*"):
        record = json.loads(raw.get(key))
        tokens = record["value"].get("tokens")
        if tokens:
            tokens["expires_at"] = time.time() - 5
            raw.set(key, json.dumps(record))
            changed += 1
    return changed


def test_a_fleet_refreshes_a_rotating_refresh_token_once_and_stays_authorized(
    redis_url: str, auth_server: Callable[..., object]
) -> None:
    # Each refresh takes 0.5 s: without a fleet-wide lock every worker would present the same
    # refresh token within that window, and the second one would revoke the family.
    server = auth_server(rotate_refresh=True, expires_in=3600, refresh_delay=0.5)
    url = server.url  # type: ignore[attr-defined]
    store = RedisTokenStore(redis_url, prefix="fleet:")
    with mcp_lite.connect(url, auth=OAuth(url, store=store, authorization_handler=fetch_redirect),
                          timeout=20, protocol_version="2025-11-25") as client:
        assert client.call_tool("echo", {}).text == "ok"
    assert _expire_shared_tokens(redis_url, "fleet:") == 1

    workers = 8
    start_at = time.time() + 3.0  # after every interpreter has started
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "refresh_worker.py"), url, redis_url, str(start_at)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        )
        for _ in range(workers)
    ]
    failures = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        if proc.returncode != 0 or b"authorized" not in out:
            failures.append(err.decode(errors="replace")[-1500:])
    assert not failures, failures[0]
    assert server.reuse_detected == 0  # type: ignore[attr-defined]
    assert server.refreshes == 1  # type: ignore[attr-defined]  # one worker refreshed, the rest reused it
    assert server.requests_to("/authorize") and len(server.requests_to("/authorize")) == 1  # type: ignore[attr-defined]
    # Still authorized afterwards, from the shared store alone.
    def refuse(authorization_url: str) -> str:
        raise AssertionError("asked to log in again")

    later = OAuth(url, store=RedisTokenStore(redis_url, prefix="fleet:"),
                  authorization_handler=refuse, open_browser=False)
    with mcp_lite.connect(url, auth=later, timeout=20, protocol_version="2025-11-25") as client:
        assert client.call_tool("echo", {}).text == "ok"
