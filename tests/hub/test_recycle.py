"""Servers that recycle: ``Hub(idle_timeout=, max_lifetime=)`` and the entries' own
``idleShutdown`` / ``maxLifetime``, seen through ``Hub.status()`` and the process table, with
real stdio servers (the demo server; its ``countdown(n)`` tool takes n x 0.1 s).

Timings are only ever "within the setting plus a slack under a second"."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mcp_lite.errors import ConfigError, ConnectionClosed
from mcp_lite.hub import Hub

if TYPE_CHECKING:
    from conftest import HubPaths  # tests/hub/conftest.py

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo_server.py")
SLACK = 1.0
THREAD = "mcp-lite-hub-recycle"


def _demo(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [DEMO], **extra}


def _wait(what: Callable[[], bool], timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if what():
            return True
        time.sleep(0.02)
    return what()


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _recycle_threads() -> list[threading.Thread]:
    """Threads of the old recycle timer: there must be none (the sweep is a ``_timer`` entry)."""
    return [t for t in threading.enumerate() if t.name == THREAD]


def _armed(hub: Hub) -> bool:
    """The Hub's recycle entry is on the process timer (or its sweep is under way)."""
    return bool(hub._conns._recycler.armed)


def _add(hub: Hub, server: str = "demo") -> str:
    return hub.call_tool(f"mcp__{server}__add", {"a": 2, "b": 3}, timeout=20).text


def test_an_unused_server_is_stopped_and_the_next_call_starts_it(no_leftover_processes) -> None:
    with Hub({"demo": _demo()}, idle_timeout=0.3) as hub:
        definitions = hub.tool_definitions()  # lists tools and resources
        assert _add(hub) == "5"
        first = hub.status()["demo"]
        assert (first.state, first.idle_timeout, first.max_lifetime) == ("connected", 0.3, None)
        assert first.pid is not None and _running(first.pid)
        assert first.started_at is not None and first.age is not None and first.last_used
        assert first.recycles == 0
        assert _wait(lambda: hub.status()["demo"].state == "idle", 0.3 + SLACK)
        idle = hub.status()["demo"]
        assert idle.recycles == 1 and idle.pid is None and idle.started_at is None
        assert "idle_timeout" in (idle.error or "") and idle.tools_count == 4  # lists kept
        assert _wait(lambda: not _running(first.pid), SLACK), "the idle server still runs"
        # Served from the kept lists: no server is started for it.
        assert hub.tool_definitions() == definitions
        assert hub.status()["demo"].state == "idle"
        assert _add(hub) == "5"  # starts it again, transparently
        again = hub.status()["demo"]
        assert again.state == "connected" and again.pid not in (None, first.pid)
        assert again.recycles == 1
    no_leftover_processes()


def test_a_server_past_its_lifetime_restarts_between_calls(no_leftover_processes) -> None:
    pids: set[int] = set()
    with Hub({"demo": _demo()}, max_lifetime=0.4) as hub:
        end = time.monotonic() + 1.6
        while time.monotonic() < end:  # a steady stream of calls: none may fail
            assert _add(hub) == "5"
            pid = hub.status()["demo"].pid
            if pid is not None:
                pids.add(pid)
            time.sleep(0.03)
        status = hub.status()["demo"]
        assert status.max_lifetime == 0.4 and status.idle_timeout is None
        assert status.recycles >= 1 and len(pids) >= 2
        # Every replaced process ends: at most the current one runs.
        assert _wait(lambda: sum(map(_running, pids)) <= 1, SLACK)
    no_leftover_processes()


