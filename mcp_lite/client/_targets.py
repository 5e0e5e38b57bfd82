"""Naming a target for logs and errors (the npm package of ``npx pkg``, the module of
``python -m mod``, a URL's host, never a secret), and checking a config dict given as one."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from .._secrets import redact_url

__all__ = ["target_name", "validated_target"]


def validated_target(target: Mapping[str, Any]) -> Any:
    """A config dict checked by the Hub's validator, ``${VAR}`` expanded once (a dict the
    Hub built from its config already was: taken as is)."""
    from .._server_config import ServerTarget, validate_target

    return target if isinstance(target, ServerTarget) else validate_target(target)


def target_name(target: Any) -> str:
    """A name a person recognises, for logs and errors: the npm package of ``npx pkg``, the
    module of ``python -m mod``, the script of ``python path/server.py``, the program
    otherwise; the host (and port) of a URL. Never a URL's query, password or a header."""
    if isinstance(target, str):
        if "://" in target:
            return _url_name(target)
        return _command_name(target.split()) if target.strip() else "server"
    if isinstance(target, Sequence) and target:
        return _command_name([str(part) for part in target])
    if isinstance(target, Mapping):
        if target.get("name"):
            return str(target["name"])
        if target.get("url"):
            return _url_name(str(target["url"]))
        if target.get("command"):
            args = target.get("args") or []
            return _command_name([str(target["command"]), *(str(a) for a in args)])
        return "server"
    return str(getattr(target, "name", "server"))


def _url_name(url: str) -> str:
    host = urlsplit(url).netloc.rpartition("@")[2]  # never the user or password
    return host or redact_url(url)


# Launchers whose first non-option argument is the package to run.
_PACKAGE_RUNNERS = {"npx", "bunx", "pnpx", "uvx", "pipx", "dlx"}
_SCRIPT_RUNNERS = {"node", "deno", "bun", "ruby", "php", "perl", "java"}
# Options of the launchers above that take a value (skipped with it).
_VALUED_OPTIONS = {"-p", "--package", "--from", "--with", "--python", "-c", "--call", "--spec"}


def _command_name(argv: list[str]) -> str:
    """``npx -y @scope/pkg@1 stdio`` -> ``@scope/pkg``; ``python -m mod`` -> ``mod``;
    ``python path/server.py --db t.db`` -> ``server.py``; ``uv run srv.py`` -> ``srv.py``;
    ``mcp-server-time --tz UTC`` -> ``mcp-server-time``."""
    if not argv:
        return "server"
    program = os.path.basename(argv[0])
    rest = argv[1:]
    if program in ("uv", "pipx", "pnpm", "yarn", "npm", "bun", "deno") and rest[:1] in (
        ["run"],
        ["tool"],
        ["dlx"],
        ["exec"],
        ["x"],
    ):
        rest = rest[1:] if rest[:1] != ["tool"] else rest[2:]  # uv tool run X
        return _first_operand(rest, strip_version=True) or program
    if program in _PACKAGE_RUNNERS:
        return _first_operand(rest, strip_version=True) or program
    if re.fullmatch(r"python[0-9.]*|pypy[0-9.]*|py", program):
        if "-m" in rest and rest.index("-m") + 1 < len(rest):
            return rest[rest.index("-m") + 1]
        script = _first_operand(rest)
        return os.path.basename(script) if script else program
    if program in _SCRIPT_RUNNERS:
        script = _first_operand(rest)
        return os.path.basename(script) if script else program
    return program


def _first_operand(args: list[str], strip_version: bool = False) -> str | None:
    """The first argument that is not an option (nor an option's value)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg.startswith("-"):
            skip = arg in _VALUED_OPTIONS
            continue
        if strip_version:  # "@scope/pkg@1.2" -> "@scope/pkg", "pkg==1.0" -> "pkg"
            head, at, _ = arg[1:].partition("@")
            arg = (arg[0] + head) if at else arg
            arg = re.split(r"[=<>~]=|[<>]", arg)[0]
        return arg
    return None
