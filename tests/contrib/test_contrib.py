"""mcp_lite.contrib: the MCP_LITE settings, the per-process Hub, and the Django and Flask
integrations (the gunicorn runs are in tests/contrib/test_web_apps.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite.contrib import ProcessHub, check_settings, hub_from_settings

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo_server.py")
SERVERS = {"demo": {"command": sys.executable, "args": [DEMO]}}


# --- settings --------------------------------------------------------------------------------


def _messages(settings: object) -> list[tuple[str, str, str | None]]:
    return [(p.level, p.message, p.hint) for p in check_settings(settings)]


def test_valid_settings_have_no_problems() -> None:
    assert _messages({"servers": SERVERS, "allow": ["mcp__demo"]}) == []


def test_settings_errors_are_named() -> None:
    [(level, message, hint)] = _messages({"servers": SERVERS, "alow": ["mcp__demo"]})
    assert level == "error" and "'alow'" in message and hint == "did you mean 'allow'?"
    assert _messages("servers")[0][0] == "error"
    [(_, message, _)] = _messages({"allow": ["x"]})
    assert "names no servers" in message
    bad = _messages({"servers": {"demo": {"command": 42}}})
    assert bad and all(level == "error" for level, _, _ in bad) and "demo" in bad[0][1]
    with pytest.raises(mcp_lite.ConfigError, match="unknown key 'alow'"):
        hub_from_settings({"servers": SERVERS, "alow": []})


def test_a_project_mcp_json_needs_the_trust_step(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": SERVERS}))
    home = tmp_path / "home"
    home.mkdir()
    untrusted = {"mcp_json": str(project / ".mcp.json"), "user_dir": str(home)}
    [(level, message, hint)] = _messages(untrusted)
    assert level == "warning" and "not trusted" in message
    assert hint is not None and "trust_project" in hint
    trusted = {**untrusted, "trust_project": ["demo"]}
    assert _messages(trusted) == []
    with hub_from_settings(trusted) as hub:
        assert hub.call_tool("mcp__demo__add", {"a": 2, "b": 2}).text == "4"
    assert "not .mcp.json" not in str(_messages({"mcp_json": str(tmp_path / "other.json")}))
    [(_, message, hint)] = _messages({"mcp_json": str(tmp_path / "servers.json")})
    assert "must name a project's .mcp.json" in message and "config_files" in (hint or "")


# --- one Hub per process ------------------------------------------------------------------------


def test_process_hub_is_built_once_per_process(
    in_fork: Callable[[Callable[[], str]], str],
) -> None:
    built: list[int] = []

    def factory() -> mcp_lite.Hub:
        built.append(os.getpid())
        return hub_from_settings({"servers": SERVERS})

    process_hub = ProcessHub(factory)
    assert not process_hub.started  # lazy: nothing built, nothing started
    hubs: list[mcp_lite.Hub] = []
    threads = [threading.Thread(target=lambda: hubs.append(process_hub.get())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len({id(h) for h in hubs}) == 1 and built == [os.getpid()]
    parent_hub = process_hub.get()
    assert parent_hub.call_tool("mcp__demo__add", {"a": 1, "b": 1}).text == "2"

    def child() -> str:
        hub = process_hub.get()
        text = hub.call_tool("mcp__demo__add", {"a": 20, "b": 1}).text
        same = hub is parent_hub
        process_hub.close()
        return f"{text} {same} {len(built)}"

    assert in_fork(child) == "21 False 2"
    # The child's close() did not touch the parent's Hub.
    assert process_hub.get() is parent_hub
    assert parent_hub.call_tool("mcp__demo__add", {"a": 1, "b": 2}).text == "3"
    process_hub.close()
    assert not process_hub.started


# --- Django ------------------------------------------------------------------------------------


def _manage(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("django")
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=cwd, capture_output=True, text=True,
        timeout=120, env={**os.environ, "MCP_WARM_UP": "0", **(env or {})},
    )


DJANGO = ROOT / "examples" / "django_app"


def test_django_management_command() -> None:
    assert _manage("check", cwd=DJANGO).returncode == 0
    servers = _manage("mcp", "servers", cwd=DJANGO)
    assert servers.returncode == 0 and servers.stdout.split() == ["demo", "connected"]
    tools = _manage("mcp", "tools", cwd=DJANGO)
    assert "mcp__demo__add\tAdd two integers." in tools.stdout.splitlines()
    call = _manage("mcp", "call", "mcp__demo__add", '{"a": 40, "b": 2}', cwd=DJANGO)
    assert call.returncode == 0 and call.stdout.strip() == "42"
    denied = _manage("mcp", "call", "mcp__demo__now", "{}", cwd=DJANGO)
    assert denied.returncode == 2 and "allow list" in denied.stderr
    bad_json = _manage("mcp", "call", "mcp__demo__add", "{oops", cwd=DJANGO)
    assert bad_json.returncode != 0 and "not JSON" in bad_json.stderr


def test_django_system_check_reports_bad_settings(tmp_path: Path) -> None:
    (tmp_path / "bad_settings.py").write_text(
        textwrap.dedent(
            """
            SECRET_KEY = "x"
            INSTALLED_APPS = ["mcp_lite.contrib.django"]
            DATABASES = {}
            MCP_LITE = {"servers": {"demo": {"command": 42}}, "alow": []}
            """
        )
    )
    env = {"DJANGO_SETTINGS_MODULE": "bad_settings", "PYTHONPATH": str(tmp_path)}
    out = _manage("check", cwd=DJANGO, env=env)
    assert out.returncode != 0
    assert "mcp_lite.E001" in out.stderr and "did you mean 'allow'?" in out.stderr


# --- Flask ---------------------------------------------------------------------------------------


def test_flask_extension() -> None:
    flask = pytest.importorskip("flask")
    from mcp_lite.contrib.flask import McpLite

    ext = McpLite()
    first, second = flask.Flask("first"), flask.Flask("second")
    first.config["MCP_LITE"] = {"servers": SERVERS, "allow": ["mcp__demo"]}
    second.config["MCP_LITE"] = {
        "servers": SERVERS, "allow": ["mcp__demo__add"], "default_permission": "deny"
    }
    ext.init_app(first)
    ext.init_app(second)

    @first.get("/add")
    def add():  # type: ignore[no-untyped-def]
        return {"text": ext.hub.call_tool("mcp__demo__add", {"a": 1, "b": 2}).text}

    try:
        assert first.test_client().get("/add").get_json() == {"text": "3"}
        with first.app_context():
            first_hub = ext.hub
        with second.app_context():
            assert ext.hub is not first_hub  # one Hub per app (and per process)
            with pytest.raises(mcp_lite.PermissionDenied):
                ext.hub.call_tool("mcp__demo__now", {})
    finally:
        for app in (first, second):
            with app.app_context():
                ext.close()

    broken = flask.Flask("broken")
    broken.config["MCP_LITE"] = {"servers": SERVERS, "deny": "x", "nope": 1}
    with pytest.raises(mcp_lite.ConfigError, match="unknown key 'nope'"):
        McpLite(broken)
    with pytest.raises(mcp_lite.ConfigError, match="not set"):
        McpLite(flask.Flask("empty"))
