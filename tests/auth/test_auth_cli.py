"""``mcp-lite auth URL`` logs in once; a later connection uses the stored token without a
user; ``--logout`` forgets it. Tokens never appear in the output."""

from __future__ import annotations

import json
import os
import webbrowser
from collections.abc import Callable
from typing import Any

import pytest
import requests
from authserver import AuthServer

import mcp_lite
from mcp_lite import cli
from mcp_lite.auth import OAuth, fetch_redirect
from mcp_lite.errors import AuthRequired


def _browser(url: str, *args: Any, **kwargs: Any) -> bool:
    requests.get(fetch_redirect(url), timeout=10).raise_for_status()
    return True


def test_auth_login_then_reuse_then_logout(
    auth_server: Callable[..., AuthServer],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Any,
) -> None:
    server = auth_server()
    monkeypatch.setenv("MCP_LITE_AUTH_DIR", os.path.join(str(tmp_path), "oauth"))
    monkeypatch.setattr(webbrowser, "open", _browser)

    assert cli.main(["auth", server.url, "--json"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert json.loads(out) == {"server": server.url, "authorized": True, "required": True}
    assert all(token not in out for token in server.tokens)

    monkeypatch.setattr(webbrowser, "open", lambda *a, **k: pytest.fail("browser opened"))
    with mcp_lite.connect(
        server.url,
        auth=OAuth(server.url, open_browser=False),
        protocol_version="2025-11-25",
        timeout=20,
    ) as client:
        assert client.list_tools()

    assert cli.main(["auth", server.url, "--logout"]) == cli.EXIT_OK
    assert "logged out" in capsys.readouterr().out
    with pytest.raises(AuthRequired):
        mcp_lite.connect(
            server.url,
            auth=OAuth(server.url, open_browser=False),
            protocol_version="2025-11-25",
            timeout=20,
        )


def test_auth_of_unknown_name_is_a_usage_error(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["auth", "nosuchserver", "--project", str(tmp_path)]) == cli.EXIT_USAGE
    assert "neither a URL" in capsys.readouterr().err