def test_a_call_spanning_the_lifetime_completes_and_the_restart_follows_it(
    no_leftover_processes,
) -> None:
    with Hub({"demo": _demo()}, max_lifetime=0.3) as hub:
        assert _add(hub) == "5"
        old = hub.status()["demo"].pid
        assert old is not None
        results: list[str] = []
        slow = threading.Thread(
            target=lambda: results.append(
                hub.call_tool("mcp__demo__countdown", {"n": 12}, timeout=20).text
            )
        )
        slow.start()
        # The lifetime passes during the 1.2 s call: the server is retired, not stopped.
        assert _wait(lambda: hub.status()["demo"].state == "idle", 0.3 + SLACK)
        status = hub.status()["demo"]
        assert status.recycles == 1 and "in flight" in (status.error or "")
        assert slow.is_alive() and _running(old), "the server was stopped under its call"
        # A new call meanwhile reaches a new process; the old one still serves the slow call.
        assert _add(hub) == "5"
        new = hub.status()["demo"].pid
        assert new not in (None, old) and _running(old)
        slow.join(20)
        assert results == ["liftoff"]
        assert _wait(lambda: not _running(old), SLACK), "the retired server outlived its call"
    no_leftover_processes()


def test_a_client_kept_from_hub_client_says_it_was_recycled(no_leftover_processes) -> None:
    with Hub({"demo": _demo()}, idle_timeout=0.3) as hub:
        kept = hub.client("demo")
        assert kept.call_tool("add", {"a": 2, "b": 3}, timeout=20).text == "5"
        assert _wait(lambda: hub.status()["demo"].state == "idle", 0.3 + SLACK)
        assert kept.closed
        with pytest.raises(ConnectionClosed) as caught:
            kept.call_tool("add", {"a": 2, "b": 3}, timeout=20)
        message = str(caught.value)
        assert "recycled MCP server 'demo'" in message and "idle_timeout of 0.3 s" in message
        assert "hub.client('demo')" in message
        fresh = hub.client("demo")  # the live one, on a new process
        assert fresh is not kept and fresh.call_tool("add", {"a": 1, "b": 1}).text == "2"
    no_leftover_processes()


def test_a_client_retired_under_its_call_says_so_after_it(no_leftover_processes) -> None:
    with Hub({"demo": _demo()}, max_lifetime=0.3) as hub:
        kept = hub.client("demo")
        assert _add(hub) == "5"
        slow = threading.Thread(
            target=lambda: hub.call_tool("mcp__demo__countdown", {"n": 12}, timeout=20)
        )
        slow.start()
        assert _wait(lambda: hub.status()["demo"].state == "idle", 0.3 + SLACK)
        slow.join(20)
        # closed once its last call ended, with the recycle as the reason
        assert _wait(lambda: kept.closed, SLACK)
        with pytest.raises(ConnectionClosed, match="max_lifetime of 0.3 s"):
            kept.list_tools(timeout=20)
    no_leftover_processes()


@pytest.mark.parametrize("setting", ["max_lifetime", "idle_timeout"])
def test_a_call_made_on_a_kept_client_is_never_cut_by_a_recycle(
    setting: str, no_leftover_processes
) -> None:
    """A call made on the Client itself (not through the Hub, so no lease) holds the server
    as a Hub call does: the recycle waits for it, then closes that client."""
    with Hub({"demo": _demo()}, **{setting: 0.3}) as hub:
        kept = hub.client("demo")
        old = hub.status()["demo"].pid
        assert old is not None
        results: list[Any] = []

        def slow() -> None:
            try:
                results.append(kept.call_tool("countdown", {"n": 20}, timeout=20).text)
            except Exception as exc:  # (the assertion below shows it)
                results.append(exc)

        caller = threading.Thread(target=slow)
        caller.start()
        # (the call takes 2 s at least; each wait below ends well before)
        if setting == "idle_timeout":  # a call in flight is a use: not idle
            time.sleep(0.7)  # twice the setting
            during = hub.status()["demo"]
            assert during.state == "connected" and during.recycles == 0
        else:  # retired, not stopped: new calls go to a new process
            assert _wait(lambda: hub.status()["demo"].state == "idle", 0.3 + SLACK)
            assert "in flight" in (hub.status()["demo"].error or "")
        assert caller.is_alive() and _running(old), "the server was stopped under its call"
        caller.join(20)
        assert results == ["liftoff"], "the recycle cut a call in flight"
        assert _wait(lambda: hub.status()["demo"].state == "idle", 0.3 + SLACK)
        assert setting in (hub.status()["demo"].error or "")
        # Once its call ended, the retired client closes (its server stops), with the reason.
        assert _wait(lambda: kept.closed, SLACK)
        assert _wait(lambda: not _running(old), SLACK), "the retired server outlived its call"
        with pytest.raises(ConnectionClosed, match=f"{setting} of 0.3 s"):
            kept.list_tools(timeout=20)
        assert _add(hub) == "5"  # the next Hub call starts a new process
    no_leftover_processes()


