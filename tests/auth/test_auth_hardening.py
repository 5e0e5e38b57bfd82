"""OAuth under hostile peers and shared credentials: total deadlines on every exchange, a
threaded loopback receiver, logins bounded by the call that started them, token stores that
lock across processes, and processes that refresh the same rotating token without logging
each other out (127.0.0.1 only)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from authserver import AuthServer

import mcp_lite
from mcp_lite.auth import FileTokenStore, MemoryTokenStore, OAuth, fetch_redirect
from mcp_lite.auth._loopback import LoopbackReceiver
from mcp_lite.errors import AuthRequired, ConfigError, McpError, RequestTimeout

Start = Callable[..., AuthServer]
PINNED = "2025-11-25"
# A drip lasts minutes; anything bounded by a deadline of a few seconds ends long before.
GENEROUS = 30.0


def _login(server: AuthServer, store: Any) -> None:
    """One interactive-style login (the test server approves at once); tokens to ``store``."""
    auth = OAuth(server.url, authorization_handler=fetch_redirect, store=store)
    with mcp_lite.connect(server.url, auth=auth, timeout=20, protocol_version=PINNED) as client:
        client.list_tools()


def _finishes(fn: Callable[[], Any], within: float = 10.0) -> bool:
    """True when ``fn()`` returns (or raises) within ``within`` seconds."""
    done = threading.Event()

    def run() -> None:
        try:
            fn()
        except Exception:
            pass
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(within)


# --- total deadlines ----------------------------------------------------------------------


def test_a_dripping_token_endpoint_cannot_stall_token_past_its_timeout(auth_server: Start) -> None:
    server = auth_server(expires_in=0)  # stored tokens are always due for a refresh
    store = MemoryTokenStore()
    _login(server, store)
    server.b.drip = ("/token",)
    auth = OAuth(server.url, store=store, open_browser=False, timeout=600)
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        auth.token(timeout=2.0)
    assert time.monotonic() - started < GENEROUS
    # The lock is free again: another thread gets its answer at once.
    assert _finishes(lambda: auth.authorized)


def test_an_oauth_exchange_is_cut_by_the_process_timer_alone(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exchange's socket is shut down by an entry on ``mcp-lite-timer`` (the transports'
    ``Slot``): no ``threading.Timer`` and no other timekeeping thread is started for it."""
    server = auth_server(expires_in=0)
    store = MemoryTokenStore()
    _login(server, store)
    server.b.drip = ("/token",)
    auth = OAuth(server.url, store=store, open_browser=False, timeout=600)
    started: list[threading.Thread] = []
    start = threading.Thread.start

    def record(self: threading.Thread) -> None:
        started.append(self)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", record)
    with pytest.raises(RequestTimeout, match="authorizing"):
        auth.token(timeout=1.0)
    keepers = [
        t.name
        for t in [*started, *threading.enumerate()]
        if t.name != "mcp-lite-timer"
        and (isinstance(t, threading.Timer) or any(w in t.name for w in ("deadline", "watchdog")))
    ]
    assert keepers == []


def test_a_dripping_discovery_endpoint_is_cut_by_the_exchange_total(auth_server: Start) -> None:
    server = auth_server(drip=("/.well-known/oauth-protected-resource/mcp",))
    auth = OAuth(
        server.url, store=MemoryTokenStore(), authorization_handler=fetch_redirect, timeout=2.0
    )
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        auth.refresh(None, challenge=None)
    assert time.monotonic() - started < GENEROUS


def test_the_callers_deadline_reaches_oauth_through_the_transport(auth_server: Start) -> None:
    server = auth_server(expires_in=0)
    store = MemoryTokenStore()
    _login(server, store)
    server.b.drip = ("/token",)
    # The object's own limit is long: only the call's deadline can end the refresh early.
    auth = OAuth(server.url, store=store, open_browser=False, timeout=600)
    with pytest.raises(McpError):
        mcp_lite.connect(server.url, auth=auth, timeout=3, protocol_version=PINNED)
    # The worker that ran the refresh gave the lock back by the call's deadline.
    assert _finishes(lambda: auth.authorized)


# --- the loopback receiver ----------------------------------------------------------------


