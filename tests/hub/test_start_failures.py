"""``StartFailures``: a failure is its own thread's only (others see none), taken once,
expired after ``KEEP``."""

from __future__ import annotations

import threading

from mcp_lite.gateway.start_failures import StartFailures


def _on_thread(fn) -> object:  # type: ignore[no-untyped-def]
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_a_failure_is_its_thread_s_only_and_taken_once() -> None:
    f: StartFailures[str] = StartFailures()
    assert f.get() is None and f.pop() is None
    f.put("boom")
    assert _on_thread(f.get) is None and _on_thread(f.pop) is None  # not another's
    assert f.get() == "boom" and f.get() == "boom"
    assert f.pop() == "boom"
    assert f.get() is None and f.pop() is None


def test_an_expired_failure_is_gone() -> None:
    f: StartFailures[str] = StartFailures()
    f.KEEP = -1.0
    f.put("old")
    assert f.get() is None and f.pop() is None


def test_a_failure_ends_with_its_thread() -> None:
    f: StartFailures[str] = StartFailures()
    for _ in range(10):
        _on_thread(lambda: f.put("x"))  # each thread ends holding one
    assert f.get() is None
    f.put("mine")
    assert _on_thread(f.pop) is None
    assert f.pop() == "mine"
