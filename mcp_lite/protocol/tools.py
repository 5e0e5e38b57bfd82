"""``Tool`` and ``ToolAnnotations`` (a ``tools/list`` entry), read straight from the JSON with
pydantic on demand, as ``results`` does for a tool call's result (see
docs/explanation/protocol.md, "Light objects").
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._accel import plain_shape
from ..errors import RemoteProtocolError
from ._light import _OPT_DICT, _OPT_STR, _STR, WireObject, _field, _problems
from .apps import ToolUi, tool_ui

__all__ = ["Tool", "ToolAnnotations", "validate_tools"]

_OPT_BOOL = frozenset({bool, type(None)})
_DICT = frozenset({dict})

_ANNOTATION_CHECKS: dict[str, Any] = {
    "title": _OPT_STR,
    "readOnlyHint": _OPT_BOOL,
    "destructiveHint": _OPT_BOOL,
    "idempotentHint": _OPT_BOOL,
    "openWorldHint": _OPT_BOOL,
}
_ANNOTATION_NAMES = frozenset(
    {"read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"}
)


def _annotations_ok(value: Any) -> bool:
    return plain_shape(value, _ANNOTATION_CHECKS, _ANNOTATION_NAMES)


def _optional_annotations_ok(value: Any) -> bool:
    return value is None or _annotations_ok(value)


def _icons_ok(value: Any) -> bool:
    return value is None or (type(value) is list and all(type(i) is dict for i in value))


_TOOL_CHECKS: dict[str, Any] = {
    "name": _STR,
    "title": _OPT_STR,
    "description": _OPT_STR,
    "inputSchema": _DICT,
    "outputSchema": _OPT_DICT,
    "annotations": _optional_annotations_ok,
    "icons": _icons_ok,
    "_meta": _OPT_DICT,
}
_TOOL_NAMES = frozenset({"input_schema", "output_schema", "meta"})
# The object-valued fields a copy gets its own of: the model made new ones too.
_COPIED_KEYS = ("inputSchema", "outputSchema", "annotations", "icons", "_meta")


def _tool_ok(value: Any) -> bool:
    return plain_shape(value, _TOOL_CHECKS, _TOOL_NAMES) and "name" in value


class ToolAnnotations(WireObject):
    """A tool's hints: ``title``, ``read_only_hint``, ``destructive_hint``,
    ``idempotent_hint``, ``open_world_hint`` (each ``None`` when the server left it out)."""

    __slots__ = ()
    _twin_name = "ToolAnnotations"
    _fields: ClassVar[dict[str, str]] = {
        "title": "title",
        "read_only_hint": "readOnlyHint",
        "destructive_hint": "destructiveHint",
        "idempotent_hint": "idempotentHint",
        "open_world_hint": "openWorldHint",
    }
    _wire_keys = frozenset(_fields.values())
    _shape_ok = staticmethod(_annotations_ok)

    title: str | None = _field("title")
    read_only_hint: bool | None = _field("readOnlyHint")
    destructive_hint: bool | None = _field("destructiveHint")
    idempotent_hint: bool | None = _field("idempotentHint")
    open_world_hint: bool | None = _field("openWorldHint")


class Tool(WireObject):
    """One tool a server offers. Fields the model does not declare (``execution``, a newer
    revision's) read as attributes and are in ``model_extra``."""

    __slots__ = ("_annotations",)
    _twin_name = "Tool"
    _fields: ClassVar[dict[str, str]] = {
        "name": "name",
        "title": "title",
        "description": "description",
        "input_schema": "inputSchema",
        "output_schema": "outputSchema",
        "annotations": "annotations",
        "icons": "icons",
        "meta": "_meta",
    }
    _wire_keys = frozenset(_fields.values())
    _shape_ok = staticmethod(_tool_ok)

    name: str = _field("name", "")
    title: str | None = _field("title")
    description: str | None = _field("description")
    output_schema: dict[str, Any] | None = _field("outputSchema")
    icons: list[dict[str, Any]] | None = _field("icons")
    meta: dict[str, Any] | None = _field("_meta")

    # ``_annotations``: the ``ToolAnnotations`` over the wire's annotations dict, made on
    # first access (so that ``tool.annotations is tool.annotations``, as on the model).
    _annotations: ToolAnnotations | None

    def _set_wire(self, wire: dict[str, Any]) -> None:
        self._wire = wire
        self._annotations = None

    @classmethod
    def _copied(cls, raw: dict[str, Any]) -> dict[str, Any]:
        wire = dict(raw)
        for key in _COPIED_KEYS:
            value = wire.get(key)
            if type(value) is dict:
                wire[key] = dict(value)
            elif type(value) is list:  # the icons
                wire[key] = [dict(item) if type(item) is dict else item for item in value]
            elif isinstance(value, WireObject):  # a ToolAnnotations given to the constructor
                wire[key] = dict(value._wire)
        return wire

    @property
    def input_schema(self) -> dict[str, Any]:
        # The spec requires one; a server that sent none reads as the model's default.
        schema = self._wire.get("inputSchema")
        return {"type": "object"} if schema is None else schema

    @input_schema.setter
    def input_schema(self, value: dict[str, Any]) -> None:
        self._wire["inputSchema"] = value

    @property
    def annotations(self) -> ToolAnnotations | None:
        value = self._wire.get("annotations")
        if value is None:
            return None
        made = self._annotations
        if made is None or made._wire is not value:
            made = self._annotations = ToolAnnotations._trusted(value)
        return made

    @annotations.setter
    def annotations(self, value: ToolAnnotations | dict[str, Any] | None) -> None:
        self._annotations = None
        self._wire["annotations"] = value._wire if isinstance(value, ToolAnnotations) else value

    @property
    def ui(self) -> ToolUi | None:
        """MCP Apps: the tool's ``_meta.ui`` (its ``ui://`` resource and who may call it:
        ``"model"``, ``"app"``), or None when it has none."""
        return tool_ui(self._wire.get("_meta"))

    @property
    def display_name(self) -> str:
        """``title``, else ``annotations.title``, else ``name`` (the spec's precedence)."""
        if self.title:
            return self.title
        annotations = self.annotations
        if annotations is not None and annotations.title:
            return annotations.title
        return self.name


def validate_tools(items: list[Any]) -> list[Tool]:
    """The ``Tool`` objects of a ``tools/list`` page (or all pages), each with its own copy
    of the server's dict (a cached list result may be read again).

    Raises:
        RemoteProtocolError: an entry is not a valid tool (which one, which field, and why).
    """
    tools = []
    for index, item in enumerate(items):
        try:
            tools.append(Tool._trusted(Tool._checked(item, copy=True)))
        except ValueError as exc:  # pydantic.ValidationError
            raise RemoteProtocolError(
                f"the server sent an invalid tool (tools/list entry {index}): "
                f"{_problems(exc, 'the entry')}"
            ) from None
    return tools
