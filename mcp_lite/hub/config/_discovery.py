"""Where the configuration lives, found the way Claude Code finds it (project, user, plugin and
managed files), and what the settings files say beyond servers (managed policy, permission rules);
see docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from . import _sources as src
from ._entries import ConfigIssue, HubConfig
from .policy import ServerPolicy, policy_from_settings, settings_rules

__all__ = ["Places", "apply_settings", "default_managed_settings_paths", "discover"]


@dataclass
class Places:
    """Every file ``load_config`` reads, found from the project directory."""

    project: Path
    root: Path
    claude_json: Path
    user_settings: Path
    mcp_json: list[Path] = field(default_factory=list)
    project_settings: list[Path] = field(default_factory=list)
    local_settings: list[Path] = field(default_factory=list)
    plugins: list[Path] = field(default_factory=list)
    above_root: list[Path] = field(default_factory=list)
    """The ``mcp_json`` files found above ``root`` (outside a repository, in the parents of
    the project): read, but trusting the project does not cover them."""

    @property
    def local_settings_file(self) -> Path:
        """Where an "always allow" answer is saved: the nearest existing
        ``.claude/settings.local.json``, else the one at the project root."""
        existing = [p for p in self.local_settings if p.is_file()]
        return existing[-1] if existing else self.root / ".claude" / "settings.local.json"


def repository_root(start: Path) -> Path | None:
    """The nearest directory from ``start`` up holding ``.git`` (a directory, or a file in a
    worktree), or None."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def discover(
    project_dir: str | os.PathLike[str],
    user_dir: str | os.PathLike[str] | None,
    plugins_dir: str | os.PathLike[str] | None,
    environ: Mapping[str, str],
) -> Places:
    """Find the files of one project (see the module docstring)."""
    project = Path(project_dir).expanduser().absolute()
    repo = repository_root(project)
    root = repo or project
    if user_dir is not None:
        claude_json, settings_dir = Path(user_dir) / ".claude.json", Path(user_dir) / ".claude"
    elif environ.get("CLAUDE_CONFIG_DIR"):
        settings_dir = Path(environ["CLAUDE_CONFIG_DIR"]).expanduser()
        claude_json = settings_dir / ".claude.json"
    else:
        claude_json, settings_dir = Path.home() / ".claude.json", Path.home() / ".claude"
    chain = [project]
    for folder in project.parents:
        if repo is not None and repo not in (folder, *folder.parents):
            break
        chain.append(folder)
    folders = [root, project] if root != project else [project]
    above_root = [f / ".mcp.json" for f in project.parents if f in chain and f != root]
    places = Places(
        project=project,
        root=root,
        claude_json=claude_json,
        user_settings=settings_dir / "settings.json",
        # Anything there (a link, a FIFO...) is listed: reading it says why it is refused.
        mcp_json=[f / ".mcp.json" for f in reversed(chain) if os.path.lexists(f / ".mcp.json")],
        project_settings=[f / ".claude" / "settings.json" for f in folders],
        local_settings=[f / ".claude" / "settings.local.json" for f in folders],
    )
    places.above_root = [p for p in above_root if p in places.mcp_json]
    if plugins_dir is not None:
        base = Path(plugins_dir).expanduser()
        if base.is_dir():
            places.plugins = sorted(p / ".mcp.json" for p in base.iterdir() if p.is_dir())
            places.plugins = [p for p in places.plugins if os.path.lexists(p)]
    return places


def default_managed_settings_paths(platform: str | None = None) -> list[Path]:
    """``managed-settings.json`` beside each of ``default_managed_paths()``."""
    return [p.with_name("managed-settings.json") for p in src.default_managed_paths(platform)]


def apply_settings(
    result: HubConfig,
    places: Places,
    managed_settings: Path | None,
    approvals: tuple[bool, set[str], set[str]],
    issue: Callable[[ConfigIssue], None],
) -> None:
    """Read the managed policy and every scope's permission rules into ``result``, and
    disable the servers the policy blocks.

    Deny rules are taken from every file. Allow rules from files inside the project
    (``.claude/settings*.json``) count only for servers the user trusts (``trust_project``
    or their own approvals): a project could otherwise ship rules allowing its own tools.
    """

    def read(path: Path, in_project: bool = False) -> Any:
        data, error = src.read_json(path, in_project=in_project)
        if error is not None:
            issue(ConfigIssue(str(path), None, error))
        return data

    documents: list[tuple[Path, Any, bool]] = []  # (file, data, inside the project)
    if managed_settings is not None:
        data = read(managed_settings)
        if data is not None:
            try:
                policy = policy_from_settings(data, str(managed_settings))
            except ConfigError as exc:
                issue(ConfigIssue(str(managed_settings), None, str(exc)))
                # A broken policy must fail closed: nothing but in-process servers runs.
                policy = ServerPolicy([], None, f"{managed_settings} (unreadable policy)")
            if policy is not None:
                result.policies.append(policy)
            documents.append((managed_settings, data, False))
    documents.append((places.user_settings, read(places.user_settings), False))
    for path in (*places.project_settings, *places.local_settings):
        documents.append((path, read(path, in_project=True), True))
    everything, trusted, _ = approvals
    for path, data, inside in documents:
        allow, deny, problems = settings_rules(data, str(path))
        for problem in problems:
            issue(ConfigIssue(str(path), None, problem))
        if inside and not everything:
            allow = [r for r in allow if _rule_server(r) in trusted]
        result.allow_rules.extend(allow)
        result.deny_rules.extend(deny)
    result.local_settings = places.local_settings_file
    block(result, result.policies)


def _rule_server(rule: str) -> str:
    return rule[5:].partition("__")[0]


def block(result: HubConfig, policies: list[ServerPolicy]) -> None:
    """Disable every entry a policy blocks, its reason naming the policy."""
    for entry in result.servers.values():
        config = entry.config
        if config is None:
            continue
        target = entry.target()
        for policy in policies:
            reason = policy.blocked_target(entry.name, str(config.type), target)
            if reason is not None:
                entry.disabled_reason = reason
                break
