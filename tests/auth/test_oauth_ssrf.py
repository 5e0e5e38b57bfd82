"""No SSRF through OAuth documents (issue 22.2).

The hostile party: a remote https MCP server (``mcp.example``) whose OAuth documents point
the client inward: at a loopback service, the cloud metadata address, a private host, or
plain http. Every hop (the challenge's ``resource_metadata``, ``authorization_servers``, each
endpoint of the AS metadata, the URL handed to the browser) is refused with
``AuthRequired`` before any connection opens: the victim listener on 127.0.0.1 sees no
connection at all.

"Remote" without leaving the machine: the connection resolves every ``*.example`` name to
127.0.0.1 (``socket.getaddrinfo``), while the policy's resolver (its one seam,
``mcp_lite.auth._policy.resolver``) gives them the addresses they stand for: public for
``mcp.example`` / ``as.example``, 10.1.2.3 for ``private.example``, 169.254.169.254 for
``metadata.example``. TLS with a test CA makes https real.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from authserver import AuthServer, Behaviour
from tls import make_ca

import mcp_lite
from mcp_lite.auth import MemoryTokenStore, OAuth, _policy, fetch_redirect
from mcp_lite.errors import AuthRequired

PINNED = "2025-11-25"
SEEN_BY_POLICY = {
    "mcp.example": ["93.184.216.34"],
    "as.example": ["93.184.216.35"],
    "intranet.example": ["10.0.0.7"],
    "private.example": ["10.1.2.3"],
    "metadata.example": ["169.254.169.254"],
    "twofaced.example": ["93.184.216.36", "127.0.0.1"],  # one public, one loopback address
}


class Victim:
    """A listener on 127.0.0.1 that counts the connections it accepts (and closes them)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stopping = threading.Event()
        self.sock.settimeout(0.05)
        self.thread = threading.Thread(target=self._run, daemon=True, name="test-victim")
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., AuthServer]]:
    """``remote(host="mcp.example", **behaviour)``: an https AuthServer under that name."""
    bundle, context = make_ca(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    real = socket.getaddrinfo

    def to_loopback(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".example"):
            host = "127.0.0.1"
        return real(host, port, *args, **kwargs)

    def policy_view(host: str, port: int, seconds: float) -> list[str]:
        if host in SEEN_BY_POLICY:
            return SEEN_BY_POLICY[host]
        return [str(info[4][0]) for info in real(host, port, 0, socket.SOCK_STREAM)]

    monkeypatch.setattr(socket, "getaddrinfo", to_loopback)
    monkeypatch.setattr(_policy, "resolver", policy_view)
    started: list[AuthServer] = []

    def start(host: str = "mcp.example", **behaviour: Any) -> AuthServer:
        server = AuthServer(Behaviour(**behaviour), tls=context, host=host).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def victim() -> Iterator[Victim]:
    v = Victim()
    yield v
    v.close()


def _login(
    server: AuthServer, handler: Callable[[str], str] = fetch_redirect, **options: Any
) -> None:
    auth = OAuth(server.url, store=MemoryTokenStore(), authorization_handler=handler, **options)
    with mcp_lite.connect(server.url, auth=auth, timeout=20, protocol_version=PINNED) as client:
        client.list_tools()


def test_an_honest_remote_server_still_logs_in(remote: Callable[..., AuthServer]) -> None:
    server = remote()
    _login(server)
    assert server.requests_to("/token")


# Where a hostile document may point (``{v}``: the victim's port).
INWARD = [
    "http://127.0.0.1:{v}",
    "https://127.0.0.1:{v}",
    "https://localhost:{v}",
    "https://[::ffff:127.0.0.1]:{v}",
    "https://0.0.0.0:{v}",
    "https://metadata.example:{v}",
    "https://private.example:{v}",
    "https://twofaced.example:{v}",
    "http://as.example:{v}",  # public, but plain http
]


@pytest.mark.parametrize("target", INWARD)
@pytest.mark.parametrize(
    "hop",
    [
        "resource_metadata",
        "authorization_servers",
        "registration_endpoint",
        "token_endpoint",
        "authorization_endpoint",
    ],
)
def test_no_hop_of_a_remote_server_leads_inward(
    remote: Callable[..., AuthServer], victim: Victim, hop: str, target: str
) -> None:
    url = target.format(v=victim.port)
    behaviour = {
        "resource_metadata": {"resource_metadata_override": f"{url}/prm"},
        "authorization_servers": {"authorization_servers": [url]},
        "registration_endpoint": {"registration_endpoint_override": f"{url}/register"},
        "token_endpoint": {"token_endpoint_override": f"{url}/token"},
        "authorization_endpoint": {"authorization_endpoint_override": f"{url}/authorize"},
    }[hop]
    server = remote(**behaviour)
    handed: list[str] = []

    def handler(authorization_url: str) -> str:
        handed.append(authorization_url)
        return fetch_redirect(authorization_url)

    with pytest.raises(AuthRequired) as caught:
        _login(server, handler)
    assert "refusing" in str(caught.value) or "must use https" in str(caught.value)
    assert victim.accepted == 0, "a connection was opened to the refused address"
    assert handed == [], "the browser was handed a URL the policy refuses"


def test_a_remote_private_server_may_name_private_hosts_not_inner_ones(
    remote: Callable[..., AuthServer], victim: Victim
) -> None:
    """An intranet MCP server (private address) may use an intranet identity provider only
    when the user says the network is private (``private_network=True``), and never the
    cloud metadata service or loopback."""
    idp = remote(host="private.example")
    server = remote(host="intranet.example", authorization_servers=[idp.base])
    idp.tokens = server.tokens  # the resource accepts what its identity provider issues
    with pytest.raises(AuthRequired, match="private_network=True"):
        _login(server)  # by default: no private hop, whoever names it
    assert not idp.requests_to("/token")
    _login(server, private_network=True)
    assert idp.requests_to("/token")
    for inner in (f"https://metadata.example:{victim.port}", f"https://127.0.0.1:{victim.port}"):
        hostile = remote(host="intranet.example", authorization_servers=[inner])
        with pytest.raises(AuthRequired, match="refusing"):
            _login(hostile, private_network=True)
    assert victim.accepted == 0


def test_the_policy_decision_unit() -> None:
    policy = _policy.UrlPolicy("http://127.0.0.1:9/mcp")  # a loopback server: anything goes
    assert policy.check("http://127.0.0.1:10/token", "token endpoint", 1.0)
    for address, zone in (
        ("8.8.8.8", _policy.PUBLIC),
        ("10.0.0.1", _policy.PRIVATE),
        ("100.64.0.1", _policy.PRIVATE),
        ("fd00::1", _policy.PRIVATE),
        ("169.254.169.254", _policy.LINK_LOCAL),
        ("fe80::1", _policy.LINK_LOCAL),
        ("127.0.0.2", _policy.LOOPBACK),
        ("::1", _policy.LOOPBACK),
        ("::ffff:127.0.0.1", _policy.LOOPBACK),
        ("0.0.0.0", _policy.LOOPBACK),
    ):
        assert _policy.zone_of(address) == zone, address


def test_a_private_server_leads_only_to_public_hosts_unless_the_network_is_declared() -> None:
    strict = _policy.UrlPolicy("https://10.0.0.5/mcp")
    with pytest.raises(AuthRequired, match="private_network=True"):
        strict.check("https://10.0.0.6/token", "token endpoint", 1.0)
    assert strict.check("https://8.8.8.8/token", "token endpoint", 1.0)
    trusting = _policy.UrlPolicy("https://10.0.0.5/mcp", private_network=True)
    assert trusting.check("https://10.0.0.6/token", "token endpoint", 1.0)
    for inner in ("https://169.254.169.254/latest", "https://127.0.0.1:9/token"):
        with pytest.raises(AuthRequired, match="refusing"):
            trusting.check(inner, "token endpoint", 1.0)
    public = _policy.UrlPolicy("https://8.8.8.8/mcp", private_network=True)
    with pytest.raises(AuthRequired):  # a public server never leads inward
        public.check("https://10.0.0.6/token", "token endpoint", 1.0)
