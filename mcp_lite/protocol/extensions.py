"""Extensions negotiated with settings (SEP-2133) in both eras, sans-IO: each side's
``capabilities.extensions`` map, carried unchanged, and the one rule that a feature built on an
extension is used only when the server declared it (``require``) (see
docs/explanation/protocol.md, "Extensions").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, LocalProtocolError

__all__ = ["check_extensions", "declared", "merge", "require"]


def check_extensions(value: Any, where: str = "extensions") -> dict[str, dict[str, Any]]:
    """``value`` as ``{id: settings}`` (a copy), or ``ConfigError`` naming what is wrong:
    ids are non-empty strings, settings are JSON objects (JSON values all the way down)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where} must be a mapping of extension id to a settings object, "
            f"not {type(value).__name__}"
        )
    out: dict[str, dict[str, Any]] = {}
    for ext_id, settings in value.items():
        if not isinstance(ext_id, str) or not ext_id:
            raise ConfigError(
                f"{where}: an extension id must be a non-empty string, not {ext_id!r}"
            )
        if not isinstance(settings, Mapping):
            raise ConfigError(
                f"{where}[{ext_id!r}]: the settings must be a JSON object ({{}} for none), "
                f"not {type(settings).__name__}"
            )
        try:  # a JSON value throughout, copied so the caller's later edits do not leak in
            out[ext_id] = json.loads(json.dumps(dict(settings), allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}[{ext_id!r}]: the settings are not JSON ({exc})") from None
    return out


def merge(*layers: Mapping[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """The layers merged by id, a later layer's settings replacing an earlier one's whole."""
    out: dict[str, dict[str, Any]] = {}
    for layer in layers:
        if layer:
            out.update(layer)
    return out


def declared(capabilities: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What a peer's capabilities declare: ``{id: settings}``, ``{}`` when none. A value
    that is not an object (a server that wrote ``true``) still declares its id, with ``{}``."""
    raw = capabilities.get("extensions")
    if not isinstance(raw, dict):
        return {}
    return {
        k: (v if isinstance(v, dict) else {}) for k, v in raw.items() if isinstance(k, str) and k
    }


def require(capabilities: Mapping[str, Any], ext_id: str, server: str, doing: str = "") -> None:
    """Refuse a feature that needs ``ext_id`` when the server did not declare it.

    Raises:
        LocalProtocolError: naming the server, the extension and (``doing``) what needs it.
    """
    if ext_id not in declared(capabilities):
        raise LocalProtocolError(
            f"MCP server {server!r} does not declare the {ext_id!r} extension{doing}"
        )
