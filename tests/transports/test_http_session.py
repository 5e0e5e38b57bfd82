"""The HTTP session honours the environment's proxies and CA bundle, resolved once."""

from __future__ import annotations

import pytest

from mcp_lite._http.session import HttpOptions, make_session


def test_environment_proxy_and_ca_bundle_are_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/corp.pem")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    session = make_session(HttpOptions(url="https://mcp.example.com/mcp", headers={"X-A": "1"}))
    assert session.proxies.get("https") == "http://proxy.invalid:3128"
    assert session.verify == "/etc/ssl/corp.pem"
    assert session.trust_env is False  # nothing re-read per request
    assert session.headers["X-A"] == "1" and session.headers["User-Agent"].startswith("mcp-lite/")


def test_no_proxy_bypasses_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "mcp.example.com")
    session = make_session(HttpOptions(url="https://mcp.example.com/mcp", headers={}))
    assert "https" not in session.proxies