def test_an_idle_preconnect_does_not_block_the_redirect() -> None:
    with LoopbackReceiver() as receiver:
        receiver.expect("s")
        idle = [socket.create_connection(("127.0.0.1", receiver.port)) for _ in range(3)]
        try:
            answer = requests.get(f"{receiver.redirect_uri}?code=c&state=s", timeout=10)
            assert answer.status_code == 200
            assert "code=c" in receiver.wait(10)
        finally:
            for sock in idle:
                sock.close()


def test_the_callback_wait_is_bounded() -> None:
    with LoopbackReceiver() as receiver, pytest.raises(AuthRequired, match="within"):
        receiver.wait(0.5)


def test_an_interactive_login_ends_with_the_call_that_started_it(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = auth_server()
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: opened.append(url) or True)
    auth = OAuth(server.url, store=MemoryTokenStore(), callback_timeout=600, open_browser=True)
    with pytest.raises(McpError):
        mcp_lite.connect(server.url, auth=auth, timeout=3, protocol_version=PINNED)
    assert opened, "the login should have started"
    redirect = parse_qs(urlsplit(opened[0]).query)["redirect_uri"][0]
    port = urlsplit(redirect).port
    assert port is not None

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    # The receiver closes by the call's deadline, not after callback_timeout (10 minutes).
    deadline = time.monotonic() + GENEROUS
    while listening() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listening()
    assert _finishes(lambda: auth.authorized)


# --- token stores -------------------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys
    from mcp_lite.auth import FileTokenStore
    with FileTokenStore(sys.argv[1]).lock("tokens k", 10):
        print("held", flush=True)
        sys.stdin.read()
    """
)


@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_file_store_lock_is_exclusive_across_processes(tmp_path: Path) -> None:
    folder = tmp_path / "oauth"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = FileTokenStore(folder)
        with pytest.raises(RequestTimeout), store.lock("tokens k", 0.5):
            pass
        with store.lock("tokens other", 5):  # other keys are not held
            pass
        assert holder.stdin is not None
        holder.stdin.close()
        with store.lock("tokens k", 20):
            store.save("tokens k", {"v": 1})
        assert store.load("tokens k") == {"v": 1}
    finally:
        holder.kill()
        holder.wait(10)
        for pipe in (holder.stdin, holder.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


def test_memory_store_lock_times_out() -> None:
    store = MemoryTokenStore()
    with store.lock("k", 1):
        got: list[BaseException] = []

        def other() -> None:
            try:
                with store.lock("k", 0.3):
                    pass
            except BaseException as exc:
                got.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(10)
        assert len(got) == 1 and isinstance(got[0], RequestTimeout)
    with store.lock("k", 1):
        pass


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o755, 0o701])
def test_a_folder_other_users_can_reach_is_refused_not_chmodded(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "oauth"
    folder.mkdir()
    os.chmod(folder, mode)
    store = FileTokenStore(folder)
    for attempt in (
        lambda: store.save("k", {"access_token": "x"}),
        lambda: store.load("k"),
        lambda: store.lock("k", 1).__enter__(),
    ):
        with pytest.raises(ConfigError, match="chmod 700"):
            attempt()
    assert stat.S_IMODE(folder.stat().st_mode) == mode  # left as it was
    assert os.listdir(folder) == []


# --- processes sharing credentials --------------------------------------------------------

_WORKER = textwrap.dedent(
    """
    import sys
    import mcp_lite
    from mcp_lite.auth import FileTokenStore, OAuth

    url, folder, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    auth = OAuth(url, store=FileTokenStore(folder), open_browser=False)
    done = 0
    with mcp_lite.connect(url, auth=auth, timeout=60, protocol_version="2025-11-25") as client:
        for _ in range(calls):
            client.list_tools()
            done += 1
    print(done, flush=True)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_processes_refreshing_one_rotating_token_all_stay_authorized(
    auth_server: Start, tmp_path: Path
) -> None:
    # Every stored token is due (expires in 1 s, refreshed a minute early), so every request
    # of every process refreshes; each refresh rotates the refresh token, and any reuse of
    # a retired one would revoke the whole family and log everybody out.
    server = auth_server(expires_in=0, rotate_refresh=True, refresh_delay=0.02)
    folder = tmp_path / "oauth"
    _login(server, FileTokenStore(folder))
    processes, calls = 4, 12
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, server.url, str(folder), str(calls)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        results.append((worker.returncode, out.strip(), err[-2000:]))
    assert all(code == 0 and out == str(calls) for code, out, _ in results), results
    assert server.reuse_detected == 0
    assert server.refreshes >= processes * calls  # they really did refresh, many at once
    # And the stored token still works for a process started afterwards.
    auth = OAuth(server.url, store=FileTokenStore(folder), open_browser=False)
    with mcp_lite.connect(server.url, auth=auth, timeout=20, protocol_version=PINNED) as client:
        client.list_tools()


