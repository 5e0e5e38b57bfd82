"""Host-name lookups over HTTP are bounded by the call's deadline.

``socket.getaddrinfo`` takes no timeout, so a resolver that does not answer used to hold a
connecting caller far past its deadline. Here the resolver is replaced for a few made-up
names (every other name resolves as usual): one that hangs, one that does not exist, and one
that points at the in-process fault server on 127.0.0.1. No lookup leaves this machine.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_lite
from mcp_lite._http import resolve as _resolve
from mcp_lite._http import slots as _http_abort
from mcp_lite.errors import ConnectError, McpError, RequestTimeout

HANG = "hangs.mcp-lite.test"
MISSING = "missing.mcp-lite.test"
LOCAL = "local.mcp-lite.test"


class FakeResolver:
    """Answers for the made-up names; a hanging lookup ends when the test ends."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.release = threading.Event()
        self.asked: list[str] = []
        self.hang = {HANG}

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in self.hang:
            self.asked.append(host)
            # Ends in a "no such host" after a long while: a caller that waited for this
            # lookup would see that error, not a timeout.
            self.release.wait(30)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if host == MISSING:
            self.asked.append(host)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if host == LOCAL:
            self.asked.append(host)
            host = "127.0.0.1"
        return self.real(host, port, *args, **kwargs)


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeResolver]:
    fake = FakeResolver(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    yield fake
    fake.release.set()


def url(server: Any, host: str) -> str:
    return server.url().replace("127.0.0.1", host)


def test_connecting_ends_at_the_deadline_when_the_lookup_hangs(
    fault_server: Any, resolver: Any
) -> None:
    with pytest.raises(McpError) as info:
        mcp_lite.connect(url(fault_server, HANG), timeout=1, protocol_version="2025-11-25")
    assert "no such host" not in str(info.value)  # it did not wait for the lookup's end
    assert resolver.asked and not resolver.release.is_set()


def test_a_call_that_needs_a_new_connection_ends_at_its_deadline(
    fault_server: Any, resolver: Any
) -> None:
    """The blocking call POSTs on the caller's own thread: the lookup for a new connection
    (the server closed the last one) is what the deadline must bound."""
    with mcp_lite.connect(
        url(fault_server, LOCAL), timeout=10, protocol_version="2025-11-25"
    ) as client:
        resolver.hang.add(LOCAL)
        error = None
        for _ in range(10):  # each "stream" answer closes its connection; idle ones run out
            try:
                client.call_tool("stream", timeout=1)
            except McpError as exc:
                error = exc
                break
    assert error is not None, "no new connection was needed"
    # A timeout (the lookup cut short, or no time left to send), never the lookup's own end.
    assert isinstance(error, RequestTimeout) or "timed out" in str(error), error
    assert "no such host" not in str(error)
    assert not resolver.release.is_set()  # the lookup still hangs: the call did not wait


def test_a_name_that_does_not_exist_says_so(fault_server: Any, resolver: Any) -> None:
    with pytest.raises(ConnectError) as info:
        mcp_lite.connect(url(fault_server, MISSING), timeout=5, protocol_version="2025-11-25")
    assert f"no such host {MISSING!r}" in str(info.value)


def test_a_resolved_name_connects_and_calls(fault_server: Any, resolver: Any) -> None:
    with mcp_lite.connect(
        url(fault_server, LOCAL), timeout=10, protocol_version="2025-11-25"
    ) as client:
        assert client.call_tool("echo").text == "echo"
    assert LOCAL in resolver.asked  # looked up through the bounded path


def test_an_ip_address_needs_no_lookup_thread(
    fault_server: Any, resolver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lookups: list[str] = []

    def counted(host: str, *args: Any) -> Any:
        lookups.append(host)
        return _resolve.lookup(host, *args)

    monkeypatch.setattr(_http_abort, "lookup", counted)
    with mcp_lite.connect(url(fault_server, LOCAL), timeout=10) as client:
        assert client.call_tool("echo").text == "echo"
    assert lookups and set(lookups) == {LOCAL}  # a name: looked up on a helper thread
    lookups.clear()
    with mcp_lite.connect(fault_server.url(), timeout=10) as client:
        assert client.call_tool("echo").text == "echo"
    assert lookups == []  # 127.0.0.1: straight to urllib3, no thread


def test_stuck_lookups_are_capped(resolver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_resolve, "MAX_PENDING", 2)
    for _ in range(2):
        with pytest.raises(_resolve.LookupTimeout):
            _resolve.lookup(HANG, 80, socket.AF_UNSPEC, 0.01)
    with pytest.raises(_resolve.TooManyLookups):  # refused at once: no third thread
        _resolve.lookup(HANG, 80, socket.AF_UNSPEC, 30)
    assert len(resolver.asked) == 2
    resolver.release.set()  # the two stuck lookups end; their slots come back
    for thread in threading.enumerate():
        if thread.name == "mcp-lite-resolve":
            thread.join(10)
    assert _resolve.lookup("127.0.0.1", 80, socket.AF_INET, 5)


@pytest.mark.parametrize(
    ("host", "literal"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("fe80::1%eth0", True),
        ("localhost", False),
        ("example.com", False),
        ("1.2.3", False),
    ],
)
def test_which_hosts_are_literal(host: str, literal: bool) -> None:
    assert _resolve.is_literal(host) is literal


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_lookups_hang_can_still_look_names_up(
    fault_server: Any, resolver: Any
) -> None:
    """Every lookup slot is taken by a hanging lookup when the process forks: the child has
    none of those threads, so none of those slots (issue 21: it could never resolve again)."""
    for _ in range(_resolve.MAX_PENDING):
        with pytest.raises(_resolve.LookupTimeout):
            _resolve.lookup(HANG, 80, socket.AF_UNSPEC, 0.01)
    with pytest.raises(_resolve.TooManyLookups):  # the parent is stuck, as it should be
        _resolve.lookup(LOCAL, 80, socket.AF_UNSPEC, 1)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: connect by name, call, report
        code = 1
        try:
            os.close(read_end)
            with mcp_lite.connect(
                url(fault_server, LOCAL), timeout=5, protocol_version="2025-11-25"
            ) as client:
                os.write(write_end, client.call_tool("echo").text.encode())
            code = 0
        except BaseException as exc:
            os.write(write_end, repr(exc).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 15)
        said = os.read(read_end, 4096).decode() if ready else "(nothing in 15 s)"
    finally:
        os.close(read_end)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    assert said == "echo" and status == 0, said


def test_full_lookup_slots_fail_the_connect_at_once_and_say_so(
    fault_server: Any, resolver: Any
) -> None:
    """Every lookup slot is held by a lookup the resolver never answers: a connect by name is
    refused at once, and its error says why (not a bare "connection timed out")."""
    for _ in range(_resolve.MAX_PENDING):
        with pytest.raises(_resolve.LookupTimeout):
            _resolve.lookup(HANG, 80, socket.AF_UNSPEC, 0.01)
    with pytest.raises(ConnectError) as info:
        mcp_lite.connect(url(fault_server, LOCAL), timeout=30, protocol_version="2025-11-25")
    message = str(info.value)
    assert not isinstance(info.value, RequestTimeout)
    assert "timed out" not in message, message
    assert f"all {_resolve.MAX_PENDING} host-name lookup slots are full" in message, message
    assert f"looking up {LOCAL!r}" in message, message  # the phase it stopped in
    assert LOCAL not in resolver.asked  # refused before any lookup of its own
