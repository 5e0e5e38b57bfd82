"""``CallToolResult`` and its ``Content`` blocks, read straight from the JSON with pydantic on
demand, so a tool call, the client's hot path, neither imports pydantic nor validates models
(see docs/explanation/protocol.md, "Light objects").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from .._accel import plain_shape
from ..errors import RemoteProtocolError, ToolError
from ._light import _BOOL, _OPT_DICT, _OPT_STR, _STR, WireObject, _field, _problems

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._model import ResourceContents

__all__ = ["CallToolResult", "Content", "tool_result"]

# The shape tables of a content block and a result (``_light`` says how they are read).


def _resource_ok(value: Any) -> bool:
    return value is None or plain_shape(value, _RESOURCE_CHECKS, _RESOURCE_NAMES)


def _block_ok(value: Any) -> bool:
    return plain_shape(value, _CONTENT_CHECKS, _CONTENT_NAMES) and "type" in value


def _result_ok(value: Any) -> bool:
    return plain_shape(value, _RESULT_CHECKS, _RESULT_NAMES)


_RESOURCE_CHECKS: dict[str, Any] = {
    "uri": _STR,
    "mimeType": _OPT_STR,
    "text": _OPT_STR,
    "blob": _OPT_STR,
    "_meta": _OPT_DICT,
}
_RESOURCE_NAMES = frozenset({"mime_type", "meta"})
_CONTENT_CHECKS: dict[str, Any] = {
    "type": _STR,
    "text": _OPT_STR,
    "data": _OPT_STR,
    "mimeType": _OPT_STR,
    "uri": _OPT_STR,
    "name": _OPT_STR,
    "resource": _resource_ok,
    "annotations": _OPT_DICT,
    "_meta": _OPT_DICT,
}
_CONTENT_NAMES = frozenset({"mime_type", "meta"})
_RESULT_CHECKS: dict[str, Any] = {
    "content": (_CONTENT_CHECKS, _CONTENT_NAMES, "type"),  # a list of content blocks
    "structuredContent": None,
    "isError": _BOOL,
    "_meta": _OPT_DICT,
}
_RESULT_NAMES = frozenset({"structured_content", "is_error", "meta"})


class Content(WireObject):
    """One content block: ``text``, ``image``, ``audio``, ``resource_link``, ``resource`` or newer.

    Fields present depend on ``type``: ``text``; ``data`` + ``mime_type`` (base64, image and
    audio); ``uri``/``name`` (resource_link); ``resource`` (embedded ``ResourceContents``, a
    pydantic model made on first access).
    """

    __slots__ = ()
    _twin_name = "Content"
    _fields: ClassVar[dict[str, str]] = {
        "type": "type",
        "text": "text",
        "data": "data",
        "mime_type": "mimeType",
        "uri": "uri",
        "name": "name",
        "resource": "resource",
        "annotations": "annotations",
        "meta": "_meta",
    }
    _wire_keys = frozenset(_fields.values())
    _shape_ok = staticmethod(_block_ok)

    type: str = _field("type", "")
    text: str | None = _field("text")
    data: str | None = _field("data")
    mime_type: str | None = _field("mimeType")
    uri: str | None = _field("uri")
    name: str | None = _field("name")
    annotations: dict[str, Any] | None = _field("annotations")
    meta: dict[str, Any] | None = _field("_meta")

    @property
    def resource(self) -> ResourceContents | None:
        value = self._wire.get("resource")
        if type(value) is dict:  # the model, once; kept so that changes to it stay
            from ._model import ResourceContents

            value = self._wire["resource"] = ResourceContents.model_validate(value)
        return value

    @resource.setter
    def resource(self, value: ResourceContents | None) -> None:
        self._wire["resource"] = value


class CallToolResult(WireObject):
    """The result of ``tools/call``.

    ``text`` joins the text blocks; ``structured_content`` is the JSON value when the tool
    declared an ``outputSchema``; ``is_error`` is the tool's own failure flag. The pydantic
    model API (``model_dump()``, ``model_validate()``...) works as on the model it mirrors.
    """

    __slots__ = ("_blocks", "_text_json")
    _twin_name = "CallToolResult"
    _fields: ClassVar[dict[str, str]] = {
        "content": "content",
        "structured_content": "structuredContent",
        "is_error": "isError",
        "meta": "_meta",
    }
    _wire_keys = frozenset(_fields.values())
    _shape_ok = staticmethod(_result_ok)

    structured_content: Any = _field("structuredContent")
    is_error: bool = _field("isError", False)
    meta: dict[str, Any] | None = _field("_meta")

    # ``_blocks``: the ``Content`` objects, made on first access of ``content``.
    # ``_text_json``: the text parsed as JSON, set by the client when the tool declares an
    # ``outputSchema`` but sent only text (older servers); see ``data``.
    _blocks: list[Content] | None
    _text_json: Any

    def _set_wire(self, wire: dict[str, Any]) -> None:
        self._wire = wire
        self._blocks = None
        self._text_json = None

    @classmethod
    def _copied(cls, raw: dict[str, Any]) -> dict[str, Any]:
        wire = dict(raw)
        content = wire.get("content")
        if type(content) is list:
            wire["content"] = [_block_copy(block) for block in content]
        return wire

    @property
    def content(self) -> list[Content]:
        blocks = self._blocks
        if blocks is None:
            blocks = self._blocks = [Content._trusted(b) for b in self._wire.get("content", ())]
        return blocks

    @content.setter
    def content(self, value: list[Content]) -> None:
        self._blocks = value
        self._wire["content"] = value

    @property
    def text(self) -> str:
        if self._blocks is None:  # straight from the dicts
            blocks = self._wire.get("content", ())
            return "\n".join(b["text"] for b in blocks if b.get("text") is not None)
        return "\n".join(block.text for block in self._blocks if block.text is not None)

    @property
    def data(self) -> Any:
        """The tool's structured result: ``structured_content``, or, when the tool declares
        an ``outputSchema`` and sent only text, that text parsed as JSON (what users of other
        MCP clients expect). ``None`` when there is neither."""
        structured = self._wire.get("structuredContent")
        if structured is not None:
            return structured
        return self._text_json

    def raise_for_error(self) -> CallToolResult:
        """Raise ``ToolError`` when the tool reported failure; return self otherwise."""
        if self.is_error:
            raise ToolError(f"tool reported an error: {self.text or '(no text)'}"[:2000], self)
        return self

    # --- the twin -----------------------------------------------------------------------------

    def _twin_input(self) -> dict[str, Any]:
        blocks = self._blocks
        if blocks is None:
            return self._wire
        content = [b._twin_input() if isinstance(b, Content) else b for b in blocks]
        return {**self._wire, "content": content}

    def _twin(self) -> BaseModel:
        twin = super()._twin()
        if "content" not in self._wire:  # the default list, perhaps appended to: still unset
            twin.__pydantic_fields_set__.discard("content")
        twin._text_json = self._text_json  # type: ignore[attr-defined]  # compared by ==
        return twin

    def model_copy(
        self, *, update: dict[str, Any] | None = None, deep: bool = False
    ) -> CallToolResult:
        copied = super().model_copy(update=update, deep=deep)
        copied._text_json = self._text_json
        return copied

    def __copy__(self) -> CallToolResult:
        copied = super().__copy__()
        copied._text_json = self._text_json
        return copied

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_result, (self._twin_input(), self._text_json))


def _block_copy(block: Any) -> Any:
    if isinstance(block, Content):
        return dict(block._wire)
    return dict(block) if type(block) is dict else block


def _restore_result(wire: dict[str, Any], text_json: Any) -> CallToolResult:
    result = CallToolResult._trusted(wire)
    result._text_json = text_json
    return result


def tool_result(raw: dict[str, Any], *, copy: bool = False) -> CallToolResult:
    """The ``CallToolResult`` for a ``tools/call`` result dict from a server.

    ``copy``: the dict is shared (kept elsewhere too): the result gets its own.

    Raises:
        RemoteProtocolError: the dict is not a valid result (which field, and why).
    """
    if not copy and plain_shape(raw, _RESULT_CHECKS, _RESULT_NAMES):  # the common case
        return CallToolResult._trusted(raw)
    try:
        return CallToolResult._trusted(CallToolResult._checked(raw, copy=copy))
    except ValueError as exc:  # pydantic.ValidationError
        raise RemoteProtocolError(
            f"the server sent an invalid tools/call result: {_problems(exc)}"
        ) from None
