"""Config files that cannot hurt: a misspelt key fails its server at once (never a REPL that
never answers), a config "file" that is a FIFO, a device, a folder or huge is an issue (never a
hang or an OOM), a file planted by another user (or in a folder others can write to) is never
read, trusting a project stops at its root, and an "always" answer never writes through a link.

Real stdio servers, files in temporary folders; the test runs as root, so "another user" is a
file chowned to uid 12345.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError
from mcp_lite.hub import Hub
from mcp_lite.hub.config import import_claude_desktop, load_config

if TYPE_CHECKING:
    from conftest import HubPaths  # tests/hub/conftest.py

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo_server.py")
OTHER_UID = 12345
MiB = 1024 * 1024

posix_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown to another uid"
)


def _demo(*extra: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [DEMO, *extra]}


def _marker(marker: Path) -> dict[str, Any]:
    """A stdio entry that leaves ``marker`` behind if it is ever started."""
    return {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').close()"]}


def _load(paths: HubPaths, project: Path | None = None, **kw: Any) -> Any:
    kw.setdefault("trust_project", True)
    kw.setdefault("user_dir", paths.home)
    kw.setdefault("managed_path", paths.managed)
    kw.setdefault("managed_settings_path", paths.managed.with_name("managed-settings.json"))
    return load_config(paths.project if project is None else project, **kw)


def _issues_of(cfg: Any, path: Path) -> list[str]:
    return [i.message for i in cfg.issues if i.source == str(path)]


# --- a misspelt key fails its server, from every kind of source -------------------------------

# (where the entry is written, how load_config is told about it). The entry is {"s": entry}.
SOURCES: dict[str, Callable[[HubPaths, dict[str, Any]], dict[str, Any]]] = {}


def _source(name: str) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
    def register(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        SOURCES[name] = fn
        return fn

    return register


@_source(".mcp.json")
def _mcp_json(p: HubPaths, doc: dict[str, Any]) -> dict[str, Any]:
    p.write(p.project / ".mcp.json", doc)
    return {}


@_source("settings.local.json")
def _local(p: HubPaths, doc: dict[str, Any]) -> dict[str, Any]:
    p.write(p.project / ".claude" / "settings.local.json", doc)
    return {}


@_source("user settings.json")
def _user_settings(p: HubPaths, doc: dict[str, Any]) -> dict[str, Any]:
    p.write(p.home / ".claude" / "settings.json", doc)
    return {}


@_source("~/.claude.json")
def _claude_json(p: HubPaths, doc: dict[str, Any]) -> dict[str, Any]:
    p.write(p.home / ".claude.json", doc)
    return {}


@_source("managed-mcp.json")
def _managed(p: HubPaths, doc: dict[str, Any]) -> dict[str, Any]:
    p.write(p.managed, doc)
    return {}


@_source("plugin")
def _plugin(p: HubPaths, doc: dict[str, Any]) -> dict[str, Any]:
    plugins = p.home / "plugins"
    p.write(plugins / "one" / ".mcp.json", doc)
    return {"plugins_dir": plugins}


@_source("--config")
def _explicit(p: HubPaths, doc: dict[str, Any]) -> dict[str, Any]:
    return {"config_files": [p.write(p.home / "explicit.json", doc)]}


@pytest.mark.parametrize("where", sorted(SOURCES))
@pytest.mark.parametrize(
    ("key", "hint"), [("arg", "did you mean 'args'?"), ("enviroment", "did you mean 'env'?")]
)
def test_a_misspelt_key_fails_its_server_at_once_with_connects_error(
    hub_paths: HubPaths, where: str, key: str, hint: str
) -> None:
    entry = {"command": sys.executable, key: [DEMO] if key == "arg" else {"A": "1"}}
    if key != "arg":
        entry["args"] = [DEMO]
    options = SOURCES[where](hub_paths, {"mcpServers": {"s": entry}})
    with pytest.raises(ConfigError) as direct:
        mcp_lite.connect(entry, timeout=2)
    expected = str(direct.value).removeprefix("invalid server config: ")
    assert f"unknown key {key!r}" in expected and hint in expected

    started = time.monotonic()
    with Hub(_load(hub_paths, **options)) as hub:
        assert any(i.server == "s" and i.message == expected for i in hub.issues), (
            hub.issues
        )  # the same words as connect(dict)
        status = hub.status()["s"]
        assert status.state == "failed" and expected in (status.error or "")
        with pytest.raises(ConfigError, match=f"unknown key '{key}'"):
            hub.call_tool("mcp__s__add", {"a": 1, "b": 2}, timeout=2)
    assert time.monotonic() - started < 3  # never the 60 s initialize of a silent REPL


def test_claude_desktop_entries_are_held_to_the_same_rule(tmp_path: Path) -> None:
    desktop = tmp_path / "claude_desktop_config.json"
    desktop.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "arg": ["y"]}}}))
    with Hub(import_claude_desktop(desktop)) as hub:
        assert hub.status()["s"].state == "failed"
        assert any("did you mean 'args'?" in i.message for i in hub.issues)


def test_connect_names_a_misspelt_command_key() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'commmand' \(did you mean 'command'\?\)"):
        mcp_lite.connect({"commmand": sys.executable, "args": [DEMO]}, timeout=2)


def test_keys_claude_code_writes_still_load(hub_paths: HubPaths) -> None:
    hub_paths.write(
        hub_paths.home / ".claude.json",
        {
            "mcpServers": {
                "a": {**_demo(), "alwaysLoad": True},
                "b": {"type": "claudeai-proxy", "url": "https://proxy.example/x", "id": "srv_1"},
                "c": {"type": "ws-ide", "url": "ws://127.0.0.1:9/", "ideRunningInWindows": False},
            }
        },
    )
    cfg = _load(hub_paths)
    assert cfg.issues == [] and all(e.usable for e in cfg.servers.values())


# --- a config "file" that is not a small regular file ----------------------------------------

KINDS = ("link to /dev/zero", "fifo", "folder", "huge", "dangling link")


def _plant(path: Path, kind: str, limit: int = MiB) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":  # sparse: its size says too big before a byte is read
        with path.open("wb") as f:
            f.truncate(limit + 1)
    else:
        path.symlink_to(path.parent / "nowhere.json")


def _places(p: HubPaths) -> dict[str, tuple[Path, dict[str, Any]]]:
    return {
        ".mcp.json": (p.project / ".mcp.json", {}),
        "settings.local.json": (p.project / ".claude" / "settings.local.json", {}),
        "project settings.json": (p.project / ".claude" / "settings.json", {}),
        "user settings.json": (p.home / ".claude" / "settings.json", {}),
        "~/.claude.json": (p.home / ".claude.json", {}),
        "managed-mcp.json": (p.managed, {}),
        "managed-settings.json": (p.managed.with_name("managed-settings.json"), {}),
        "plugin": (p.home / "plugins" / "one" / ".mcp.json", {"plugins_dir": p.home / "plugins"}),
        "--config": (p.home / "explicit.json", {"config_files": [p.home / "explicit.json"]}),
    }


def _in_thread(fn: Callable[[], Any], unblock: Path | None) -> Any:
    """``fn()`` run in a thread, asserted to end within 5 s. ``unblock``: a FIFO opened for
    writing if it did not (so that a failing test does not leave a thread stuck)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    thread.join(5)
    hung = thread.is_alive()
    if hung and unblock is not None:
        os.close(os.open(unblock, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
    assert not hung, "building the Hub hung on a config file"
    return box[0]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "where",
    [
        ".mcp.json",
        "settings.local.json",
        "project settings.json",
        "user settings.json",
        "~/.claude.json",
        "managed-mcp.json",
        "managed-settings.json",
        "plugin",
        "--config",
    ],
)
def test_a_config_file_that_is_no_small_regular_file_is_an_issue_never_a_hang(
    hub_paths: HubPaths, where: str, kind: str
) -> None:
    path, options = _places(hub_paths)[where]
    limit = 64 * MiB if where == "~/.claude.json" else MiB
    _plant(path, kind, limit)
    hub_paths.write(hub_paths.home / "keep.json", {"mcpServers": {"keep": _demo()}})
    options = {**options}
    options["config_files"] = [*options.get("config_files", ()), hub_paths.home / "keep.json"]

    def build() -> Any:
        with Hub.from_config(
            hub_paths.project,
            trust_project=True,
            user_dir=hub_paths.home,
            managed_path=hub_paths.managed,
            managed_settings_path=hub_paths.managed.with_name("managed-settings.json"),
            **options,
        ) as hub:
            return hub.issues, hub.status()

    issues, status = _in_thread(build, path if kind == "fifo" else None)
    mine = [i.message for i in issues if i.source == str(path)]
    if kind == "dangling link" and where not in (
        ".mcp.json",
        "settings.local.json",
        "project settings.json",
        "--config",
    ):
        assert mine == []  # a link to nothing outside the project is a missing file
    else:
        assert len(mine) == 1, issues
        assert mine[0].startswith(("not read", "file not found")), mine
    if where != "managed-mcp.json":  # a present managed file rules alone, even when broken
        assert "keep" in status


def test_the_size_check_is_made_before_reading(hub_paths: HubPaths) -> None:
    path = hub_paths.project / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"a": _demo("x" * MiB)}}))
    cfg = _load(hub_paths)
    assert "a" not in cfg.servers
    assert _issues_of(cfg, path) == [
        f"not read: {path.stat().st_size} bytes, larger than the {MiB} allowed"
    ]


