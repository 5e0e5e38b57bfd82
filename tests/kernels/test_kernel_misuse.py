"""Python-level misuse of a kernel object never corrupts memory (issue 22, item 13).

Not reachable from the wire, but it must be impossible: copying or pickling an object that
holds parse state (in the compiled build a raw C buffer or a lock) refuses with ``TypeError``
in both builds; an object made with ``__new__`` alone, or by a subclass that skips
``__init__``, is valid (it works with the defaults); ``plain_shape`` refuses a list check
that is not a 3-tuple with ``ValueError`` instead of reading past the tuple.

Each case runs in a child interpreter, so a segfault (the compiled bug) fails the test
instead of killing pytest; the child prints ``ok`` when every assertion held.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from types import ModuleType

import pytest

STATEFUL = ["NdjsonSplitter", "SseParser", "ResponseIdScanner", "LruCache", "Gate"]


def run_child(speedups: ModuleType, body: str) -> None:
    """Run ``body`` with ``m`` bound to the kernel module under test; it must print ok."""
    script = f"import importlib\nm = importlib.import_module({speedups.__name__!r})\n"
    sanitized = os.environ.get("MCP_LITE_FUZZ_EXT")  # make fuzz: the ASan/UBSan build
    if sanitized and speedups.__name__ == "mcp_lite._speedups":
        script = (
            "import importlib.util\n"
            f"spec = importlib.util.spec_from_file_location('mcp_lite._speedups', {sanitized!r})\n"
            "m = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\n"
        )
    script += textwrap.dedent(body) + "\nprint('ok')\n"
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=os.getcwd(),
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (
        f"child exited with {proc.returncode} (a negative code is a signal: -11 is SIGSEGV)\n"
        f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
    )


MAKE = {
    "NdjsonSplitter": "m.NdjsonSplitter(64)",
    "SseParser": "m.SseParser(64)",
    "ResponseIdScanner": "m.ResponseIdScanner()",
    "LruCache": "m.LruCache(4)",
    "Gate": "m.Gate()",
    "HeldLock": "m.HeldLock(__import__('threading').Lock(), 0.0)",
}


@pytest.mark.parametrize("name", [*STATEFUL, "HeldLock"])
def test_copy_and_pickle_refuse(speedups: ModuleType, name: str) -> None:
    run_child(
        speedups,
        f"""
        import copy, pickle
        for fresh in (True, False):
            obj = {MAKE[name]}
            if not fresh:  # with state in it: a partial line, data, a key
                if hasattr(obj, "feed"):
                    obj.feed(b'data: {{"jsonrpc": "2.0", "id"')
                if hasattr(obj, "put"):
                    obj.put("k", "v")
            for how in [copy.copy, copy.deepcopy] + [
                (lambda o, p=p: pickle.dumps(o, p)) for p in range(pickle.HIGHEST_PROTOCOL + 1)
            ]:
                try:
                    how(obj)
                except TypeError as exc:
                    assert "{name}" in str(exc), exc
                else:
                    raise AssertionError("copied or pickled: " + repr(how))
        """,
    )


def test_splitter_keeps_working_after_refused_copies(speedups: ModuleType) -> None:
    """The bug was worst after a round trip: read_into wrote 64 KiB into freed memory."""
    run_child(
        speedups,
        """
        import copy, os, pickle
        s = m.NdjsonSplitter()
        r, w = os.pipe()
        os.write(w, b'{"a": 1}\\n{"b"')
        assert s.read_into(r, 1.0) == 1
        for how in (copy.copy, pickle.dumps):
            try:
                how(s)
            except TypeError:
                pass
        os.write(w, b': 2}\\n' + b'x' * 50000 + b'\\n')
        got = []
        while len(got) < 3:
            assert s.read_into(r, 1.0) >= 0
            frame = s.pop_frame()
            while frame is not None:
                got.append(frame)
                frame = s.pop_frame()
        assert got == [b'{"a": 1}', b'{"b": 2}', b'x' * 50000], [g[:20] for g in got]
        """,
    )


def test_objects_made_with_new_are_valid(speedups: ModuleType) -> None:
    run_child(
        speedups,
        """
        import os
        s = m.NdjsonSplitter.__new__(m.NdjsonSplitter)
        assert s.max_size == m.DEFAULT_MAX_SIZE and s.buffered == 0
        assert s.feed(b'{"a": 1}\\n{"b"') == [b'{"a": 1}'] and s.buffered == 4
        assert s.flush() == [b'{"b"']
        r, w = os.pipe()
        os.write(w, b'{"c": 3}\\n')
        t = m.NdjsonSplitter.__new__(m.NdjsonSplitter)
        assert t.read_into(r, 1.0) == 1 and t.pop_frame() == b'{"c": 3}' and t.pop_frame() is None
        assert t.route(print) is False

        p = m.SseParser.__new__(m.SseParser)
        assert p.max_size == m.DEFAULT_MAX_SIZE and p.last_event_id == "" and p.retry is None
        [ev] = p.feed(b"\\xef\\xbb\\xbfid: 1\\nretry: 5\\ndata: x\\n\\n")
        assert (ev.event, ev.data, ev.id, p.retry) == ("message", "x", "1", 5)

        sc = m.ResponseIdScanner.__new__(m.ResponseIdScanner)
        sc.feed(b'{"id": 7, "result": {}}')
        assert sc.response_id == 7

        c = m.LruCache.__new__(m.LruCache)
        assert c.maxsize == 100 and len(c) == 0 and c.get("k") is None and "k" not in c
        c.put("k", 1)
        c.put("j", 2)
        assert c.get("k") == 1 and c.keys() == ["j", "k"] and len(c) == 2
        assert c.delete("j") and c.delete_where(lambda k: True) == 1
        c.clear()
        assert repr(c) == "LruCache(maxsize=100, size=0)"

        g = m.Gate.__new__(m.Gate)
        assert not g.is_open() and g.wait(0.0) is False
        g.open()
        assert g.is_open() and g.wait(0.0) is True
        """,
    )


def test_subclasses_that_skip_init_are_valid(speedups: ModuleType) -> None:
    run_child(
        speedups,
        """
        class Cache(m.LruCache):
            def __init__(self):
                pass

        class Splitter(m.NdjsonSplitter):
            def __init__(self):
                pass

        class Parser(m.SseParser):
            def __init__(self):
                pass

        c = Cache()
        c.put(1, "a")
        assert c.get(1) == "a" and c.keys() == [1] and len(c) == 1
        assert c.delete_where(lambda k: k == 1) == 1 and len(c) == 0
        assert Splitter().feed(b"x\\ny\\n") == [b"x", b"y"]
        assert [e.data for e in Parser().feed(b"data: z\\n\\n")] == ["z"]
        """,
    )


@pytest.mark.parametrize("size", [0, 1, 2, 4])
def test_plain_shape_refuses_a_short_list_spec(speedups: ModuleType, size: int) -> None:
    run_child(
        speedups,
        f"""
        spec = ({{}}, frozenset(), "type", "extra")[:{size}]
        for value in ([], [{{}}], [{{"type": "text"}}] * 3):
            try:
                m.plain_shape({{"content": value}}, {{"content": spec}}, frozenset())
            except ValueError as exc:
                assert "not a tuple of {size}" in str(exc), exc
            else:
                raise AssertionError("accepted a list spec of {size}")
        """,
    )


def test_plain_shape_spec_of_three_still_works(speedups: ModuleType) -> None:
    checks = {"content": ({"type": frozenset({str})}, frozenset(), "type")}
    assert speedups.plain_shape({"content": [{"type": "text"}]}, checks, frozenset())
    assert not speedups.plain_shape({"content": [{"kind": "text"}]}, checks, frozenset())
    assert not speedups.plain_shape({"content": [{"type": 1}]}, checks, frozenset())
