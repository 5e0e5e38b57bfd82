"""MCP Apps (``io.modelcontextprotocol/ui``) for a host without a UI, sans-IO: a tool's ``ui://``
resource and its visibility (``"model"``, ``"app"``), so a host keeps app-only tools from the
model (see docs/explanation/protocol.md, "Extensions").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "UI_EXTENSION",
    "UI_MIME_TYPE",
    "ToolUi",
    "tool_ui",
    "visible_to",
]

UI_EXTENSION = "io.modelcontextprotocol/ui"
UI_MIME_TYPE = "text/html;profile=mcp-app"
_DEFAULT_VISIBILITY = ("model", "app")
_FLAT_KEY = "ui/resourceUri"  # before _meta.ui (ext-apps' RESOURCE_URI_META_KEY)


@dataclass(frozen=True)
class ToolUi:
    """A tool's ``_meta.ui``: the ``ui://`` resource of its app (``None`` for an app-only
    helper tool without one) and who may call it (``"model"``, ``"app"``)."""

    resource_uri: str | None = None
    visibility: tuple[str, ...] = _DEFAULT_VISIBILITY


def tool_ui(meta: Any) -> ToolUi | None:
    """The ``ToolUi`` of a tool's ``_meta``, or None when it has no UI metadata."""
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    flat = meta.get(_FLAT_KEY)
    if not isinstance(ui, Mapping):
        return ToolUi(resource_uri=flat) if isinstance(flat, str) else None
    uri = ui.get("resourceUri")
    if not isinstance(uri, str):
        uri = flat if isinstance(flat, str) else None
    raw = ui.get("visibility")
    # An unreadable visibility keeps the default: dropping "model" is a server's explicit act.
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        visibility = tuple(raw)
    else:
        visibility = _DEFAULT_VISIBILITY
    return ToolUi(resource_uri=uri, visibility=visibility)


def visible_to(meta: Any, audience: str) -> bool:
    """May ``audience`` (``"model"`` or ``"app"``) call the tool with this ``_meta``?"""
    ui = tool_ui(meta)
    return ui is None or audience in ui.visibility
