"""Nothing from inside a project folder (``.mcp.json``, ``.claude/settings.local.json``) starts
a process or receives a credential before the project is trusted: not through the Hub, not
through ``mcp-lite auth``."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite import cli

CANARY = "trust-canary-s3cr3t"


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("MCP_LITE_AUTH_DIR", str(home / "oauth"))
    monkeypatch.setenv("TRUST_TEST_SECRET", CANARY)
    return {"home": home, "project": project, "marker": tmp_path / "started"}


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _any(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="x"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _any


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    handler = type("H", (_Recorder,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp", seen
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def _servers(places: dict[str, Path], url: str) -> dict[str, Any]:
    marker = places["marker"]
    return {
        "mcpServers": {
            "starter": {
                "command": sys.executable,
                "args": ["-c", f"open({str(marker)!r}, 'w').close()"],
            },
            "remote": {
                "type": "http",
                "url": url,
                "headers": {"Authorization": "Bearer ${TRUST_TEST_SECRET}"},
            },
        }
    }


@pytest.mark.parametrize("where", [".mcp.json", ".claude/settings.local.json"])
def test_an_untrusted_project_starts_nothing_and_sends_nothing(
    places: dict[str, Path], recorder: tuple[str, list[dict[str, str]]], where: str
) -> None:
    url, seen = recorder
    (places["project"] / where).write_text(json.dumps(_servers(places, url)))
    with mcp_lite.Hub.from_config(project_dir=places["project"]) as hub:
        states = hub.connect_all()
        assert set(states) >= {"starter", "remote"}
        for name in ("starter", "remote"):
            assert states[name].state == "disabled", states[name]
            assert "not trusted" in (states[name].error or "")
        assert CANARY not in repr(hub.status())
    assert not places["marker"].exists()
    assert seen == []  # not one request, so no credential either


def test_trust_is_what_lets_them_run(
    places: dict[str, Path], recorder: tuple[str, list[dict[str, str]]]
) -> None:
    url, seen = recorder
    (places["project"] / ".claude" / "settings.local.json").write_text(
        json.dumps(_servers(places, url))
    )
    with mcp_lite.Hub.from_config(project_dir=places["project"], trust_project=True) as hub:
        hub.connect_all()
    assert places["marker"].exists()  # it ran (and exited: a failed server, but it ran)
    assert seen and seen[0].get("authorization") == f"Bearer {CANARY}"


def test_mcp_lite_auth_does_not_contact_an_untrusted_project_server(
    places: dict[str, Path],
    recorder: tuple[str, list[dict[str, str]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, seen = recorder
    (places["project"] / ".mcp.json").write_text(json.dumps(_servers(places, url)))
    code = cli.main(["auth", "remote", "--project", str(places["project"])])
    assert code == cli.EXIT_USAGE and "not trusted" in capsys.readouterr().err
    assert seen == []