def test_a_big_claude_json_within_its_own_limit_still_loads(hub_paths: HubPaths) -> None:
    doc = {"mcpServers": {"a": _demo()}, "projects": {"/x": {"history": ["y" * 100] * 30_000}}}
    hub_paths.write(hub_paths.home / ".claude.json", doc)
    assert (hub_paths.home / ".claude.json").stat().st_size > 2 * MiB
    assert "a" in _load(hub_paths).servers


def test_a_users_settings_file_may_be_a_link_to_their_dotfiles(hub_paths: HubPaths) -> None:
    real = hub_paths.write(
        hub_paths.home / "dotfiles" / "settings.json", {"mcpServers": {"a": _demo()}}
    )
    (hub_paths.home / ".claude").mkdir()
    (hub_paths.home / ".claude" / "settings.json").symlink_to(real)
    assert "a" in _load(hub_paths).servers


def test_a_projects_own_file_is_not_followed_through_a_link(hub_paths: HubPaths) -> None:
    real = hub_paths.write(hub_paths.home / "elsewhere.json", {"mcpServers": {"a": _demo()}})
    (hub_paths.project / ".mcp.json").symlink_to(real)
    cfg = _load(hub_paths)
    assert "a" not in cfg.servers
    assert _issues_of(cfg, hub_paths.project / ".mcp.json")[0].startswith(
        "not read: a symbolic link"
    )


