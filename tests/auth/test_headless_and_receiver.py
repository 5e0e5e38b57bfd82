"""A worker without a user never starts a login (22.5); the loopback receiver's port cannot
collide and only the login's own redirect completes it (22.5, 22.7); OAuth runs under the
caller's deadline and names the phase (issue 21); a child forked while another thread
refreshes gets its token at once (issue 21). All against the AuthServer on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from authserver import AuthServer

import mcp_lite
from mcp_lite._deadline import Deadline
from mcp_lite.auth import FileTokenStore, MemoryTokenStore, OAuth, fetch_redirect
from mcp_lite.errors import AuthRequired, RequestTimeout

Start = Callable[..., AuthServer]
PINNED = "2025-11-25"
SLACK = 1.0


def _use(server: AuthServer, auth: OAuth, timeout: float = 20) -> None:
    with mcp_lite.connect(server.url, auth=auth, timeout=timeout, protocol_version=PINNED) as c:
        c.list_tools()


# --- 22.5: no login without someone to do it -----------------------------------------------


def test_a_worker_without_a_terminal_gets_auth_required_at_once(
    auth_server: Start, tmp_path: Path
) -> None:
    server = auth_server()
    store_dir = tmp_path / "oauth"
    # A login made earlier with a handler: its registration names the fixed port 8976.
    _use(
        server,
        OAuth(server.url, store=FileTokenStore(store_dir), authorization_handler=fetch_redirect),
    )
    server.tokens.clear()
    server.b.refuse_tokens = True  # the refresh is refused: only a new login would help
    worker = textwrap.dedent(
        f"""
        import time
        import mcp_lite
        from mcp_lite.auth import FileTokenStore, OAuth
        from mcp_lite.errors import AuthRequired
        auth = OAuth({server.url!r}, store=FileTokenStore({str(store_dir)!r}))
        started = time.monotonic()
        try:
            with mcp_lite.connect({server.url!r}, auth=auth, timeout=10,
                                  protocol_version={PINNED!r}) as client:
                client.list_tools()
        except AuthRequired as exc:
            print("AuthRequired", round(time.monotonic() - started, 2), exc)
        """
    )
    env = {**os.environ, "BROWSER": "/bin/false", "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", worker],
        stdin=subprocess.DEVNULL,  # like cron, Celery, gunicorn: no terminal anywhere
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.stdout.startswith("AuthRequired"), done.stdout + done.stderr
    elapsed = float(done.stdout.split()[1])
    assert elapsed < 10, "it waited out the call's deadline instead of failing at once"
    assert "mcp-lite auth" in done.stdout  # says what to do
    assert "open this URL" not in done.stderr
    assert len(server.requests_to("/authorize")) == 1  # only the first, handler-made login


def _browser(calls: list[str]) -> Callable[..., bool]:
    def open_url(url: str, *args: Any, **kwargs: Any) -> bool:
        calls.append(url)
        requests.get(fetch_redirect(url), timeout=10).raise_for_status()
        return True

    return open_url


def test_a_busy_configured_redirect_port_is_a_clear_error_at_once(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = auth_server()
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", _browser(opened))
    holder = socket.create_server(("127.0.0.1", 0))  # another process's login, say
    try:
        port = holder.getsockname()[1]
        auth = OAuth(
            server.url,
            store=MemoryTokenStore(),
            open_browser=True,
            redirect_uri=f"http://127.0.0.1:{port}/callback",
        )
        started = time.monotonic()
        with pytest.raises(AuthRequired, match=f"port {port}.*in use"):
            _use(server, auth, timeout=10)
        assert time.monotonic() - started < 10
        assert opened == []
    finally:
        holder.close()


def test_a_registration_port_that_is_busy_falls_back_to_a_free_one(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = auth_server()
    store = MemoryTokenStore()
    holder = socket.create_server(("127.0.0.1", 0))
    try:
        port = holder.getsockname()[1]
        holder.close()
        # Registered (dynamically) for that port by an earlier login...
        _use(
            server,
            OAuth(
                server.url,
                store=store,
                authorization_handler=fetch_redirect,
                redirect_uri=f"http://127.0.0.1:{port}/callback",
            ),
        )
        holder = socket.create_server(("127.0.0.1", port))  # ...which another process holds now
        server.tokens.clear()
        server.refresh_tokens.clear()  # nothing to refresh: a new login is needed
        opened: list[str] = []
        monkeypatch.setattr(webbrowser, "open", _browser(opened))
        _use(server, OAuth(server.url, store=store, open_browser=True))
        assert len(opened) == 1
        redirect = parse_qs(urlsplit(opened[0]).query)["redirect_uri"][0]
        assert urlsplit(redirect).port != port
        assert len(server.requests_to("/register")) == 2  # registered again for the new port
    finally:
        holder.close()


# --- 22.7: only the login's own redirect completes it ----------------------------------------


def test_the_receiver_ignores_requests_without_the_logins_state(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = auth_server()
    answers: list[int] = []

    def browser(url: str, *args: Any, **kwargs: Any) -> bool:
        redirect_uri = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        # Another local process races the browser to the receiver.
        for query in ("code=evil&state=forged", "code=evil", "error=access_denied", ""):
            answers.append(requests.get(f"{redirect_uri}?{query}", timeout=10).status_code)
        state = parse_qs(urlsplit(url).query)["state"][0]
        doubled = f"{redirect_uri}?code=evil&state={state}&state=forged"
        answers.append(requests.get(doubled, timeout=10).status_code)
        requests.get(fetch_redirect(url), timeout=10).raise_for_status()
        return True

    monkeypatch.setattr(webbrowser, "open", browser)
    _use(server, OAuth(server.url, store=MemoryTokenStore(), open_browser=True))
    assert answers == [400, 400, 400, 400, 400]
    codes = [s.form["code"][0] for s in server.requests_to("/token")]
    assert codes and "evil" not in codes


# --- issue 21: the caller's deadline, the phase in the error ---------------------------------


@pytest.mark.parametrize("how", ["deadline", "default"])
def test_a_token_refresh_ends_by_the_callers_deadline_and_names_the_phase(
    auth_server: Start, how: str
) -> None:
    server = auth_server(expires_in=0)  # stored tokens are always due
    store = MemoryTokenStore()
    _use(server, OAuth(server.url, store=store, authorization_handler=fetch_redirect))
    server.b.drip = ("/token",)
    limit = 1.5
    own = limit if how == "default" else 600.0  # the object's own total, unused with a deadline
    auth = OAuth(server.url, store=store, open_browser=False, timeout=own)
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as caught:
        if how == "deadline":
            auth.token(deadline=Deadline.after(limit))
        else:
            auth.token()
    assert time.monotonic() - started < limit + SLACK
    message = str(caught.value)
    assert message.startswith("authorizing: the token refresh at "), message
    assert "got no answer within" in message


# --- issue 21: fork while another thread refreshes -------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_child_forked_during_a_slow_refresh_gets_its_token(
    auth_server: Start, tmp_path: Path, kind: str
) -> None:
    server = auth_server(expires_in=0)  # stored tokens are always due for a refresh
    store: Any = MemoryTokenStore() if kind == "memory" else FileTokenStore(tmp_path / "oauth")
    auth = OAuth(server.url, store=store, authorization_handler=fetch_redirect)
    _use(server, auth)
    server.b.refresh_delay = 2.0  # the parent's refresh is slow
    refresher = threading.Thread(target=lambda: auth.token(timeout=20), daemon=True)
    refresher.start()
    deadline = time.monotonic() + 10
    while server.delayed == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.delayed == 1, "the parent's refresh should be under way"
    server.b.refresh_delay = 0.0  # the child's own refresh is quick; the parent's sleeps on
    # A file store's flock is the parent's (another process now): the child waits for it.
    child_timeout = 2.0 if kind == "memory" else 4.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            started = time.monotonic()
            token = auth.token(timeout=child_timeout)
            in_time = time.monotonic() - started < child_timeout + SLACK
            code = 0 if token and in_time else 2
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    end = time.monotonic() + child_timeout + 10
    status = None
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.02)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the child never finished")
    refresher.join(10)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_handler_helper_and_the_browser_wait_end_by_the_logins_deadline(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = auth_server(drip=("/authorize",))  # the handler's GET would last minutes
    auth = OAuth(
        server.url, store=MemoryTokenStore(), authorization_handler=fetch_redirect, timeout=600
    )
    started = time.monotonic()
    with pytest.raises(RequestTimeout, match="^authorizing: "):
        auth.refresh(None, deadline=Deadline.after(1.5))
    assert time.monotonic() - started < 1.5 + SLACK

    monkeypatch.setattr(webbrowser, "open", lambda *a, **k: True)  # nobody comes back
    auth = OAuth(server.url, store=MemoryTokenStore(), open_browser=True, callback_timeout=600)
    started = time.monotonic()
    with pytest.raises(RequestTimeout, match="authorizing: the browser login got no answer"):
        auth.refresh(None, deadline=Deadline.after(1.5))
    assert time.monotonic() - started < 1.5 + SLACK
