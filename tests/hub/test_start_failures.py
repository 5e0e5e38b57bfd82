"""``StartFailures``: a failure is its own thread's only (others see none), taken once,
expired after ``KEEP``; threads that ended holding one do not keep it held for others."""

from __future__ import annotations

import threading

from mcp_lite.hub import _start_failures
from mcp_lite.hub._start_failures import StartFailures


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
    assert not f._holders  # none held: answered without the thread-local


def test_an_expired_failure_is_gone() -> None:
    f: StartFailures[str] = StartFailures()
    f.KEEP = -1.0
    f.put("old")
    assert f.get() is None and not f._holders


def test_threads_that_ended_holding_one_are_pruned(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(_start_failures, "_PRUNE_AT", 4)
    f: StartFailures[str] = StartFailures()
    for _ in range(10):
        _on_thread(lambda: f.put("x"))
    assert len(f._holders) <= 4
    f.put("mine")
    assert f.pop() == "mine"