# --- files planted by another user ------------------------------------------------------------


@pytest.fixture
def planted(hub_paths: HubPaths, tmp_path: Path) -> Iterator[dict[str, Path]]:
    """parent/project (no repository); the user's own ``github`` server in ~/.claude.json;
    a ``github`` server in parent/.mcp.json that leaves a marker when it runs."""
    parent = tmp_path / "parent"
    project = parent / "project"
    project.mkdir(parents=True)
    marker = tmp_path / "planted-ran"
    hub_paths.write(hub_paths.home / ".claude.json", {"mcpServers": {"github": _demo()}})
    file = hub_paths.write(parent / ".mcp.json", {"mcpServers": {"github": _marker(marker)}})
    yield {"parent": parent, "project": project, "file": file, "marker": marker}
    os.chmod(parent, 0o755)


def _plant_as_other(planted: dict[str, Path], how: str) -> None:
    if how == "file owned by another user":
        os.chown(planted["file"], OTHER_UID, OTHER_UID)
    elif how == "folder writable by others":
        os.chmod(planted["parent"], 0o757)
    elif how == "folder writable by its group":
        os.chmod(planted["parent"], 0o775)
    else:  # folder owned by another user
        os.chown(planted["parent"], OTHER_UID, OTHER_UID)


PLANTINGS = (
    "file owned by another user",
    "folder writable by others",
    "folder writable by its group",
    "folder owned by another user",
)


@posix_root
@pytest.mark.parametrize("how", PLANTINGS)
def test_a_planted_mcp_json_is_never_read_and_the_users_own_server_wins(
    hub_paths: HubPaths, planted: dict[str, Path], how: str
) -> None:
    _plant_as_other(planted, how)
    cfg = _load(hub_paths, planted["project"], trust_project=["github"])
    assert cfg.servers["github"].scope == "user", cfg.servers["github"]
    assert cfg.servers["github"].usable
    problems = _issues_of(cfg, planted["file"])
    assert len(problems) == 1 and problems[0].startswith("not read as configuration"), cfg.issues
    assert str(planted["file"]) not in cfg.sources
    with Hub(cfg) as hub:
        assert hub.call_tool("mcp__github__add", {"a": 1, "b": 2}, timeout=10).text == "3"
        assert any(i.source == str(planted["file"]) for i in hub.issues)
    assert not planted["marker"].exists()


@posix_root
def test_a_file_of_another_user_inside_the_project_is_not_read(hub_paths: HubPaths) -> None:
    file = hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"a": _demo()}})
    local = hub_paths.write(
        hub_paths.project / ".claude" / "settings.local.json", {"mcpServers": {"b": _demo()}}
    )
    os.chown(file, OTHER_UID, OTHER_UID)
    os.chown(local, OTHER_UID, OTHER_UID)
    cfg = _load(hub_paths)
    assert "a" not in cfg.servers and "b" not in cfg.servers
    assert _issues_of(cfg, file) and _issues_of(cfg, local)