def test_the_server_really_revokes_on_reuse(auth_server: Start) -> None:
    # The control experiment for the test above: two processes that each refresh from their
    # own copy of the credentials (no shared store, so no lock and no re-read) trip the
    # reuse detection and end up logged out. The store's protocol is what prevents it.
    server = auth_server(expires_in=0, rotate_refresh=True)
    mine, copy = MemoryTokenStore(), MemoryTokenStore()
    _login(server, mine)
    for key in list(mine._data):  # type: ignore[attr-defined]
        copy.save(key, mine.load(key) or {})
    assert OAuth(server.url, store=mine, open_browser=False).token() is not None
    assert OAuth(server.url, store=copy, open_browser=False).token() is None
    assert server.reuse_detected == 1


# --- nothing starts for a request nobody waits for ----------------------------------------


class _Spy:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def token(self, timeout: float | None = None) -> str | None:
        self.calls.append("token")
        return "t"

    def refresh(
        self,
        sent: str | None,
        *,
        challenge: Any = None,
        status: int = 401,
        timeout: float | None = None,
    ) -> str | None:
        self.calls.append("refresh")
        return "new"


def test_a_401_for_a_request_given_up_starts_no_refresh_and_no_login(
    auth_server: Start,
) -> None:
    from mcp_lite._http import auth as _auth

    server = auth_server()
    spy = _Spy()

    def send(headers: dict[str, str]) -> requests.Response:
        return requests.post(
            server.url, json={"jsonrpc": "2.0", "method": "x"}, headers=headers, timeout=10
        )

    gone = _auth.send_authorized(spy, server.url, {}, send, given_up=lambda: True)  # type: ignore[arg-type]
    assert gone.status_code == 401 and spy.calls == []
    gone.close()
    live = _auth.send_authorized(spy, server.url, {}, send, given_up=lambda: False)  # type: ignore[arg-type]
    assert spy.calls == ["token", "refresh"]
    live.close()


class _LaggingStore(MemoryTokenStore):
    """A store whose first reads of the token record return an old copy (a replica that
    lags, a process that wrote without the lock): what ``invalid_grant`` must re-read past."""

    def __init__(self, real: MemoryTokenStore, snapshot: dict[str, Any], stale_reads: int) -> None:
        super().__init__()
        self.real, self.snapshot, self.stale_reads = real, snapshot, stale_reads

    def load(self, key: str) -> dict[str, Any] | None:
        if key in self.snapshot and self.stale_reads > 0:
            self.stale_reads -= 1
            return self.snapshot[key]
        return self.real.load(key)

    def save(self, key: str, value: dict[str, Any]) -> None:
        self.real.save(key, value)


def test_invalid_grant_rereads_the_store_before_giving_up(auth_server: Start) -> None:
    server = auth_server(expires_in=0, rotate_refresh=True, revoke_on_reuse=False)
    store = MemoryTokenStore()
    _login(server, store)
    old = {key: store.load(key) for key in list(store._data) if key.startswith("tokens ")}
    # Another process refreshes: the refresh token in the store is now a newer one.
    assert OAuth(server.url, store=store, open_browser=False).token() is not None
    lagging = _LaggingStore(store, old, stale_reads=2)  # our first load and our re-read
    auth = OAuth(server.url, store=lagging, open_browser=False)
    token = auth.token()
    assert server.reuse_detected == 1  # we did present the spent one and were refused...
    assert token is not None and auth.authorized  # ...and recovered from the store
    with mcp_lite.connect(server.url, auth=auth, timeout=20, protocol_version=PINNED) as client:
        client.list_tools()
