"""LruCache: bounded, least-recently-used eviction, thread-safe."""

from __future__ import annotations

import threading
from types import ModuleType

import pytest


def test_put_get_and_eviction_order(speedups: ModuleType) -> None:
    c = speedups.LruCache(3)
    for k in "abcd":
        c.put(k, k.upper())
    assert c.keys() == ["b", "c", "d"]
    assert c.get("a") is None
    assert c.get("a", "dflt") == "dflt"
    assert len(c) == 3 and c.maxsize == 3


def test_get_counts_as_use(speedups: ModuleType) -> None:
    c = speedups.LruCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1
    c.put("c", 3)
    assert c.keys() == ["a", "c"]


def test_contains_and_keys_do_not_count_as_use(speedups: ModuleType) -> None:
    c = speedups.LruCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert "a" in c and "z" not in c
    c.keys()
    c.put("c", 3)
    assert "a" not in c


def test_put_existing_updates_and_refreshes(speedups: ModuleType) -> None:
    c = speedups.LruCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("a", 10)
    c.put("c", 3)
    assert c.keys() == ["a", "c"]
    assert c.get("a") == 10


def test_stored_none_is_found(speedups: ModuleType) -> None:
    c = speedups.LruCache(2)
    c.put("a", None)
    assert "a" in c
    assert c.get("a", "dflt") is None


def test_delete(speedups: ModuleType) -> None:
    c = speedups.LruCache()
    c.put(1, "x")
    assert c.delete(1) is True
    assert c.delete(1) is False
    assert len(c) == 0


def test_delete_where(speedups: ModuleType) -> None:
    c = speedups.LruCache(10)
    for key in [("db", "tools"), ("fs", "tools"), ("db", "prompts"), ("web", "tools")]:
        c.put(key, 1)
    seen: list[object] = []

    def of_db(key: tuple[str, str]) -> bool:
        seen.append(key)
        return key[0] == "db"

    assert c.delete_where(of_db) == 2
    assert len(seen) == 4
    assert c.keys() == [("fs", "tools"), ("web", "tools")]
    assert c.delete_where(lambda k: False) == 0


def test_delete_where_predicate_error_removes_nothing(speedups: ModuleType) -> None:
    c = speedups.LruCache(10)
    for k in range(5):
        c.put(k, k)

    def boom(key: int) -> bool:
        if key == 3:
            raise RuntimeError("boom")
        return True

    with pytest.raises(RuntimeError, match="boom"):
        c.delete_where(boom)
    assert c.keys() == [0, 1, 2, 3, 4]
    c.put(5, 5)  # the lock was released
    assert len(c) == 6


def test_clear(speedups: ModuleType) -> None:
    c = speedups.LruCache(3)
    c.put("a", 1)
    c.clear()
    assert len(c) == 0 and c.keys() == [] and "a" not in c
    c.put("b", 2)
    assert c.keys() == ["b"]


def test_maxsize_zero_keeps_nothing(speedups: ModuleType) -> None:
    c = speedups.LruCache(0)
    c.put("a", 1)
    assert len(c) == 0 and c.get("a") is None


def test_default_maxsize_and_bad_maxsize(speedups: ModuleType) -> None:
    assert speedups.LruCache().maxsize == 100
    with pytest.raises(ValueError):
        speedups.LruCache(-1)
    with pytest.raises(TypeError):
        speedups.LruCache(1.5)


def test_unhashable_key_raises_and_releases_the_lock(speedups: ModuleType) -> None:
    c = speedups.LruCache()
    for op in (lambda: c.get([]), lambda: c.put([], 1), lambda: c.delete([]), lambda: [] in c):
        with pytest.raises(TypeError):
            op()
    c.put("ok", 1)
    assert c.get("ok") == 1


def test_threads_hammering_one_cache(speedups: ModuleType) -> None:
    c = speedups.LruCache(50)
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        try:
            start.wait(timeout=10)
            for i in range(3000):
                key = (n % 3, i % 70)
                c.put(key, i)
                c.get((n % 3, (i * 7) % 70))
                if i % 97 == 0:
                    c.delete_where(lambda k, n=n: k[0] == n % 3)
                if i % 13 == 0:
                    c.delete(key)
                assert len(c) <= 50
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,), name=f"lru-{n}") for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    keys = c.keys()
    assert len(keys) == len(set(keys)) == len(c) <= 50
    for k in keys:
        assert k in c