@posix_root
def test_a_users_file_in_a_sticky_shared_folder_is_read(
    hub_paths: HubPaths, planted: dict[str, Path]
) -> None:
    os.chmod(planted["parent"], 0o1777)  # like /tmp: others cannot replace our file
    cfg = _load(hub_paths, planted["project"])
    assert str(planted["file"]) in cfg.sources and _issues_of(cfg, planted["file"]) == []


@posix_root
def test_a_root_owned_file_is_read(hub_paths: HubPaths, planted: dict[str, Path]) -> None:
    assert planted["file"].stat().st_uid == 0
    cfg = _load(hub_paths, planted["project"])
    assert str(planted["file"]) in cfg.sources


# --- trusting a project stops at its root -----------------------------------------------------


def test_trusting_a_project_does_not_reach_files_above_it(
    hub_paths: HubPaths, planted: dict[str, Path]
) -> None:
    hub_paths.write(planted["project"] / ".mcp.json", {"mcpServers": {"own": _demo()}})
    hub_paths.write(planted["file"], {"mcpServers": {"up": _marker(planted["marker"])}})
    cfg = _load(hub_paths, planted["project"], trust_project=True)
    assert cfg.servers["own"].usable
    up = cfg.servers["up"]
    assert not up.usable and "above the project root" in (up.disabled_reason or "")
    with Hub(cfg) as hub:
        hub.connect_all()
    assert not planted["marker"].exists()
    named = _load(hub_paths, planted["project"], trust_project=["up"])
    assert named.servers["up"].usable  # trust by name still reaches it


def test_inside_a_repository_trust_covers_the_walk_up_to_its_root(hub_paths: HubPaths) -> None:
    (hub_paths.project / ".git").mkdir()
    deeper = hub_paths.project / "sub"
    deeper.mkdir()
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"top": _demo()}})
    assert _load(hub_paths, deeper).servers["top"].usable


# --- an "always" answer never writes through a link -------------------------------------------

CANARY = "sk-canary-never-copied"


def _always(asked: list[str]) -> Callable[[Any, Any], str]:
    def handler(tool: Any, args: Any) -> str:
        asked.append(tool.name)
        return "always"

    return handler


@pytest.mark.parametrize("link", ["settings.local.json", ".claude"])
def test_an_always_answer_never_writes_through_a_link(
    hub_paths: HubPaths, tmp_path: Path, link: str, caplog: pytest.LogCaptureFixture
) -> None:
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": _demo()}})
    outside = tmp_path / "outside"
    secret = hub_paths.write(outside / "settings.local.json", {"apiKey": CANARY})
    before = secret.read_bytes()
    if link == ".claude":
        (hub_paths.project / ".claude").symlink_to(outside, target_is_directory=True)
    else:
        (hub_paths.project / ".claude").mkdir()
        (hub_paths.project / ".claude" / "settings.local.json").symlink_to(secret)
    asked: list[str] = []
    caplog.set_level(logging.WARNING, logger="mcp_lite.hub")
    with Hub.from_config(
        hub_paths.project,
        trust_project=True,
        permission_handler=_always(asked),
        user_dir=hub_paths.home,
        managed_path=hub_paths.managed,
        managed_settings_path=hub_paths.managed.with_name("managed-settings.json"),
    ) as hub:
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 2}, timeout=10).text == "3"
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 3}, timeout=10).text == "4"
    assert asked == ["mcp__demo__add"]  # remembered in memory
    assert secret.read_bytes() == before  # the outside file is untouched
    assert sorted(p.name for p in outside.iterdir()) == ["settings.local.json"]
    for path in hub_paths.project.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert CANARY not in path.read_text(errors="replace"), path
    assert any("could not save the permission" in r.getMessage() for r in caplog.records)


def test_an_always_answer_is_still_saved_into_a_real_folder(hub_paths: HubPaths) -> None:
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": _demo()}})
    asked: list[str] = []
    with Hub.from_config(
        hub_paths.project,
        trust_project=True,
        permission_handler=_always(asked),
        user_dir=hub_paths.home,
        managed_path=hub_paths.managed,
        managed_settings_path=hub_paths.managed.with_name("managed-settings.json"),
    ) as hub:
        hub.call_tool("mcp__demo__add", {"a": 1, "b": 2}, timeout=10)
    local = hub_paths.project / ".claude" / "settings.local.json"
    assert json.loads(local.read_text()) == {"permissions": {"allow": ["mcp__demo__add"]}}
    assert local.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in local.parent.iterdir()] == ["settings.local.json"]  # no temp left
