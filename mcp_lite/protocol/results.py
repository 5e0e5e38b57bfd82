"""``CallToolResult`` and its ``Content`` blocks: read straight from the JSON, pydantic on demand.

A tool call is the hot path of a client, and the first one of a short script used to pay for
importing pydantic and building models (~100 ms) and every one for validating (~10 µs). These
two classes keep the wire dict they were made from and read their fields from it; checking
that the dict has the right shape is a few type tests. pydantic loads only for a feature only
a model has: ``model_dump()``, ``model_dump_json()``, ``model_json_schema()``, ``==``,
``model_copy()``, an embedded resource's ``ResourceContents``, or a dict of unusual shape (a
snake_case key, a value pydantic would coerce or reject — such a dict goes through pydantic
itself, so the result is exactly what the model would hold).

What each pydantic feature does is delegated to a "twin", the pydantic model of the same
name in ``result_models`` (the model these classes used to be), built from the wire dict on
each use: a dump is exactly the model's dump. ``isinstance(x, CallToolResult)`` holds for
every result; a pydantic model or ``TypeAdapter`` can hold these classes as fields (their
core schema is the twin's).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from .._accel import plain_shape
from ..errors import RemoteProtocolError, ToolError

if TYPE_CHECKING:
    from pydantic import BaseModel, GetCoreSchemaHandler
    from pydantic_core import CoreSchema

    from .types import ResourceContents

__all__ = ["CallToolResult", "Content", "tool_result"]

W = TypeVar("W", bound="WireObject")


def _field(key: str, default: Any = None) -> Any:
    """A field read from the object's wire dict under its wire key (``default`` when the
    key is absent) and written back there. A property: the cheapest attribute Python has
    after a slot, and the dict stays the one source of truth for the pydantic twin."""

    def get(self: WireObject) -> Any:
        return self._wire.get(key, default)

    def set(self: WireObject, value: Any) -> None:
        self._wire[key] = value

    return property(get, set)


# --- shape checks: True when pydantic would take the value exactly as it is -----------------

# ``plain_shape`` (a kernel) checks a dict against one of these tables: the exact types each
# known key may hold (one ``type()`` test, no call), ``None`` for any value, a tuple for a
# list of objects (their table, their Python names, a key they must have), or a function
# for what is rare. The Python names (``mime_type``...) are left to pydantic, which accepts
# them too. Unknown keys are kept.
_STR = frozenset({str})
_OPT_STR = frozenset({str, type(None)})
_OPT_DICT = frozenset({dict, type(None)})
_BOOL = frozenset({bool})


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


# --- the common base ----------------------------------------------------------------------


class _ModelAPI(type):
    """Class-level reads of the rest of the model API (``model_fields``...) go to the twin."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("model_"):
            return getattr(cls._twin_class(), name)
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")


