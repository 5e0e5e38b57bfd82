"""The hand-off stress run, as a program (``test_handoff_stress.py`` runs it in a fresh
interpreter per kernel build, so each build gets its own leader/follower choice and real
SIGINTs reach a main thread that belongs to this run alone).

    python stress_worker.py ERA RECORD_PATH SEED SECONDS

Eight threads share one Client to ``tests/peers/slow_server.py`` and mix, at random: plain
calls, calls that bring log notifications, calls during which the server asks the client
for its roots, calls with short timeouts, calls cancelled through ``cancel_event``, and
``submit()`` futures that are cancelled or awaited. The main thread makes calls too while
another thread sends it real SIGINTs. Each outcome is checked against what that caller
asked for: its own answer (the text it sent), or its own clear error (RequestTimeout
within its timeout, RequestCancelled, CancelledError, KeyboardInterrupt on the main thread).
Every operation must end within its own bound. At the end the same connection (same server
process) must still answer. Prints one JSON line of counts; exits 1 with the problems.
"""

from __future__ import annotations

import collections
import json
import random
import signal
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import mcp_lite
from mcp_lite import RequestCancelled, RequestTimeout

SERVER = str(Path(__file__).resolve().parents[1] / "peers" / "slow_server.py")
CALL_TIMEOUT = 30.0  # generous: the machine may be loaded; a stall still shows
# How late past its own bound an outcome may come before it counts as a stall: generous,
# since this checks that nothing hangs, not how fast anything is (a loaded CI machine).
SLACK = 60.0


def main() -> int:
    era, record, seed, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    # Python's own Ctrl-C handler, even when started with SIGINT ignored (a background job
    # of a non-interactive shell, and its children, inherit SIG_IGN).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    logs: collections.Counter[str] = collections.Counter()
    client = mcp_lite.connect(
        [sys.executable, SERVER, record],
        protocol_version=era,
        roots=["file:///srv/a", "file:///srv/b"],
        log_handler=lambda params: logs.update(["log"]),
        timeout=CALL_TIMEOUT,
    )
    pid = client.transport.pid  # type: ignore[union-attr]
    leading = bool(getattr(client.transport, "can_lead", False))
    counts: collections.Counter[str] = collections.Counter()
    problems: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def note(what: str) -> None:
        with lock:
            counts[what] += 1

    def problem(what: str) -> None:
        with lock:
            problems.append(what)

    def one(rng: random.Random, tag: str, kinds: list[str]) -> None:
        kind = rng.choice(kinds)
        text = f"{tag}-{rng.random():.12f}"
        start = time.monotonic()
        bound = CALL_TIMEOUT
        try:
            if kind == "echo":
                got = client.call_tool("echo", {"text": text}).text
                if got != text:
                    problem(f"{tag}: echo got {got!r}, not its own {text!r}")
            elif kind == "notify":
                n = rng.randint(1, 5)
                got = client.call_tool("notify_then_echo", {"text": text, "n": n}).text
                if got != text:
                    problem(f"{tag}: notify_then_echo got {got!r}, not {text!r}")
            elif kind == "roots":
                got = client.call_tool("roots_echo", {"text": text}).text
                if got != f"{text}:2":
                    problem(f"{tag}: roots_echo got {got!r}, not {text}:2")
            elif kind == "timeout":
                bound = rng.uniform(0.05, 0.4)
                try:
                    got = client.call_tool(
                        "wait", {"seconds": rng.uniform(0.0, 0.5)}, timeout=bound
                    ).text
                    if got != "waited":
                        problem(f"{tag}: wait got {got!r}")
                except RequestTimeout:
                    note("timed out")
            elif kind == "cancel":
                cancel = threading.Event()
                threading.Timer(rng.uniform(0.0, 0.1), cancel.set).start()
                bound = 0.1
                try:
                    client.call_tool("wait", {"seconds": 10}, cancel_event=cancel)
                    problem(f"{tag}: a cancelled wait returned")
                except RequestCancelled:
                    note("cancelled")
            elif kind == "submit":
                future = client.submit("tools/call", {"name": "echo", "arguments": {"text": text}})
                if rng.random() < 0.5 and future.cancel():
                    try:
                        future.result(0)
                        problem(f"{tag}: a cancelled future gave a result")
                    except CancelledError:
                        note("future cancelled")
                else:
                    got = future.result(CALL_TIMEOUT)["content"][0]["text"]
                    if got != text:
                        problem(f"{tag}: submit got {got!r}, not {text!r}")
            note(kind)
        except (RequestTimeout, RequestCancelled, CancelledError) as exc:
            problem(f"{tag}: {kind} failed with {exc!r}")
        finally:
            took = time.monotonic() - start
            if took > bound + SLACK:
                problem(f"{tag}: {kind} took {took:.1f} s (its bound: {bound:.2f} s)")

    def worker(index: int) -> None:
        rng = random.Random(seed * 100 + index)
        kinds = ["echo", "notify", "roots", "timeout", "cancel", "submit"]
        n = 0
        while time.monotonic() < stop_at:
            n += 1
            try:
                one(rng, f"t{index}.{n}", kinds)
            except Exception as exc:  # anything else is a problem, never a hang
                problem(f"t{index}.{n}: unexpected {exc!r}")

    # One call before the storm: what a first call imports lazily is imported now. A SIGINT
    # landing inside a module's first import can leave CPython's import lock held for good
    # (a CPython limitation, not ours); the storm tests the hand-offs, not that.
    if client.call_tool("echo", {"text": "warm"}).text != "warm":
        problems.append("the first call answered wrongly")

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(8)]
    for thread in threads:
        thread.start()

    # The main thread calls too, and gets real SIGINTs in the middle of its calls.
    interrupting = threading.Event()
    main_ident = threading.main_thread().ident
    assert main_ident is not None

    def interrupter() -> None:
        rng = random.Random(seed)
        while not interrupting.wait(rng.uniform(0.002, 0.05)):
            signal.pthread_kill(main_ident, signal.SIGINT)
            note("SIGINT sent")

    killer = threading.Thread(target=interrupter, daemon=True)
    killer.start()
    rng = random.Random(seed - 1)
    n = 0
    try:
        while time.monotonic() < stop_at:
            n += 1
            try:
                one(rng, f"main.{n}", ["echo", "echo", "notify", "roots"])
            except KeyboardInterrupt:
                note("interrupted")
    finally:
        interrupting.set()
    # A SIGINT may still be on its way: let it land here, not in the checks below.
    for _ in range(20):
        try:
            killer.join(0.05)
            if not killer.is_alive():
                time.sleep(0.05)
                break
        except KeyboardInterrupt:
            note("interrupted")
    for thread in threads:
        thread.join(2 * (CALL_TIMEOUT + SLACK))
        if thread.is_alive():
            problems.append(f"{thread.name} never finished: a stall")
    # The same connection, the same server process, still answers.
    try:
        if client.call_tool("echo", {"text": "after"}).text != "after":
            problems.append("the connection answered wrongly afterwards")
    except Exception as exc:
        problems.append(f"the connection is unusable afterwards: {exc!r}")
    if client.transport is None or client.transport.pid != pid:  # type: ignore[union-attr]
        problems.append("the connection was replaced (the server process changed)")
    client.close()
    counts.update(logs)
    print(json.dumps({"counts": counts, "problems": problems, "leading": leading}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