def test_short_calls_on_a_kept_client_keep_its_server_from_idling(no_leftover_processes) -> None:
    """Calls made directly between the Hub's looks (none in flight when it looks) are uses."""
    with Hub({"demo": _demo()}, idle_timeout=0.3) as hub:
        kept = hub.client("demo")
        end = time.monotonic() + 1.5  # five idle timeouts
        while time.monotonic() < end:
            assert kept.call_tool("add", {"a": 2, "b": 3}, timeout=20).text == "5"
            time.sleep(0.05)
        status = hub.status()["demo"]
        assert (status.state, status.recycles) == ("connected", 0) and not kept.closed
        # Unused from now: idle within two timeouts (it is noticed at the Hub's next look).
        assert _wait(lambda: hub.status()["demo"].state == "idle", 2 * 0.3 + SLACK)
        assert kept.closed
    no_leftover_processes()


def test_an_entry_s_own_settings_beat_the_hub_s(hub_paths: HubPaths) -> None:
    hub_paths.write(
        hub_paths.project / ".mcp.json",
        {
            "mcpServers": {
                "short": _demo(idleShutdown=0.3, maxLifetime=30),
                "never": _demo(idleShutdown=0),
                "plain": _demo(),
            }
        },
    )
    hub = Hub.from_config(
        hub_paths.project,
        trust_project=True,
        user_dir=hub_paths.home,
        managed_path=hub_paths.managed,
        idle_timeout=60,
    )
    with hub:
        status = hub.status()
        assert (status["short"].idle_timeout, status["short"].max_lifetime) == (0.3, 30.0)
        assert (status["never"].idle_timeout, status["never"].max_lifetime) == (None, None)
        assert (status["plain"].idle_timeout, status["plain"].max_lifetime) == (60.0, None)
        for name in ("short", "never"):
            assert _add(hub, name) == "5"
        assert _wait(lambda: hub.status()["short"].state == "idle", 0.3 + SLACK)
        assert hub.status()["never"].state == "connected"


def test_recycle_keys_are_checked_and_stdio_only() -> None:
    hub = Hub(
        {
            "neg": _demo(maxLifetime=-1),
            "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "maxLifetime": 5},
            "typo": _demo(idleShutdwn=5),
        },
        idle_timeout=10,
    )
    with hub:
        status = hub.status()
        assert all(s.state == "failed" for s in status.values())
        assert "maxLifetime" in (status["neg"].error or "")
        assert "unknown key 'maxLifetime'" in (status["remote"].error or "")
        assert "did you mean 'idleShutdown'" in (status["typo"].error or "")
    for bad in (0, -1, "5", True):
        with pytest.raises(ConfigError, match="idle_timeout"):
            Hub({}, idle_timeout=bad)  # type: ignore[arg-type]


def test_in_process_and_remote_servers_do_not_recycle() -> None:
    from mcp_lite.demo import server

    with Hub({"mem": server}, idle_timeout=0.2, max_lifetime=0.2) as hub:
        assert _add(hub, "mem") == "5"
        status = hub.status()["mem"]
        assert (status.idle_timeout, status.max_lifetime) == (None, None)
        assert not _armed(hub)


def test_the_sweep_is_a_timer_entry_posted_to_a_worker(monkeypatch, no_leftover_processes) -> None:
    from mcp_lite import _timer
    from mcp_lite.hub._runtime.connections import Connections

    ran_on: list[str] = []
    sweep = Connections._sweep

    def recording(self: Connections) -> float | None:
        ran_on.append(threading.current_thread().name)
        return sweep(self)

    monkeypatch.setattr(Connections, "_sweep", recording)
    with Hub({"demo": _demo()}, idle_timeout=0.3) as hub:
        assert _add(hub) == "5"
        assert _armed(hub) and _timer.live() >= 1
        seen: list[threading.Thread] = []
        assert _wait(
            lambda: seen.extend(_recycle_threads()) or hub.status()["demo"].state == "idle",
            0.3 + SLACK,
        )
        assert not seen, "a thread of its own keeps the recycle time"
        # Swept on a worker, never on the timer thread (its callbacks must be short).
        assert ran_on and all(n.startswith("mcp-lite-hub-sweep") for n in ran_on), ran_on
    assert not _armed(hub)
    no_leftover_processes()