class WireObject(metaclass=_ModelAPI):
    """A wire object backed by its JSON dict, with the pydantic model API on demand.

    Subclasses name their twin (the pydantic model in ``result_models``), their fields
    (Python name -> wire key, in the model's order) and their shape check (``plain_shape``).
    """

    __slots__ = ("__weakref__", "_wire")
    _twin_name: ClassVar[str]
    _fields: ClassVar[dict[str, str]]  # Python name -> wire key
    _wire_keys: ClassVar[frozenset[str]]

    _wire: dict[str, Any]

    def __init__(self, **data: Any) -> None:
        self._set_wire(self._checked(data, copy=True))

    def _set_wire(self, wire: dict[str, Any]) -> None:
        self._wire = wire

    # --- construction ----------------------------------------------------------------------

    @staticmethod
    def _shape_ok(value: Any) -> bool:
        """``value`` can be used as it is (see ``plain_shape``)."""
        raise NotImplementedError

    @classmethod
    def _checked(cls, raw: Any, *, copy: bool) -> dict[str, Any]:
        """The wire dict for ``raw``: ``raw`` itself (``copy``: a copy) when its shape is
        plain, else what pydantic makes of it (raises ``pydantic.ValidationError``)."""
        if copy and type(raw) is dict:
            raw = cls._copied(raw)
        if cls._shape_ok(raw):
            return raw  # type: ignore[no-any-return]
        twin = cls._twin_class().model_validate(raw)
        return twin.model_dump(by_alias=True, exclude_unset=True)

    @classmethod
    def _copied(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """A copy that a setter may write to without touching the caller's dict, with
        objects of these classes in it as their dicts (the models accepted instances)."""
        return dict(raw)

    @classmethod
    def _trusted(cls: type[W], wire: dict[str, Any]) -> W:
        obj = cls.__new__(cls)
        obj._set_wire(wire)
        return obj

    @classmethod
    def _twin_class(cls) -> type[BaseModel]:
        from . import result_models

        twin: type[BaseModel] = getattr(result_models, cls._twin_name)
        return twin

    def _twin_input(self) -> dict[str, Any]:
        return self._wire

    def _twin(self) -> BaseModel:
        """The pydantic model holding the same values (built now; it is not kept)."""
        return self._twin_class().model_validate(self._twin_input())

    @classmethod
    def _from_twin(cls: type[W], twin: BaseModel) -> W:
        return cls._trusted(twin.model_dump(by_alias=True, exclude_unset=True))

    # --- the pydantic model API, delegated -------------------------------------------------

    @classmethod
    def model_validate(cls: type[W], obj: Any, **kwargs: Any) -> W:
        """Like ``BaseModel.model_validate``: an instance as is, a dict checked (raises
        ``pydantic.ValidationError`` when invalid)."""
        if isinstance(obj, cls) and not kwargs:
            return obj
        if kwargs or not isinstance(obj, dict):  # attributes, strict mode...: pydantic's own
            return cls._from_twin(cls._twin_class().model_validate(obj, **kwargs))
        return cls._trusted(cls._checked(obj, copy=True))

    @classmethod
    def model_validate_json(cls: type[W], json_data: str | bytes, **kwargs: Any) -> W:
        return cls._from_twin(cls._twin_class().model_validate_json(json_data, **kwargs))

    @classmethod
    def model_construct(cls: type[W], _fields_set: set[str] | None = None, **values: Any) -> W:
        return cls._from_twin(cls._twin_class().model_construct(_fields_set, **values))

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return cls._twin_class().model_json_schema(*args, **kwargs)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return self._twin().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        return self._twin().model_dump_json(**kwargs)

    def model_copy(self: W, *, update: dict[str, Any] | None = None, deep: bool = False) -> W:
        return self._from_twin(self._twin().model_copy(update=update, deep=deep))

    @property
    def model_extra(self) -> dict[str, Any]:
        """The fields no model declares, by their wire key (a newer revision's, a server's own)."""
        return {k: v for k, v in self._wire.items() if k not in self._wire_keys}

    @property
    def model_fields_set(self) -> set[str]:
        return self._twin().model_fields_set

    def to_wire(self) -> dict[str, Any]:
        """The JSON object for the wire (camelCase, ``None`` fields left out)."""
        return self._twin().model_dump(by_alias=True, exclude_none=True, mode="json")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """As a field of a pydantic model: validated and serialized as the twin would be."""
        from pydantic_core import core_schema

        twin = handler.generate_schema(cls._twin_class())
        from_twin = core_schema.no_info_after_validator_function(cls._from_twin, twin)
        return core_schema.json_or_python_schema(
            json_schema=from_twin,
            python_schema=core_schema.union_schema(
                [core_schema.is_instance_schema(cls), from_twin]
            ),
            serialization=core_schema.wrap_serializer_function_ser_schema(
                lambda value, serialize: serialize(value._twin()), schema=twin
            ),
        )

    # --- what a model instance also does ---------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        # Unknown wire fields read as attributes, as on the models (``extra="allow"``).
        try:
            wire = object.__getattribute__(self, "_wire")
        except AttributeError:
            raise AttributeError(name) from None
        if name in wire and name not in self._wire_keys:
            return wire[name]
        if name.startswith("model_"):  # the rest of the model API (model_fields...)
            return getattr(self._twin(), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _items(self) -> Iterator[tuple[str, Any]]:
        for name in self._fields:
            yield name, getattr(self, name)
        yield from self.model_extra.items()

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return self._items()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._items())
        return f"{type(self).__name__}({args})"

    def __str__(self) -> str:
        return " ".join(f"{k}={v!r}" for k, v in self._items())

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, WireObject)
        return self._twin() == other._twin()

    __hash__ = None  # type: ignore[assignment]  # mutable, like the models

    def __copy__(self: W) -> W:
        return self._trusted(dict(self._twin_input()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (self._trusted, (self._twin_input(),))


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
            from .types import ResourceContents

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


def _problems(exc: ValueError, whole: str = "the result") -> str:
    """What a ``ValidationError`` found, without the values (they may hold secrets);
    ``whole`` names the object itself when the problem is not in one of its fields."""
    errors = getattr(exc, "errors", None)
    if errors is None:
        return str(exc)
    found = errors(include_url=False, include_input=False)
    first = found[0]
    where = ".".join(str(part) for part in first["loc"]) or whole
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{where}: {first['msg']}{more}"