def test_recycling_is_off_by_default_and_starts_no_thread() -> None:
    with Hub({"demo": _demo()}) as hub:
        assert _add(hub) == "5"
        status = hub.status()["demo"]
        assert (status.idle_timeout, status.max_lifetime, status.recycles) == (None, None, 0)
        assert not _armed(hub)


def test_close_with_a_recycle_pending_leaves_no_thread_and_no_process(
    no_leftover_processes,
) -> None:
    hub = Hub({"demo": _demo()}, idle_timeout=0.5, max_lifetime=5)
    assert _add(hub) == "5"
    assert _armed(hub), "the Hub's recycle entry should be armed while a server is due"
    pid = hub.status()["demo"].pid
    hub.close()
    assert not _armed(hub) and pid is not None and not _running(pid)
    assert not _recycle_threads()
    no_leftover_processes()


def test_close_while_a_retired_server_finishes_a_call_stops_it(no_leftover_processes) -> None:
    hub = Hub({"demo": _demo()}, max_lifetime=0.2)
    errors: list[BaseException] = []

    def slow() -> None:
        try:
            hub.call_tool("mcp__demo__countdown", {"n": 30}, timeout=20)
        except BaseException as exc:  # the Hub closes under it
            errors.append(exc)

    assert _add(hub) == "5"
    thread = threading.Thread(target=slow)
    thread.start()
    assert _wait(lambda: hub.status()["demo"].state == "idle", 0.2 + SLACK)
    hub.close()
    thread.join(10)
    assert not thread.is_alive() and len(errors) == 1 and not _armed(hub)
    no_leftover_processes()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_s_hub_recycles_on_its_own(no_leftover_processes) -> None:
    with Hub({"demo": _demo()}, idle_timeout=0.3) as hub:
        assert _add(hub) == "5"
        parent_pid = hub.status()["demo"].pid
        pid = os.fork()
        if pid == 0:  # the child: its own server, its own timer
            code = 1
            try:
                signal.alarm(20)
                ok = _add(hub) == "5"
                mine = hub.status()["demo"].pid
                ok = ok and mine not in (None, parent_pid)
                ok = ok and _wait(lambda: hub.status()["demo"].state == "idle", 0.3 + SLACK)
                ok = ok and mine is not None and _wait(lambda: not _running(mine), SLACK)
                ok = ok and _add(hub) == "5" and _armed(hub)
                hub.close()
                code = 0 if ok else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # The parent's Hub goes on as before: its own timer entry, its own server.
        assert _add(hub) == "5" and _armed(hub)
    no_leftover_processes()


def test_a_setting_added_by_update_keeps_the_connection_and_then_applies() -> None:
    with Hub({"demo": _demo()}) as hub:
        assert _add(hub) == "5"
        pid = hub.status()["demo"].pid
        hub.update({"demo": _demo(idleShutdown=0.3)})
        status = hub.status()["demo"]
        assert (status.state, status.pid, status.idle_timeout) == ("connected", pid, 0.3)
        assert _wait(lambda: hub.status()["demo"].state == "idle", 0.3 + SLACK)
        assert _add(hub) == "5"


def test_a_lease_of_a_connected_server_holds_it_as_a_lease_does() -> None:
    from mcp_lite.demo import server

    with Hub({"mem": server}) as hub:
        conns = hub._conns
        assert conns.lease_connected("mem") is None  # not connected yet: nothing held
        with pytest.raises(ConfigError):
            conns.lease_connected("nope")
        assert _add(hub, "mem") == "5"  # connected now
        life = conns._slot("mem").life
        held = conns.lease_connected("mem")
        assert held is not None
        with held as client, conns.lease("mem") as same:
            assert client is same
            assert life.users[client] == 2  # each holds it, as two leases do
        assert client not in life.users  # both released
